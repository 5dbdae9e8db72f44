"""API keys on the wire: the role each method needs (declared in the proto), the namespaces a
request touches, the key in its metadata; and the wrapping of a handler so that every call
is admitted by the guard (and within its key's quotas) before it runs, every message of a
client stream too, and a response stream ends once its key stops working. Who made the call
is kept for its metrics and audit line."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.access.guard import Guard
from contextwm.access.quotas import KeyQuotas
from contextwm.access.streams import OpenStreams, Ticket
from contextwm.conversations.validation import DEFAULT_NAMESPACE
from contextwm.domain.access import Role
from contextwm.domain.errors import PermissionDenied, Unauthenticated
from contextwm.observability.audit import CallSubject

_SERVICE = pb.DESCRIPTOR.services_by_name["ContextService"]
_ROLES = {
    pb.ACCESS_READ: Role.READ,
    pb.ACCESS_WRITE: Role.WRITE,
    pb.ACCESS_ADMIN: Role.ADMIN,
}


# Each method's least role, read from the proto's access option once.
_METHOD_ROLES = {m.name: _ROLES.get(m.GetOptions().Extensions[pb.access]) for m in _SERVICE.methods}


def method_role(method: str) -> Role | None:
    """The least role a ContextService method ("Append") needs, from the proto's access
    option; None for a method that declares none (refused: keys fail closed)."""
    return _METHOD_ROLES.get(method)


def needed_by(method: str, request: Any) -> tuple[str, Role | None]:
    """The least role one request needs, and the call as a refusal names it: the method's
    role, raised to write for a GetUsage that reports the provider's count, which the
    server stores (a read key never changes what is stored)."""
    role = method_role(method)
    if (
        isinstance(request, pb.GetUsageRequest)
        and request.HasField("reported")
        and role is not None
        and role < Role.WRITE
    ):
        return f"{method} with a reported count (which it stores)", Role.WRITE
    return method, role


def namespaces_of(request: Any, first: Any = None) -> list[str] | None:
    """The namespaces a request (or one message of a client stream) touches; None when it
    spans every namespace (all_namespaces, no namespace field, or a restore into each
    conversation's own namespace).

    Args:
        first: The first message of the request's stream (None: request is the first, or
            no stream). A restore goes where its first message says, whatever the later
            ones name, so each of its messages is judged by the first one's namespace.
    """
    fields = request.DESCRIPTOR.fields_by_name
    if "all_namespaces" in fields and request.all_namespaces:
        return None
    if isinstance(request, pb.ImportRequest):
        return sorted({item.namespace or DEFAULT_NAMESPACE for item in request.items})
    if isinstance(request, pb.RestoreExportRequest):
        namespace = (first if first is not None else request).namespace
        return [namespace] if namespace else None
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
# Who made the call this thread serves, and where: for its metrics and audit line.
_call = threading.local()


def begin_call() -> None:
    """Forgets the subject of the call this thread served before (threads serve many)."""
    _call.key_id = _call.namespace = _call.conversation = _call.target_key = None


def call_subject() -> CallSubject:
    """Who made the call this thread serves, and on what, as far as known."""
    return CallSubject(
        getattr(_call, "key_id", None),
        getattr(_call, "namespace", None),
        getattr(_call, "conversation", None),
        getattr(_call, "target_key", None),
    )


def _note_subject(request: Any) -> None:
    fields = request.DESCRIPTOR.fields_by_name
    if "namespace" in fields:
        _call.namespace = request.namespace or DEFAULT_NAMESPACE
    if "conversation_id" in fields and request.conversation_id:
        _call.conversation = request.conversation_id
    if "key_id" in fields:
        _call.target_key = request.key_id


def note_target_key(key_id: str) -> None:
    """Names the API key the call this thread serves made (CreateKey: known only once it
    is made), for its audit line."""
    _call.target_key = key_id


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

    def __init__(self, guard: Guard, streams: OpenStreams, quotas: KeyQuotas) -> None:
        self._guard = guard
        self._streams = streams
        self._quotas = quotas

    def wrap(
        self, method: str, request_streaming: bool, response_streaming: bool, inner: Handler
    ) -> Handler:
        """inner, admitted first. Its request (or each message of its request stream) is
        checked against the caller's key; a response stream also ends once the key stops
        working, with UNAUTHENTICATED."""
        guard = self._guard
        quotas = self._quotas
        needed = method_role(method)

        def admitted(request: Any, context: grpc.ServicerContext) -> tuple[Any, str]:
            if not request_streaming:
                _note_subject(request)
            token = token_of(context)
            key = guard.caller(token)
            if key is not None:
                _call.key_id = key.key_id
            if needed is None:
                raise PermissionDenied(f"{method} declares no access, so no call may make it")
            if not request_streaming:
                called, least = needed_by(method, request)
                guard.admit(key, called, least or needed, namespaces_of(request))
                if key is not None:
                    quotas.take_request(key)
                    quotas.check_size(key, request.ByteSize())
                return request, token or ""
            guard.admit(key, method, needed, ())  # the role now, the namespaces per message
            if key is None:
                return request, ""
            quotas.take_request(key)
            caller = key

            def checked(requests: Iterator[Any]) -> Iterator[Any]:
                first = None
                for message in requests:
                    guard.admit(caller, method, needed, namespaces_of(message, first))
                    first = message if first is None else first
                    quotas.check_size(caller, message.ByteSize())
                    yield message

            return checked(request), token or ""

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
