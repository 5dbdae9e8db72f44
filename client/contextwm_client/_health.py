"""The standard gRPC health service, as much of it as `wait_ready` needs, without the
grpcio-health-checking package (the client depends on grpcio and protobuf only).

grpc.health.v1's HealthCheckRequest is one string field (1) and HealthCheckResponse one enum
field (1): on the wire they are exactly protobuf's StringValue and Int32Value.
"""

from __future__ import annotations

from typing import Protocol

from google.protobuf.wrappers_pb2 import Int32Value, StringValue

WATCH = "/grpc.health.v1.Health/Watch"
# The server reports this name SERVING once it serves calls (readiness); see README "As a
# sidecar" for the other names.
READINESS = "contextwm.v1.ContextService"
SERVING = 1  # HealthCheckResponse.ServingStatus.SERVING

# Named for what they carry here.
HealthCheckRequest = StringValue
HealthCheckResponse = Int32Value


class _Cancellable(Protocol):
    """A sync or asyncio streaming call, as far as `stop` needs it."""

    def cancel(self) -> bool: ...


def stop(call: _Cancellable) -> None:
    """Cancels a watch of the health service (a no-op once it has ended)."""
    call.cancel()
