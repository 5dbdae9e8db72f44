"""The inspector's HTTP server: the page and its assets, and each API path's answer (see
`routes`). It binds when the service starts listening and answers once the service is ready;
threads serve requests, and an event stream holds one."""

from __future__ import annotations

import json
import logging
import select
import ssl
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import PurePath
from typing import Any
from urllib.parse import parse_qs, urlsplit

from contextwm.domain.errors import Unauthenticated
from contextwm.exposure import host_port, is_loopback
from contextwm.inspector.pages import Caller
from contextwm.inspector.reads import ReadFailed
from contextwm.inspector.routes import ROUTES, Backend, Refused, Stream, allowed_methods
from contextwm.inspector.sessions import Sessions

log = logging.getLogger(__name__)

COOKIE = "contextwm_inspector"
# The largest request body a page sends (a context request with its options).
MAX_BODY_BYTES = 64 * 1024
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
}
_STATIC = resources.files("contextwm.inspector") / "static"
# What the page and its assets answer (HEAD: their headers only).
_PAGE_METHODS = ("GET", "HEAD")
# Every file the page may load, by name: what ships in static/, nothing else.
_ASSETS = {
    f.name: _TYPES[PurePath(f.name).suffix]
    for f in _STATIC.iterdir()
    if PurePath(f.name).suffix in _TYPES
}
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
            raise OSError(
                f"the inspector cannot listen on {host_port(host, port)}: {exc.strerror}"
            ) from None
        if tls is not None:
            try:
                context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
                context.load_cert_chain(*tls)
                # The handshake happens in the request's own thread, not the accepting one.
                self._http.socket = context.wrap_socket(
                    self._http.socket, server_side=True, do_handshake_on_connect=False
                )
            except BaseException:
                self._http.server_close()
                raise
        self.port = int(self._http.server_address[1])
        self._thread = threading.Thread(
            target=self._http.serve_forever, name="contextwm-inspector", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{host_port(self.host, self.port)}/"

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


def _asset_name(path: str) -> str | None:
    """The static file a page path names (None: none)."""
    name = "index.html" if path in ("/", "/index.html") else path.removeprefix("/static/")
    if name not in _ASSETS or (path != "/" and not path.startswith(("/static/", "/index"))):
        return None
    return name


def _asset_methods(path: str) -> tuple[str, ...]:
    return _PAGE_METHODS if _asset_name(path) is not None else ()


def _handler_for(inspector: Inspector) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = inspector

    return Handler


class _Handler(BaseHTTPRequestHandler):
    owner: Inspector
    server_version = "contextwm-inspector"
    protocol_version = "HTTP/1.1"
    # Request body bytes not read yet (an answer that leaves some closes the connection).
    _unread = 0

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("inspector: " + format, *args)

    # Every method HTTP defines for a resource is answered by path: what the path allows, or
    # 405 saying what it does allow. Others reach send_error's 501.
    def do_GET(self) -> None:
        self._answer("GET")

    def do_HEAD(self) -> None:
        self._answer("HEAD")

    def do_POST(self) -> None:
        self._answer("POST")

    def do_PUT(self) -> None:
        self._answer("PUT")

    def do_DELETE(self) -> None:
        self._answer("DELETE")

    def do_PATCH(self) -> None:
        self._answer("PATCH")

    def do_OPTIONS(self) -> None:
        self._answer("OPTIONS")

    def _answer(self, verb: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            self._unread = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self._unread = 1  # unknown: the connection cannot be reused
        try:
            self._check_host()
            api = url.path.startswith("/api/")
            allowed = allowed_methods(url.path) if api else _asset_methods(url.path)
            if not allowed:
                raise Refused(404, f"no {verb} {url.path} here")
            if verb == "OPTIONS":
                self._send(204, "", b"", {"Allow": ", ".join(allowed)})
                return
            if verb not in allowed:
                raise Refused(
                    405,
                    f"{verb} is not allowed on {url.path}: it answers {' and '.join(allowed)}",
                    headers={"Allow": ", ".join(allowed)},
                )
            if not api:
                self._asset(url.path)
                return
            backend = self.owner.backend
            if backend is None:
                raise Refused(503, "the server is still loading; try again in a moment")
            ROUTES[(verb, url.path)](self, backend, query)
        except Refused as exc:
            self.answer({"error": str(exc), "code": exc.code}, exc.status, exc.headers)
        except ReadFailed as exc:
            self.answer({"error": exc.message, "code": exc.code}, exc.http_status)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception:
            log.exception("inspector: %s %s failed", verb, url.path)
            self.answer({"error": "the inspector failed; the server log says why"}, 500)

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
        name = _asset_name(path)
        if name is None:
            raise Refused(404, f"no {path} here")
        body = (_STATIC / name).read_bytes()
        self._send(200, _ASSETS[name], body)

    # ---------------------------------------------------------------- who is asking

    def caller(self, backend: Backend) -> Caller:
        """The signed-in key, checked now; without one, the keyless caller if keys are off.

        Raises:
            Refused: 401 when a key is needed and there is none, or it stopped working.
        """
        session = self.cookie()
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

    def cookie(self) -> str | None:
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
        raw = self.rfile.read(size)
        self._unread = 0
        try:
            data = json.loads(raw or b"{}")
        except ValueError as exc:
            raise Refused(400, f"the request body is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise Refused(400, "the request body must be a JSON object")
        return data

    def answer(self, value: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(value, ensure_ascii=False, allow_nan=False).encode()
        self._send(status, "application/json; charset=utf-8", body, headers)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own refusals (a method nothing here answers, a malformed
        request line, headers too large) as JSON, with the headers of every other answer
        instead of its HTML page without them."""
        command = getattr(self, "command", None)
        if code == 501 and command:
            message = f"{command} is not a method the inspector answers"
        refused = Refused(code, message or HTTPStatus(code).phrase)
        self.close_connection = True
        body = json.dumps({"error": str(refused), "code": refused.code}).encode()
        self._send(code, "application/json; charset=utf-8", body, {"Connection": "close"})

    def _send(
        self, status: int, kind: str, body: bytes, headers: dict[str, str] | None = None
    ) -> None:
        extra = dict(headers or {})
        if getattr(self, "_unread", 0):
            # A body this answer did not read would be taken for the next request.
            extra["Connection"] = "close"
            self.close_connection = True
        self.send_response(status)
        if kind:
            self.send_header("Content-Type", kind)
        if status != 204:
            self.send_header("Content-Length", str(len(body)))
        for name, value in {**_HEADERS, **extra}.items():
            self.send_header(name, value)
        self.end_headers()
        if getattr(self, "command", None) != "HEAD":
            self.wfile.write(body)

    @property
    def sessions(self) -> Sessions:
        return self.owner.sessions

    def header(self, name: str) -> str:
        return str(self.headers.get(name) or "")

    def open_stream(self) -> Stream:
        """Answers 200 with an event stream, whose body the caller writes until it ends."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        for name, value in _HEADERS.items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        return self.wfile

    def gone(self) -> bool:
        # The browser sends nothing more on a stream's connection (it is closed after the
        # stream): the socket turns readable only when the browser closes it.
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)
