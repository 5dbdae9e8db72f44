"""Builds the gRPC server: our servicer behind the interceptors, health and reflection."""

from __future__ import annotations

from concurrent import futures

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb
from contextwm_client.v1 import contextwm_pb2_grpc as pb_grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from contextwm.agent_loop.loop import AgentLoop
from contextwm.budgets.context import CategoryContexts
from contextwm.conversations.engine import ContextEngine
from contextwm.retrieval.retriever import Retriever
from contextwm.transport.interceptors import ErrorInterceptor
from contextwm.transport.servicer import ContextServicer

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["ContextService"].full_name


class GrpcServer:
    """A started-on-demand gRPC server; `bind` returns the port actually bound."""

    def __init__(self, engine: ContextEngine, *, workers: int, max_message_bytes: int) -> None:
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="contextwm-rpc"),
            interceptors=[ErrorInterceptor()],
            options=[
                ("grpc.max_receive_message_length", max_message_bytes),
                ("grpc.max_send_message_length", max_message_bytes),
                # A restarted server must be able to take its port back at once.
                ("grpc.so_reuseport", 0),
            ],
        )
        self._engine = engine
        retriever = Retriever(engine)
        servicer = ContextServicer(
            engine, retriever, CategoryContexts(engine, retriever), AgentLoop(engine)
        )
        pb_grpc.add_ContextServiceServicer_to_server(servicer, self._server)
        self._health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self._server
        )

    def bind(self, address: str) -> int:
        """Binds "host:port" (port 0 picks a free one) or "unix:/path"; returns the port."""
        port = self._server.add_insecure_port(address)
        if port == 0 and not address.startswith("unix:"):
            raise OSError(f"cannot bind {address}")
        return port

    def start(self) -> None:
        self._server.start()
        for name in ("", SERVICE_NAME):
            self._health.set(name, health_pb2.HealthCheckResponse.SERVING)

    def stop(self, grace: float) -> None:
        """Reports NOT_SERVING, refuses new calls, lets running ones finish within grace."""
        self._health.enter_graceful_shutdown()
        stopped = self._server.stop(grace)
        self._engine.events.close()  # Watch streams end now rather than at the grace deadline
        stopped.wait()
