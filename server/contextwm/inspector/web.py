"""The inspector's HTTP server: the page and its assets, a JSON read per view, and a
conversation's events as server-sent events. It binds when the service starts listening and
answers once the service is ready; threads serve requests, and an event stream holds one."""

from __future__ import annotations

import json
import logging
import queue
import ssl
import threading
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.access.guard import Authenticator
from contextwm.domain.errors import Unauthenticated
from contextwm.exposure import is_loopback
from contextwm.inspector.pages import TIMELINE_ITEMS, Caller, Pages
from contextwm.inspector.plain import plain
from contextwm.inspector.reads import ReadFailed, Reads, request_of
from contextwm.inspector.sessions import Sessions

log = logging.getLogger(__name__)

COOKIE = "contextwm_inspector"
# The largest request body a page sends (a context request with its options).
MAX_BODY_BYTES = 64 * 1024
# An idle event stream sends a comment this often, so that a dead browser is noticed.
HEARTBEAT_SECONDS = 15.0
_ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "inspector.css": "text/css; charset=utf-8",
    "inspector.js": "text/javascript; charset=utf-8",
}
# The gRPC status names a page already knows, for the inspector's own refusals.
_CODES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 413: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}
_HEADERS = {
    # Everything is this server's own: no CDN, no inline script, never framed.
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self';"
        " frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass
class Backend:
    """What the inspector reads with, once the service is built."""

    pages: Pages
    reads: Reads
    keys: Authenticator
    keys_required: bool


class Inspector:
    """The inspector's listening socket and the threads that serve it."""

    def __init__(self, host: str, port: int, tls: tuple[str, str] | None) -> None:
        """Binds host:port (0 picks a port).

        Args:
            tls: the certificate chain and key files to serve HTTPS with; None: HTTP.

        Raises:
            OSError: the address cannot be bound, or the TLS files cannot be used.
        """
        self.backend: Backend | None = None
        self.sessions = Sessions()
        self.host = host
        self.tls = tls is not None
        try:
            self._http = _Server((host, port), _handler_for(self))
        except OSError as exc:
            raise OSError(f"the inspector cannot listen on {host}:{port}: {exc.strerror}") from None
        if tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(*tls)
            # The handshake happens in the request's own thread, not in the accepting one.
            self._http.socket = context.wrap_socket(
                self._http.socket, server_side=True, do_handshake_on_connect=False
            )
        self.port = int(self._http.server_address[1])
        self._thread = threading.Thread(
            target=self._http.serve_forever, name="contextwm-inspector", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/"

    def serve(self, backend: Backend) -> None:
        """Answers reads from now on (before: 503, the service is loading)."""
        self.backend = backend

    def stop(self) -> None:
        """Stops listening; open event streams end with the service's Watch streams."""
        self._http.shutdown()
        self._http.server_close()
        if self.backend is not None:
            self.backend.reads.close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A browser that went away, or plain HTTP sent to the HTTPS port: not worth a
        # traceback on the server's stderr.
        log.debug("inspector: a connection from %s failed", client_address, exc_info=True)


class Refused(Exception):
    """A request answered with an error status and a message for a person."""

    def __init__(self, status: int, message: str, code: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.code = code or _CODES.get(status, HTTPStatus(status).phrase.upper().replace(" ", "_"))


def _handler_for(inspector: Inspector) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = inspector

    return Handler


class _Handler(BaseHTTPRequestHandler):
    owner: Inspector
    server_version = "contextwm-inspector"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("inspector: " + format, *args)

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def _answer(self, verb: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            self._check_host()
            if verb == "GET" and not url.path.startswith("/api/"):
                self._asset(url.path)
                return
            backend = self.owner.backend
            if backend is None:
                raise Refused(503, "the server is still loading; try again in a moment")
            route = _ROUTES.get((verb, url.path))
            if route is None:
                raise Refused(404, f"no {verb} {url.path} here")
            route(self, backend, query)
        except Refused as exc:
            self._json({"error": str(exc), "code": exc.code}, exc.status)
        except ReadFailed as exc:
            self._json({"error": exc.message, "code": exc.code}, exc.http_status)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception:
            log.exception("inspector: %s %s failed", verb, url.path)
            self._json({"error": "the inspector failed; the server log says why"}, 500)

    def _check_host(self) -> None:
        # On loopback without keys, a page elsewhere could rebind its own name to 127.0.0.1
        # and read these answers as same-origin: only loopback names are answered there.
        if not is_loopback(self.owner.host):
            return
        host = (self.headers.get("Host") or "").strip()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if not host or not is_loopback(name):
            raise Refused(421, f"the inspector answers loopback addresses only, not {host!r}")

    def _asset(self, path: str) -> None:
        name = "index.html" if path in ("/", "/index.html") else path.removeprefix("/static/")
        if name not in _ASSETS or (path != "/" and not path.startswith(("/static/", "/index"))):
            raise Refused(404, f"no {path} here")
        body = (resources.files("contextwm.inspector") / "static" / name).read_bytes()
        self._send(200, _ASSETS[name], body)

    # ---------------------------------------------------------------- who is asking

    def caller(self, backend: Backend) -> Caller:
        """The signed-in key, checked now; without one, the keyless caller if keys are off.

        Raises:
            Refused: 401 when a key is needed and there is none, or it stopped working.
        """
        session = self._cookie()
        token = self.owner.sessions.token(session) if session else None
        if token is None:
            if backend.keys_required:
                raise Refused(401, "sign in with an API key", "UNAUTHENTICATED")
            return Caller(None, None)
        try:
            return Caller(token, backend.keys.authenticate(token))
        except Unauthenticated as exc:
            self.owner.sessions.close(session or "")
            raise Refused(401, str(exc), "UNAUTHENTICATED") from None

    def _cookie(self) -> str | None:
        for part in (self.headers.get("Cookie") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE and value:
                return value
        return None

    def set_cookie(self, value: str, max_age: int) -> str:
        secure = "; Secure" if self.owner.tls else ""
        return f"{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"

    # ---------------------------------------------------------------- answers

    def body(self) -> dict[str, Any]:
        """The request's JSON object body.

        Raises:
            Refused: 413 for a body over MAX_BODY_BYTES, 400 for one that is not an object.
        """
        try:
            size = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise Refused(400, "Content-Length is not a number") from None
        if size > MAX_BODY_BYTES:
            raise Refused(413, f"the request body is over {MAX_BODY_BYTES} bytes")
        try:
            data = json.loads(self.rfile.read(size) or b"{}")
        except ValueError as exc:
            raise Refused(400, f"the request body is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise Refused(400, "the request body must be a JSON object")
        return data

    def _json(self, value: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(value, ensure_ascii=False, allow_nan=False).encode()
        self._send(status, "application/json; charset=utf-8", body, headers)

    def _send(
        self, status: int, kind: str, body: bytes, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in {**_HEADERS, **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def events(self, backend: Backend, caller: Caller, request: pb.WatchRequest) -> None:
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
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        for name, value in _HEADERS.items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            while True:
                try:
                    event = waiting.get(timeout=HEARTBEAT_SECONDS)
                except queue.Empty:
                    self.wfile.write(b": still here\n\n")
                    self.wfile.flush()
                    continue
                if event is None:
                    return
                if isinstance(event, ReadFailed):
                    data = json.dumps({"error": event.message, "code": event.code})
                    self.wfile.write(f"event: failed\ndata: {data}\n\n".encode())
                    self.wfile.flush()
                    return
                data = json.dumps(plain(event), ensure_ascii=False, allow_nan=False)
                self.wfile.write(f"id: {event.id}\nevent: {event.kind}\ndata: {data}\n\n".encode())
                self.wfile.flush()
        finally:
            call.cancel()


# ---------------------------------------------------------------- routes


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


def _session(h: _Handler, b: Backend, q: dict[str, str]) -> None:
    try:
        caller = h.caller(b)
    except Refused:
        caller = None
    key = None if caller is None or caller.key is None else caller.key
    h._json(
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


def _sign_in(h: _Handler, b: Backend, q: dict[str, str]) -> None:
    token = str(h.body().get("key", "")).strip()
    if not token:
        raise Refused(400, "give an API key (cwm_...)")
    try:
        key = b.keys.authenticate(token)
    except Unauthenticated as exc:
        raise Refused(401, str(exc), "UNAUTHENTICATED") from None
    session = h.owner.sessions.open(token)
    h._json(
        {"key_id": key.key_id, "namespaces": list(key.namespaces)},
        headers={"Set-Cookie": h.set_cookie(session, 8 * 3600)},
    )


def _sign_out(h: _Handler, b: Backend, q: dict[str, str]) -> None:
    session = h._cookie()
    if session:
        h.owner.sessions.close(session)
    h._json({}, headers={"Set-Cookie": h.set_cookie("", 0)})


def _namespaces(h: _Handler, b: Backend, q: dict[str, str]) -> None:
    h._json({"namespaces": b.pages.namespaces(h.caller(b))})


def _conversations(h: _Handler, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    h._json(
        b.pages.conversations(
            caller, _text(q, "namespace"), _text(q, "filter"), _number(q, "page", 1)
        )
    )


def _conversation(h: _Handler, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    h._json(
        b.pages.conversation(caller, _text(q, "namespace"), _text(q, "conversation", required=True))
    )


def _timeline(h: _Handler, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    h._json(
        b.pages.timeline(
            caller,
            _text(q, "namespace"),
            _text(q, "conversation", required=True),
            max(0, _number(q, "after", 0)),
            _number(q, "limit", TIMELINE_ITEMS),
        )
    )


def _usage(h: _Handler, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    h._json(b.pages.usage(caller, _text(q, "namespace"), _text(q, "conversation", required=True)))


def _context(h: _Handler, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    request = request_of("GetContext", h.body())
    h._json(b.pages.context(caller, request))  # type: ignore[arg-type]


def _search(h: _Handler, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    request = request_of("Search", h.body())
    h._json(b.pages.search(caller, request))  # type: ignore[arg-type]


def _events(h: _Handler, b: Backend, q: dict[str, str]) -> None:
    caller = h.caller(b)
    request = pb.WatchRequest(
        namespace=_text(q, "namespace"),
        conversation_id=_text(q, "conversation", required=True),
        # A browser that reconnects says where it got to.
        after_event_id=max(
            0,
            _number({"after": h.headers.get("Last-Event-ID", "")}, "after", 0)
            or _number(q, "after", 0),
        ),
    )
    h.events(b, caller, request)


_ROUTES = {
    ("GET", "/api/session"): _session,
    ("POST", "/api/sign-in"): _sign_in,
    ("POST", "/api/sign-out"): _sign_out,
    ("GET", "/api/namespaces"): _namespaces,
    ("GET", "/api/conversations"): _conversations,
    ("GET", "/api/conversation"): _conversation,
    ("GET", "/api/timeline"): _timeline,
    ("GET", "/api/usage"): _usage,
    ("GET", "/api/events"): _events,
    ("POST", "/api/context"): _context,
    ("POST", "/api/search"): _search,
}
