#!/usr/bin/env python3
"""The container's health check (the Dockerfile's HEALTHCHECK): asks the contextwm server in
the same container whether it is ready, through the standard grpc.health.v1.Health service,
and exits 0 when it reports contextwm.v1.ContextService SERVING, 1 otherwise (not listening,
still loading the model, the store unreachable, or draining at shutdown).

It reads the address the server reads, CONTEXTWM_HOST and CONTEXTWM_PORT, and needs nothing
beyond what contextwm installs (grpcio, grpcio-health-checking).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

# Readiness; "contextwm.v1.Liveness" would be liveness (SERVING whenever the port is open).
SERVICE = "contextwm.v1.ContextService"
TIMEOUT_SECONDS = 3.0


def target(environ: Mapping[str, str]) -> str:
    """The server's address as seen from inside its container: loopback when it listens on
    every interface."""
    host = environ.get("CONTEXTWM_HOST", "127.0.0.1")
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "[::1]"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{environ.get('CONTEXTWM_PORT', '50051')}"


def main() -> int:
    address = target(os.environ)
    # No proxy: Docker may hand a container HTTP_PROXY, which gRPC would otherwise follow.
    with grpc.insecure_channel(address, options=[("grpc.enable_http_proxy", 0)]) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE), timeout=TIMEOUT_SECONDS
            )
        except grpc.RpcError as exc:
            print(f"{address}: {exc.code().name}: {exc.details()}", file=sys.stderr)
            return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        print(f"{address}: {SERVICE} is {status}", file=sys.stderr)
        return 1
    print(f"{address}: {SERVICE} is {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
