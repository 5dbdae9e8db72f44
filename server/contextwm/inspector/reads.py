"""The inspector's only way to the data: read calls to this server's own ContextService over
a private Unix socket, made with the signed-in person's API key. Each call is admitted by
the same guard, quotas and audit trail as any client's, so a page can show no more than
its key may read."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb
from contextwm_client.v1 import contextwm_pb2_grpc as pb_grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from contextwm.domain.access import Role
from contextwm.transport.access import method_role

# What the pages call: each declares read access in the proto, checked at import below.
READ_METHODS = (
    "GetConversation",
    "ListConversations",
    "ListItems",
    "GetContext",
    "Search",
    "GetActiveContext",
    "ListCheckpoints",
    "ListContextEdits",
    "GetStats",
    "Watch",
)
for _method in READ_METHODS:
    if method_role(_method) is not Role.READ:
        raise RuntimeError(f"{_method} is not a read method: the inspector must not call it")

# A gRPC status as the HTTP status a page is answered with.
_HTTP_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.FAILED_PRECONDITION: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
}

# Long enough for a context over a large archive; a page that waits longer is broken.
CALL_SECONDS = 60.0


@dataclass
class ReadFailed(Exception):
    """A read the server refused or could not answer, as a page shows it."""

    http_status: int
    code: str  # the gRPC status name, e.g. "NOT_FOUND"
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def request_of(method: str, fields: dict[str, Any]) -> Message:
    """The request message of a read method, from JSON fields in the proto JSON mapping.

    Raises:
        ReadFailed: an unknown method, or fields the request does not have or cannot take
            (INVALID_ARGUMENT).
    """
    if method not in READ_METHODS:
        raise ReadFailed(404, "NOT_FOUND", f"{method} is not a read the inspector makes")
    request_type = getattr(pb, f"{method}Request", None)
    if request_type is None:  # GetContext takes a GetContextRequest; Watch a WatchRequest
        raise ReadFailed(404, "NOT_FOUND", f"{method} has no request type")
    try:
        request: Message = json_format.ParseDict(fields, request_type())
    except json_format.ParseError as exc:
        raise ReadFailed(400, "INVALID_ARGUMENT", str(exc)) from None
    return request


class Reads:
    """Read calls to the server's ContextService over its private socket."""

    def __init__(self, address: str) -> None:
        """Args: address: the gRPC target, "unix:/path/to/socket"."""
        self._channel = grpc.insecure_channel(address)
        self._stub = pb_grpc.ContextServiceStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def call(self, method: str, request: Message, token: str | None) -> Any:
        """The response of one unary read, made with token's key (None: no key).

        Raises:
            ReadFailed: the server refused the call or could not answer it.
        """
        if method not in READ_METHODS or method == "Watch":
            raise ReadFailed(404, "NOT_FOUND", f"{method} is not a read the inspector makes")
        try:
            return getattr(self._stub, method)(
                request, metadata=_metadata(token), timeout=CALL_SECONDS
            )
        except grpc.RpcError as exc:
            raise failed(exc) from None

    def watch(self, request: pb.WatchRequest, token: str | None) -> WatchCall:
        """A conversation's event stream; cancel it when nobody reads on."""
        return WatchCall(self._stub.Watch(request, metadata=_metadata(token)))


class WatchCall:
    """An open Watch stream."""

    def __init__(self, call: Any) -> None:
        self._call = call

    def __iter__(self) -> Iterator[pb.Event]:
        """The events, until the stream ends.

        Raises:
            ReadFailed: the server refused or ended the stream with an error.
        """
        try:
            yield from self._call
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                raise failed(exc) from None

    def cancel(self) -> None:
        self._call.cancel()


def failed(exc: grpc.RpcError) -> ReadFailed:
    """A failed call as a page shows it: the server's own status and message."""
    code = exc.code()
    return ReadFailed(_HTTP_STATUS.get(code, 500), code.name, exc.details() or code.name)


def _metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()
