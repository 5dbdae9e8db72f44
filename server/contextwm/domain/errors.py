"""Domain errors that carry their status, so the core needs no grpc.

The transport's error interceptor is the one place that turns these into gRPC statuses;
anything else escaping the core becomes INTERNAL with a log line.
"""

from __future__ import annotations

import enum

__all__ = [
    "Aborted",
    "AlreadyExists",
    "ContextWMError",
    "DeadlineExceeded",
    "ErrorCode",
    "FailedPrecondition",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "ResourceExhausted",
    "Unauthenticated",
    "Unavailable",
]


class ErrorCode(enum.Enum):
    """Named like grpc.StatusCode members, which the transport looks up by name."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    UNAVAILABLE = "UNAVAILABLE"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    ABORTED = "ABORTED"
    UNAUTHENTICATED = "UNAUTHENTICATED"


class ContextWMError(Exception):
    """Base of the errors a caller can act on; the message is shown to them verbatim."""

    code: ErrorCode = ErrorCode.FAILED_PRECONDITION

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(ContextWMError):
    code = ErrorCode.INVALID_ARGUMENT


class NotFound(ContextWMError):
    code = ErrorCode.NOT_FOUND


class AlreadyExists(ContextWMError):
    code = ErrorCode.ALREADY_EXISTS


class ResourceExhausted(ContextWMError):
    """Over a limit or a quota; retry_after, when known, is the seconds until a retry can
    succeed (sent as trailing metadata `retry-after`)."""

    code = ErrorCode.RESOURCE_EXHAUSTED

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class FailedPrecondition(ContextWMError):
    code = ErrorCode.FAILED_PRECONDITION


class PermissionDenied(ContextWMError):
    code = ErrorCode.PERMISSION_DENIED


class Unauthenticated(ContextWMError):
    """No API key, or one that is unknown, malformed, revoked or expired."""

    code = ErrorCode.UNAUTHENTICATED


class Unavailable(ContextWMError):
    code = ErrorCode.UNAVAILABLE


class DeadlineExceeded(ContextWMError):
    """The caller stopped waiting: the work stops rather than finish for nobody."""

    code = ErrorCode.DEADLINE_EXCEEDED


class Aborted(ContextWMError):
    """A read-modify-write conflict: what the caller read has changed since; read it again
    and retry."""

    code = ErrorCode.ABORTED
