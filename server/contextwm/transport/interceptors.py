"""Server interceptors: domain errors to statuses (the one place), and a log line per request."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from contextwm.domain.errors import ContextWMError

log = logging.getLogger("contextwm.requests")
# Our service's methods; the library's (health, reflection) are left alone.
SERVICE_PREFIX = "contextwm.v1.ContextService/"


def _abort(context: grpc.ServicerContext, exc: BaseException, method: str) -> None:
    """Aborts the call with the status the exception carries; never leaks internals."""
    if isinstance(exc, ContextWMError):
        context.abort(grpc.StatusCode[exc.code.name], exc.message)
    incident = uuid.uuid4().hex[:12]
    log.error("%s failed (incident %s)", method, incident, exc_info=exc)
    context.abort(grpc.StatusCode.INTERNAL, f"internal error (incident {incident}); see server log")


class ErrorInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg]
    """Maps ContextWMError to its status and anything else to INTERNAL, and logs each call at
    debug level with its duration and outcome."""

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = continuation(handler_call_details)
        if handler is None or handler.request_streaming:
            return handler  # health and reflection streams are library code
        method: str = handler_call_details.method
        if not method.startswith(f"/{SERVICE_PREFIX}"):
            return handler
        if handler.response_streaming:
            stream: Callable[[Any, grpc.ServicerContext], Iterator[Any]] = handler.unary_stream  # type: ignore[assignment]
            return grpc.unary_stream_rpc_method_handler(
                _streaming(stream, method),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        inner: Callable[[Any, grpc.ServicerContext], Any] = handler.unary_unary  # type: ignore[assignment]

        def wrapped(request: Any, context: grpc.ServicerContext) -> Any:
            start = time.perf_counter()
            outcome = "OK"
            try:
                return inner(request, context)
            except ContextWMError as exc:
                outcome = exc.code.name
                _abort(context, exc, method)
            except Exception as exc:  # servicers never abort themselves, so this is a bug
                outcome = "INTERNAL"
                _abort(context, exc, method)
            finally:
                if log.isEnabledFor(logging.DEBUG):
                    log.debug("%s %s %.1f ms", method, outcome, (time.perf_counter() - start) * 1e3)
            return None  # unreachable: abort raises

        return grpc.unary_unary_rpc_method_handler(
            wrapped,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def _streaming(
    inner: Callable[[Any, grpc.ServicerContext], Iterator[Any]], method: str
) -> Callable[[Any, grpc.ServicerContext], Iterator[Any]]:
    """The same mapping for a server-streaming call (logged when the stream ends)."""

    def wrapped(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        start = time.perf_counter()
        outcome = "OK"
        try:
            yield from inner(request, context)
        except ContextWMError as exc:
            outcome = exc.code.name
            _abort(context, exc, method)
        except Exception as exc:
            outcome = "INTERNAL"
            _abort(context, exc, method)
        finally:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("%s %s %.1f ms", method, outcome, (time.perf_counter() - start) * 1e3)

    return wrapped
