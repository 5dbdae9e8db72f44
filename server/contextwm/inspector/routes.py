"""What each path of the inspector's HTTP API answers: sign-in, a JSON read per view, and a
conversation's events as server-sent events."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Protocol

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.access.guard import Authenticator
from contextwm.domain.errors import Unauthenticated
from contextwm.inspector.pages import STATE_NAMES, TIMELINE_ITEMS, Caller, ItemFilter, Pages
from contextwm.inspector.plain import plain
from contextwm.inspector.reads import ReadFailed, Reads, request_of
from contextwm.inspector.sessions import Sessions

# An idle event stream sends a comment this often, for proxies that end quiet connections.
HEARTBEAT_SECONDS = 15.0
# How often a stream looks whether its browser went: each holds one of the server's few
# Watch streams (limits.max_watchers), which a page left behind must give back at once.
GONE_CHECK_SECONDS = 0.5
# A signed-in browser's cookie lasts this long (the session idles out sooner unused).
SESSION_COOKIE_SECONDS = 8 * 3600
# The gRPC status names a page already knows, for the inspector's own refusals.
_CODES = {
    400: "INVALID_ARGUMENT",
    404: "NOT_FOUND",
    413: "RESOURCE_EXHAUSTED",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
}


@dataclass
class Backend:
    """What the inspector reads with, once the service is built."""

    pages: Pages
    reads: Reads
    keys: Authenticator
    keys_required: bool


class Refused(Exception):
    """A request answered with an error status and a message for a person."""

    def __init__(
        self, status: int, message: str, code: str = "", headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code or _CODES.get(status, HTTPStatus(status).phrase.upper().replace(" ", "_"))
        self.headers = headers or {}


class Stream(Protocol):
    """Where an event stream is written."""

    def write(self, data: bytes, /) -> object: ...

    def flush(self) -> object: ...


class Exchange(Protocol):
    """One HTTP request as a route answers it."""

    @property
    def sessions(self) -> Sessions: ...

    def caller(self, backend: Backend) -> Caller: ...

    def body(self) -> dict[str, Any]: ...

    def cookie(self) -> str | None: ...

    def set_cookie(self, value: str, max_age: int) -> str: ...

    def answer(
        self, value: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> None: ...

    def header(self, name: str) -> str:
        """The request header's value ("" without it)."""
        ...

    def open_stream(self) -> Stream: ...

    def gone(self) -> bool:
        """Whether the browser closed the connection of an open stream."""
        ...


def stream_events(h: Exchange, backend: Backend, caller: Caller, request: pb.WatchRequest) -> None:
    """Streams a conversation's events as server-sent events until the browser goes,
    the stream ends, or the key stops working."""
    call = backend.reads.watch(request, caller.token)
    waiting: queue.Queue[pb.Event | ReadFailed | None] = queue.Queue()

    def pump() -> None:
        try:
            for event in call:
                waiting.put(event)
            waiting.put(None)
        except ReadFailed as exc:
            waiting.put(exc)

    threading.Thread(target=pump, name="contextwm-inspector-watch", daemon=True).start()
    stream = h.open_stream()
    quiet = 0.0
    try:
        while True:
            try:
                event = waiting.get(timeout=GONE_CHECK_SECONDS)
            except queue.Empty:
                if h.gone():
                    return
                quiet += GONE_CHECK_SECONDS
                if quiet >= HEARTBEAT_SECONDS:
                    quiet = 0.0
                    stream.write(b": still here\n\n")
                    stream.flush()
                continue
            quiet = 0.0
            if event is None:
                return
            if isinstance(event, ReadFailed):
                data = json.dumps({"error": event.message, "code": event.code})
                stream.write(f"event: failed\ndata: {data}\n\n".encode())
                stream.flush()
                return
            data = json.dumps(plain(event), ensure_ascii=False, allow_nan=False)
            stream.write(f"id: {event.id}\nevent: {event.kind}\ndata: {data}\n\n".encode())
            stream.flush()
    finally:
        call.cancel()


def _text(query: dict[str, str], name: str, *, required: bool = False) -> str:
    value = query.get(name, "")
    if required and not value:
        raise Refused(400, f"the {name} parameter is required")
    return value


def _number(query: dict[str, str], name: str, default: int) -> int:
    value = query.get(name, "")
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise Refused(400, f"{name} must be a whole number, not {value!r}") from None


def _session(h: Exchange, b: Backend, q: dict[str, str]) -> None:
    try:
        caller = h.caller(b)
    except Refused:
        caller = None
    key = None if caller is None or caller.key is None else caller.key
    h.answer(
        {
            "keys_required": b.keys_required,
            "signed_in": caller is not None and caller.token is not None,
            "key": None
            if key is None
            else {
                "key_id": key.key_id,
                "name": key.name,
                "role": key.role.name.lower(),
                "namespaces": list(key.namespaces),
            },
        }
    )


def _sign_in(h: Exchange, b: Backend, q: dict[str, str]) -> None:
    token = str(h.body().get("key", "")).strip()
    if not token:
        raise Refused(400, "give an API key (cwm_...)")
    try:
        key = b.keys.authenticate(token)
    except Unauthenticated as exc:
        raise Refused(401, str(exc), "UNAUTHENTICATED") from None
    session = h.sessions.open(token)
    h.answer(
        {"key_id": key.key_id, "namespaces": list(key.namespaces)},
        headers={"Set-Cookie": h.set_cookie(session, SESSION_COOKIE_SECONDS)},
    )


def _sign_out(h: Exchange, b: Backend, q: dict[str, str]) -> None:
    session = h.cookie()
    if session:
        h.sessions.close(session)
    h.answer({}, headers={"Set-Cookie": h.set_cookie("", 0)})


def _namespaces(h: Exchange, b: Backend, q: dict[str, str]) -> None:
    h.answer({"namespaces": b.pages.namespaces(h.caller(b))})


def _conversations(h: Exchange, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    h.answer(
        b.pages.conversations(
            caller, _text(q, "namespace"), _text(q, "filter"), _number(q, "page", 1)
        )
    )


def _conversation(h: Exchange, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    h.answer(
        b.pages.conversation(caller, _text(q, "namespace"), _text(q, "conversation", required=True))
    )


def _timeline(h: Exchange, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    states = _listed(q, "state")
    unknown = states - set(STATE_NAMES)
    if unknown:
        raise Refused(400, f"unknown state {sorted(unknown)[0]!r}: one of {', '.join(STATE_NAMES)}")
    only = ItemFilter(_listed(q, "role"), states, _listed(q, "flag"))
    h.answer(
        b.pages.timeline(
            caller,
            _text(q, "namespace"),
            _text(q, "conversation", required=True),
            max(0, _number(q, "after", 0)),
            _number(q, "limit", TIMELINE_ITEMS),
            only,
        )
    )


def _listed(query: dict[str, str], name: str) -> frozenset[str]:
    """A parameter's comma-separated values (none: empty)."""
    return frozenset(v.strip() for v in query.get(name, "").split(",") if v.strip())


def _active(h: Exchange, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    h.answer(
        b.pages.active(
            caller,
            _text(q, "namespace"),
            _text(q, "conversation", required=True),
            _number(q, "start", 0),
        )
    )


def _usage(h: Exchange, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    h.answer(b.pages.usage(caller, _text(q, "namespace"), _text(q, "conversation", required=True)))


def _context(h: Exchange, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    request = request_of("GetContext", h.body())
    h.answer(b.pages.context(caller, request))  # type: ignore[arg-type]


def _search(h: Exchange, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    request = request_of("Search", h.body())
    h.answer(b.pages.search(caller, request))  # type: ignore[arg-type]


def _events(h: Exchange, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    request = pb.WatchRequest(
        namespace=_text(q, "namespace"),
        conversation_id=_text(q, "conversation", required=True),
        # A browser that reconnects says where it got to.
        after_event_id=max(
            0,
            _number({"after": h.header("Last-Event-ID")}, "after", 0) or _number(q, "after", 0),
        ),
    )
    stream_events(h, b, caller, request)


ROUTES: dict[tuple[str, str], Callable[[Exchange, Backend, dict[str, str]], None]] = {
    ("GET", "/api/session"): _session,
    ("POST", "/api/sign-in"): _sign_in,
    ("POST", "/api/sign-out"): _sign_out,
    ("GET", "/api/namespaces"): _namespaces,
    ("GET", "/api/conversations"): _conversations,
    ("GET", "/api/conversation"): _conversation,
    ("GET", "/api/timeline"): _timeline,
    ("GET", "/api/usage"): _usage,
    ("GET", "/api/active"): _active,
    ("GET", "/api/events"): _events,
    ("POST", "/api/context"): _context,
    ("POST", "/api/search"): _search,
}


def allowed_methods(path: str) -> tuple[str, ...]:
    """The methods an API path answers, in ROUTES' order (none: no such path)."""
    return tuple(verb for verb, route_path in ROUTES if route_path == path)
