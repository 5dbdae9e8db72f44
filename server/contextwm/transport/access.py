"""API keys on the wire: the role each method needs (declared in the proto), the namespaces a
request touches, the key in its metadata; and the wrapping of a handler so that every call
is admitted by the guard before it runs, every message of a client stream too, and a
response stream ends once its key stops working."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.access.guard import Guard
from contextwm.access.streams import OpenStreams, Ticket
from contextwm.conversations.validation import DEFAULT_NAMESPACE
from contextwm.domain.access import Role
from contextwm.domain.errors import PermissionDenied, Unauthenticated

_SERVICE = pb.DESCRIPTOR.services_by_name["ContextService"]
_ROLES = {
    pb.ACCESS_READ: Role.READ,
    pb.ACCESS_WRITE: Role.WRITE,
    pb.ACCESS_ADMIN: Role.ADMIN,
}


def method_role(method: str) -> Role | None:
    """The least role a ContextService method ("Append") needs, from the proto's access
    option; None for a method that declares none (refused: keys fail closed)."""
    found = _SERVICE.methods_by_name.get(method)
    if found is None:
        return None
    return _ROLES.get(found.GetOptions().Extensions[pb.access])


def namespaces_of(request: Any) -> list[str] | None:
    """The namespaces a request (or one message of a client stream) touches; None when it
    spans every namespace (all_namespaces, no namespace field, or a restore into each
    conversation's own namespace)."""
    fields = request.DESCRIPTOR.fields_by_name
    if "all_namespaces" in fields and request.all_namespaces:
        return None
    if isinstance(request, pb.ImportRequest):
        return sorted({item.namespace or DEFAULT_NAMESPACE for item in request.items})
    if isinstance(request, pb.RestoreExportRequest) and not request.namespace:
        return None
    if "namespace" in fields:
        return [request.namespace or DEFAULT_NAMESPACE]
    return None


def token_of(context: grpc.ServicerContext) -> str | None:
    """The bearer token of the call's `authorization` metadata; None without one.

    Raises:
        Unauthenticated: the metadata is there but not "Bearer <token>".
    """
    for name, value in context.invocation_metadata() or ():
        if name != "authorization":
            continue
        scheme, _, token = str(value).partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthenticated(
                "the authorization metadata must read `Bearer <key>`, with the API key after"
                " one space"
            )
        return token.strip()
    return None


_stream = threading.local()


def end_with_key(close: Callable[[], None]) -> None:
    """Has the response stream this thread serves call `close` if its API key stops working
    (revoked or expired) while the stream waits: a stream with nothing to send would not
    notice otherwise. Nothing happens for a stream without a key."""
    ticket: Ticket | None = getattr(_stream, "ticket", None)
    if ticket is not None:
        ticket.add_closer(close)


Handler = Callable[[Any, grpc.ServicerContext], Any]


class CallAccess:
    """Admits every ContextService call through one guard."""

    def __init__(self, guard: Guard, streams: OpenStreams) -> None:
        self._guard = guard
        self._streams = streams

    def wrap(
        self, method: str, request_streaming: bool, response_streaming: bool, inner: Handler
    ) -> Handler:
        """inner, admitted first. Its request (or each message of its request stream) is
        checked against the caller's key; a response stream also ends once the key stops
        working, with UNAUTHENTICATED."""
        guard = self._guard
        needed = method_role(method)

        def admitted(request: Any, context: grpc.ServicerContext) -> tuple[Any, str]:
            token = token_of(context)
            key = guard.caller(token)
            if needed is None:
                raise PermissionDenied(f"{method} declares no access, so no call may make it")
            if not request_streaming:
                guard.admit(key, method, needed, namespaces_of(request))
                return request, token or ""
            guard.admit(key, method, needed, ())  # the role now, the namespaces per message

            def checked(requests: Iterator[Any]) -> Iterator[Any]:
                for message in requests:
                    guard.admit(key, method, needed, namespaces_of(message))
                    yield message

            return (checked(request) if key is not None else request), token or ""

        if not response_streaming:

            def call(request: Any, context: grpc.ServicerContext) -> Any:
                checked, _ = admitted(request, context)
                return inner(checked, context)

            return call

        def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            checked, token = admitted(request, context)
            if not token:
                yield from inner(checked, context)
                return
            ticket = self._streams.open(token)
            _stream.ticket = ticket
            try:
                for response in inner(checked, context):
                    ticket.check()
                    yield response
                ticket.check()
            finally:
                _stream.ticket = None
                ticket.close()

        return stream
