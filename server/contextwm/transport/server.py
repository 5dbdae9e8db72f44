"""Builds the gRPC server: our servicer behind the interceptors, health and reflection."""

from __future__ import annotations

import functools
from concurrent import futures
from typing import TYPE_CHECKING, cast

import grpc
from contextwm_client.v1 import contextwm_pb2_grpc as pb_grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from contextwm.conversations.events import EventHub
from contextwm.observability.audit import AuditLog
from contextwm.tls_files import ServerTls
from contextwm.transport.access import CallAccess
from contextwm.transport.interceptors import CallObserver, ErrorInterceptor
from contextwm.transport.readiness import LIVENESS, READINESS, SERVICE_NAME, LateServicer
from contextwm.transport.servicer import ContextServicer

if TYPE_CHECKING:  # OpenTelemetry is loaded only when tracing is on
    from opentelemetry.trace import Tracer

# Health Watch streams served at once; more wait for one to end.
HEALTH_WATCHERS = 16


@functools.cache
def _health_watch_pool() -> futures.ThreadPoolExecutor:
    """One pool for the process: the library keeps it on HealthServicer.Watch, a function of
    the class, so a pool per server would be every server's (and a stopped server's pool shut
    under the others)."""
    return futures.ThreadPoolExecutor(
        max_workers=HEALTH_WATCHERS, thread_name_prefix="contextwm-health"
    )


class GrpcServer:
    """A gRPC server that can listen before the engine exists: `bind`, `start` (health
    answers, ContextService calls are refused UNAVAILABLE), then `serve` once the engine is
    built (ready)."""

    def __init__(
        self,
        *,
        workers: int,
        max_message_bytes: int,
        observe: CallObserver | None = None,
        audit: AuditLog | None = None,
        tracer: Tracer | None = None,
        trace_content: bool = False,
    ) -> None:
        """Args:
        observe: told of every finished ContextService call (the metrics), if given.
        audit: where key changes, refused calls and deletions are recorded, if given.
        tracer: where a span per ContextService call goes (`transport.tracing`), if tracing
            is on; None installs nothing and loads nothing of OpenTelemetry.
        trace_content: the spans also carry query texts and records.
        """
        self._interceptor = ErrorInterceptor(observe, audit)
        interceptors: list[grpc.ServerInterceptor] = [self._interceptor]  # type: ignore[type-arg]
        if tracer is not None:
            from contextwm.transport.tracing import TracingInterceptor

            # First: its span holds the whole call, the key check and the final status too.
            interceptors.insert(0, TracingInterceptor(tracer, content=trace_content))
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="contextwm-rpc"),
            interceptors=interceptors,
            options=[
                ("grpc.max_receive_message_length", max_message_bytes),
                ("grpc.max_send_message_length", max_message_bytes),
                # A restarted server must be able to take its port back at once.
                ("grpc.so_reuseport", 0),
            ],
        )
        self._events: EventHub | None = None
        self._servicer = LateServicer()
        # Duck-typed: it has a method for every RPC name the registration looks up.
        servicer = cast(pb_grpc.ContextServiceServicer, self._servicer)
        pb_grpc.add_ContextServiceServicer_to_server(servicer, self._server)
        # Health Watch streams take a thread each, from a pool of their own, so that they never
        # hold the workers calls need. (The library's default, non-blocking Watch wedges the
        # whole server when one watch ends as another begins: grpc/grpc#43403.)
        self._health = health.HealthServicer(
            experimental_non_blocking=False, experimental_thread_pool=_health_watch_pool()
        )
        # The library starts with "" SERVING: not before the engine is ready.
        self._health.set(LIVENESS, health_pb2.HealthCheckResponse.SERVING)
        for name in READINESS:
            self._health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self._server
        )

    def bind(self, address: str, tls: ServerTls | None = None) -> int:
        """Binds "host:port" (port 0 picks a free one) or "unix:/path"; returns the port.

        Args:
            address: Where to listen.
            tls: The certificate, key and client CA to serve TLS with (mutual TLS with a
                client CA: a client without a certificate it signed is refused in the
                handshake); None: plaintext.

        Raises:
            OSError: The address cannot be bound.
        """
        try:
            if tls is None:
                port = self._server.add_insecure_port(address)
            else:
                credentials = grpc.ssl_server_credentials(
                    [(tls.private_key, tls.certificate_chain)],
                    root_certificates=tls.client_ca,
                    require_client_auth=tls.mutual,
                )
                port = self._server.add_secure_port(address, credentials)
        except RuntimeError:  # how grpcio says it could not bind
            port = 0
        if port == 0 and not address.startswith("unix:"):
            raise OSError(
                f"cannot listen on {address}: the port is in use, or the address is not"
                " this machine's"
            )
        return port

    def start(self) -> None:
        """Listens: health answers (live, not ready), ContextService calls get UNAVAILABLE."""
        self._server.start()

    def serve(self, servicer: ContextServicer, events: EventHub, access: CallAccess) -> None:
        """Hands ContextService calls to servicer, each admitted by access first, and reports
        ready; stop closes events (so that Watch streams end at once)."""
        self._interceptor.access = access
        self._servicer.attach(servicer)
        self._events = events
        for name in READINESS:
            self._health.set(name, health_pb2.HealthCheckResponse.SERVING)

    def set_ready(self, ready: bool) -> None:
        """Readiness once serving: NOT_SERVING while the store cannot be reached, so that a
        load balancer sends calls to other replicas meanwhile."""
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if ready
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in READINESS:
            self._health.set(name, status)

    def stop(self, grace: float) -> None:
        """Reports NOT_SERVING, refuses new calls, lets running ones finish within grace."""
        self._health.enter_graceful_shutdown()
        stopped = self._server.stop(grace)
        if self._events is not None:
            self._events.close()  # Watch streams end now rather than at the grace deadline
        stopped.wait()
