"""Server interceptors: domain errors to statuses (the one place), unparsable requests to
INVALID_ARGUMENT, API keys admitted (transport/access.py), and a log line, an observation
(for the metrics) and where it applies an audit line per request."""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import grpc

from contextwm.domain import deadlines
from contextwm.domain.errors import (
    ContextWMError,
    DeadlineExceeded,
    InvalidArgument,
    ResourceExhausted,
)
from contextwm.observability.audit import AuditLog
from contextwm.transport.access import CallAccess, begin_call, call_subject

log = logging.getLogger("contextwm.requests")
# Our service's methods; the library's (health, reflection) are left alone.
SERVICE_PREFIX = "contextwm.v1.ContextService/"

# Told of every finished ContextService call: the method's name ("Append"), its status
# code's name ("OK", "NOT_FOUND", ...), the seconds it took and the caller's key id (None:
# no key).
CallObserver = Callable[[str, str, float, str | None], None]


class _Unparsable:
    """Stands for a request whose bytes did not parse, so the handler can refuse it."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _tolerant(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    """grpcio answers a request that fails to parse with INTERNAL and a logged traceback; the
    client sent bad bytes, so the handler refuses it as INVALID_ARGUMENT instead."""
    if deserializer is None:
        return None

    def parse(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception as exc:
            return _Unparsable(str(exc) or type(exc).__name__)

    return parse


class _OncePerInterval:
    """Logs one line per interval at most, counting the ones it held back, so a client
    sending garbage cannot flood the log."""

    def __init__(self, interval: float = 10.0) -> None:
        self._interval = interval
        self._next = 0.0
        self._held = 0
        self._lock = threading.Lock()

    def warn(self, message: str, *args: Any) -> None:
        with self._lock:
            now = time.monotonic()
            if now < self._next:
                self._held += 1
                return
            held, self._held, self._next = self._held, 0, now + self._interval
        suffix = f" ({held} more since the last such line)" if held else ""
        log.warning(message + suffix, *args)


_unparsable_log = _OncePerInterval()


def _refuse_unparsable(
    context: grpc.ServicerContext, request: _Unparsable, method: str
) -> NoReturn:
    _unparsable_log.warn("%s: refused a request that does not parse: %s", method, request.reason)
    context.abort(
        grpc.StatusCode.INVALID_ARGUMENT,
        f"the request does not parse as the message {method} expects ({request.reason});"
        " check that the client's stubs come from this server's proto",
    )


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1e3


def _reporter(
    method: str, observe: CallObserver | None, audit: AuditLog | None
) -> Callable[[str, float], None]:
    """Reports a finished call of method: a debug log line, the observer and the audit
    trail if any."""
    name = method.rpartition("/")[2]

    def report(outcome: str, start: float) -> None:
        seconds = time.perf_counter() - start
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s %s %.1f ms", method, outcome, seconds * 1e3)
        subject = call_subject()
        if observe is not None:
            observe(name, outcome, seconds, subject.key_id)
        if audit is not None:
            audit.call(name, outcome, subject)

    return report


def as_answered(outcome: str, context: grpc.ServicerContext) -> str:
    """The status the client got: a call that ended without an error after the client
    stopped waiting (gone, out of time, or cut by shutdown) was answered by gRPC, not by us."""
    if outcome != "OK" or context.is_active():
        return outcome
    left = context.time_remaining()
    return "DEADLINE_EXCEEDED" if left is not None and left <= 0 else "CANCELLED"


# Status messages travel in a header, percent-encoded (a non-ASCII byte takes 3), and one
# over gRPC's 8 KiB metadata limit never reaches the client, who sees RESOURCE_EXHAUSTED
# "Stream removed" instead: messages that quote a huge bad value are cut well below it.
MAX_MESSAGE_BYTES = 2000


def _shortened(message: str) -> str:
    data = message.encode("utf-8", errors="replace")
    if len(data) <= MAX_MESSAGE_BYTES:
        return message
    head = data[: MAX_MESSAGE_BYTES - 80].decode("utf-8", errors="ignore")
    return f"{head}... (message cut from {len(message)} characters)"


def _abort(context: grpc.ServicerContext, exc: BaseException, method: str) -> None:
    """Aborts the call with the status the exception carries; never leaks internals."""
    if isinstance(exc, ContextWMError):
        if isinstance(exc, ResourceExhausted) and exc.retry_after is not None:
            context.set_trailing_metadata((("retry-after", f"{exc.retry_after:.3f}"),))
        context.abort(grpc.StatusCode[exc.code.name], _shortened(exc.message))
    incident = uuid.uuid4().hex[:12]
    log.error("%s failed (incident %s)", method, incident, exc_info=exc)
    context.abort(grpc.StatusCode.INTERNAL, f"internal error (incident {incident}); see server log")


class ErrorInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """Maps ContextWMError to its status and anything else to INTERNAL, admits each call
    through `access` (API keys), and reports each call with its duration and outcome: a
    debug log line, the observer and the audit trail if any."""

    def __init__(self, observe: CallObserver | None = None, audit: AuditLog | None = None) -> None:
        self._observe = observe
        self._audit = audit
        # Admits each call (API keys); set once the store is open, before any call is served.
        self.access: CallAccess | None = None

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = continuation(handler_call_details)
        method: str = handler_call_details.method
        if handler is None or not method.startswith(f"/{SERVICE_PREFIX}"):
            return handler  # health and reflection are library code
        report = _reporter(method, self._observe, self._audit)
        name = method.rpartition("/")[2]
        admit: Callable[[Any], Any] = (
            (lambda inner: inner)
            if self.access is None
            else functools.partial(
                self.access.wrap, name, handler.request_streaming, handler.response_streaming
            )
        )
        if handler.request_streaming and handler.response_streaming:
            both: Callable[[Any, grpc.ServicerContext], Iterator[Any]] = admit(
                handler.stream_stream
            )
            return grpc.stream_stream_rpc_method_handler(
                _streaming(
                    lambda requests, context: both(_parsed(requests), context), method, report
                ),
                request_deserializer=_tolerant(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        if handler.response_streaming:
            stream: Callable[[Any, grpc.ServicerContext], Iterator[Any]] = admit(
                handler.unary_stream
            )
            return grpc.unary_stream_rpc_method_handler(
                _streaming(stream, method, report),
                request_deserializer=_tolerant(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        if handler.request_streaming:
            chunks: Callable[[Any, grpc.ServicerContext], Any] = admit(handler.stream_unary)
            return grpc.stream_unary_rpc_method_handler(
                _unary(
                    lambda requests, context: chunks(_parsed(requests), context), method, report
                ),
                request_deserializer=_tolerant(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        return grpc.unary_unary_rpc_method_handler(
            _unary(admit(handler.unary_unary), method, report),
            request_deserializer=_tolerant(handler.request_deserializer),
            response_serializer=handler.response_serializer,
        )


class _StreamBroken(Exception):
    """The client's request stream ended in an error: it cancelled, its deadline passed, or a
    message was over the size limit. gRPC has ended the call with its own status already."""


def _parsed(requests: Iterator[Any]) -> Iterator[Any]:
    """A client stream's requests; one that does not parse ends the call INVALID_ARGUMENT."""
    try:
        for request in requests:
            if isinstance(request, _Unparsable):
                raise InvalidArgument(
                    f"a request of the stream does not parse ({request.reason}); check that"
                    " the client's stubs come from this server's proto"
                )
            yield request
    except grpc.RpcError as exc:
        raise _StreamBroken from exc


@contextmanager
def _answered(
    request: Any,
    context: grpc.ServicerContext,
    method: str,
    report: Callable[[str, float], None],
) -> Iterator[None]:
    """Runs a call's body: refuses a request that does not parse, applies the caller's
    deadline, turns what the body raises into a status (abort raises), and reports the
    outcome once the call ends."""
    start = time.perf_counter()
    begin_call()
    if isinstance(request, _Unparsable):
        report("INVALID_ARGUMENT", start)
        _refuse_unparsable(context, request, method)  # aborts: raises
    outcome = "OK"
    try:
        with deadlines.caller_deadline(context.time_remaining()):
            deadlines.check("waiting for a free worker")
            yield
    except DeadlineExceeded as exc:
        outcome = exc.code.name
        log.info("%s: %s (after %.0f ms)", method, exc.message, _ms(start))
        _abort(context, exc, method)
    except ContextWMError as exc:
        outcome = exc.code.name
        _abort(context, exc, method)
    except _StreamBroken:
        outcome = "CANCELLED"
        context.abort(grpc.StatusCode.CANCELLED, "the request stream broke off")
    except Exception as exc:  # servicers never abort themselves, so this is a bug
        outcome = "INTERNAL"
        _abort(context, exc, method)
    finally:
        report(as_answered(outcome, context), start)


def _unary(
    inner: Callable[[Any, grpc.ServicerContext], Any],
    method: str,
    report: Callable[[str, float], None],
) -> Callable[[Any, grpc.ServicerContext], Any]:
    """The mapping for a call with one response (its request may be a stream)."""

    def wrapped(request: Any, context: grpc.ServicerContext) -> Any:
        with _answered(request, context, method, report):
            return inner(request, context)
        return None  # unreachable: a failure aborts, which raises

    return wrapped


def _streaming(
    inner: Callable[[Any, grpc.ServicerContext], Iterator[Any]],
    method: str,
    report: Callable[[str, float], None],
) -> Callable[[Any, grpc.ServicerContext], Iterator[Any]]:
    """The same mapping for a response-streaming call (reported when the stream ends)."""

    def wrapped(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        with _answered(request, context, method, report):
            yield from inner(request, context)

    return wrapped
