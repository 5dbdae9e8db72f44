"""The client's exception tree and the one function that maps gRPC errors onto it.

Every client method raises one of these, never a raw `grpc.RpcError`:

```
ContextWMError                  .code is the gRPC status name, .details the server's message
├── InvalidArgumentError        INVALID_ARGUMENT: the request broke a rule; fix it, do not retry
├── NotFoundError               NOT_FOUND: no such conversation or item
├── AlreadyExistsError          ALREADY_EXISTS: the conversation exists already
├── FailedPreconditionError     FAILED_PRECONDITION: the target is in the wrong state
├── AbortedError                ABORTED: it changed under you (a file since you read it)
├── PermissionDeniedError       PERMISSION_DENIED
├── UnauthenticatedError        UNAUTHENTICATED
├── ResourceExhaustedError      RESOURCE_EXHAUSTED: a quota or size limit; back off
├── UnavailableError            UNAVAILABLE: server down or unreachable; safe to retry
├── DeadlineExceededError       DEADLINE_EXCEEDED: the call outlived its timeout
├── RequestCancelledError       CANCELLED (not named CancelledError: asyncio has one)
├── InternalError               INTERNAL: a server bug; the details hold no internals
└── UnexpectedStatusError       every other status: UNKNOWN, OUT_OF_RANGE, UNIMPLEMENTED,
                                DATA_LOSS
```
"""

from __future__ import annotations

from collections.abc import Mapping

import grpc


class ContextWMError(Exception):
    """Base class of every error a contextwm client raises for a failed call.

    Attributes:
        code: Name of the gRPC status, e.g. "NOT_FOUND".
        details: The server's message (may be empty).
    """

    def __init__(self, code: str, details: str) -> None:
        super().__init__(f"{code}: {details}" if details else code)
        self.code = code
        self.details = details


class InvalidArgumentError(ContextWMError):
    """The server rejected the request's arguments (INVALID_ARGUMENT)."""


class NotFoundError(ContextWMError):
    """The conversation or item does not exist (NOT_FOUND)."""


class AlreadyExistsError(ContextWMError):
    """The conversation already exists (ALREADY_EXISTS)."""


class FailedPreconditionError(ContextWMError):
    """The target is not in a state that allows the call (FAILED_PRECONDITION)."""


class AbortedError(ContextWMError):
    """A concurrent change got in the way: e.g. a file changed since it was read (ABORTED).
    Read again, then retry."""


class PermissionDeniedError(ContextWMError):
    """The caller may not act on this namespace or resource (PERMISSION_DENIED)."""


class UnauthenticatedError(ContextWMError):
    """The call carried no valid credentials (UNAUTHENTICATED)."""


class ResourceExhaustedError(ContextWMError):
    """A quota, rate or message size limit was hit (RESOURCE_EXHAUSTED).

    Attributes:
        retry_after: Seconds after which the same call can succeed, when the server said
            (an API key over its request rate); None when it did not.
    """

    def __init__(self, code: str, details: str, retry_after: float | None = None) -> None:
        super().__init__(code, details)
        self.retry_after = retry_after


class UnavailableError(ContextWMError):
    """The server could not be reached or is shutting down (UNAVAILABLE)."""


class DeadlineExceededError(ContextWMError):
    """The call did not finish within its timeout (DEADLINE_EXCEEDED)."""


class RequestCancelledError(ContextWMError):
    """The call was cancelled (CANCELLED)."""


class InternalError(ContextWMError):
    """The server failed unexpectedly (INTERNAL)."""


class UnexpectedStatusError(ContextWMError):
    """Any other non-OK status (UNKNOWN, OUT_OF_RANGE, UNIMPLEMENTED, DATA_LOSS)."""


# The one mapping table. Every status except OK is listed, so a new class for a status is a
# one-line change here; tests check that the table stays complete.
STATUS_EXCEPTIONS: Mapping[grpc.StatusCode, type[ContextWMError]] = {
    grpc.StatusCode.CANCELLED: RequestCancelledError,
    grpc.StatusCode.UNKNOWN: UnexpectedStatusError,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.ABORTED: AbortedError,
    grpc.StatusCode.OUT_OF_RANGE: UnexpectedStatusError,
    grpc.StatusCode.UNIMPLEMENTED: UnexpectedStatusError,
    grpc.StatusCode.INTERNAL: InternalError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DATA_LOSS: UnexpectedStatusError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
}


def map_rpc_error(exc: grpc.RpcError) -> ContextWMError:
    """Translates a failed gRPC call into the most specific `ContextWMError`.

    The caller raises the result `from exc`, which keeps the gRPC error as the cause.

    Args:
        exc: The error raised by a sync (`grpc.Call`) or asyncio (`grpc.aio.AioRpcError`) call.

    Returns:
        An instance of the class `STATUS_EXCEPTIONS` names for the status, or of
        `UnexpectedStatusError` for a status it does not name.
    """
    # A bare grpc.RpcError (raised by some interceptors) has neither code() nor details().
    code_of = getattr(exc, "code", None)
    details_of = getattr(exc, "details", None)
    status = code_of() if callable(code_of) else grpc.StatusCode.UNKNOWN
    details = details_of() if callable(details_of) else None
    if not isinstance(status, grpc.StatusCode):
        status = grpc.StatusCode.UNKNOWN
    error_class = STATUS_EXCEPTIONS.get(status, UnexpectedStatusError)
    text = str(details) if details else ""
    if error_class is ResourceExhaustedError:
        return ResourceExhaustedError(status.name, text, _retry_after(exc))
    return error_class(status.name, text)


def with_details(exc: ContextWMError, details: str) -> ContextWMError:
    """An error of exc's class and status with other details (a ResourceExhaustedError keeps
    its retry_after): for a failure that says more than the server could."""
    if isinstance(exc, ResourceExhaustedError):
        return ResourceExhaustedError(exc.code, details, exc.retry_after)
    return type(exc)(exc.code, details)


def _retry_after(exc: grpc.RpcError) -> float | None:
    """The `retry-after` trailing metadata, in seconds; None without it (or unreadable)."""
    trailing_of = getattr(exc, "trailing_metadata", None)
    trailing = trailing_of() if callable(trailing_of) else None
    for name, value in trailing or ():
        if name == "retry-after":
            try:
                return float(value)
            except (TypeError, ValueError):
                return None
    return None
