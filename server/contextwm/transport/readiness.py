"""Readiness: the health service's names, and the stand-in that answers ContextService calls
while the service starts.

The port is bound before the model loads, so that a supervisor's probes get an answer at once:
the liveness name reports SERVING from then on, the readiness names (`""` and the service's
own) only once the engine is built. Calls that come in between are refused UNAVAILABLE,
which clients retry, rather than left to a connection refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb
from contextwm_client.v1 import contextwm_pb2_grpc as pb_grpc

from contextwm.domain.errors import Unavailable

_SERVICE = pb.DESCRIPTOR.services_by_name["ContextService"]
SERVICE_NAME = _SERVICE.full_name
# Health names: SERVING while the process listens (until shutdown begins); "" and the service's
# own name are readiness: SERVING once calls can be served.
LIVENESS = "contextwm.v1.Liveness"
READINESS = ("", SERVICE_NAME)

STARTING = (
    "contextwm is starting (loading the embedding model); retry, or wait until"
    f" grpc.health.v1.Health reports {SERVICE_NAME} SERVING"
)

_METHODS = frozenset(m.name for m in _SERVICE.methods)

Behaviour = Callable[[Any, grpc.ServicerContext], Any]


class LateServicer:
    """Registered in the servicer's place when the server is built, before the servicer can
    exist; forwards each call to it once `attach` is called, and refuses calls before.

    Registration takes a method per RPC name (`servicer.Append`, ...): each is a forwarder
    made on that lookup, so the generated registration is used as it is.
    """

    def __init__(self) -> None:
        self._target: pb_grpc.ContextServiceServicer | None = None

    def attach(self, servicer: pb_grpc.ContextServiceServicer) -> None:
        self._target = servicer

    def __getattr__(self, name: str) -> Behaviour:
        if name not in _METHODS:
            raise AttributeError(name)

        def forward(request: Any, context: grpc.ServicerContext) -> Any:
            target = self._target
            if target is None:
                raise Unavailable(STARTING)  # the error interceptor makes it the status
            return getattr(target, name)(request, context)

        return forward
