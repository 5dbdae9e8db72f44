"""Typed Python client (sync and asyncio) for the contextwm context window manager.

Needs grpcio and protobuf only. `Client` and `AsyncClient` wrap the generated stubs; results
are frozen dataclasses; failed calls raise `ContextWMError` subclasses.
"""

from contextwm_client._aio import AsyncClient
from contextwm_client._client import Client
from contextwm_client._exceptions import (
    AlreadyExistsError,
    ContextWMError,
    DeadlineExceededError,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    RequestCancelledError,
    ResourceExhaustedError,
    UnauthenticatedError,
    UnavailableError,
    UnexpectedStatusError,
    map_rpc_error,
)
from contextwm_client._types import (
    AppendBatchResult,
    AppendedItem,
    AppendResult,
    Conversation,
    ConversationSettings,
    EnhancedContext,
    FileRef,
    Item,
    NewItem,
    Page,
    ScoredItem,
    ScoreParts,
    ScoringWeights,
    SearchResult,
    TimeRange,
    TokenAccount,
    WindowStats,
)

__all__ = [
    "AlreadyExistsError",
    "AppendBatchResult",
    "AppendResult",
    "AppendedItem",
    "AsyncClient",
    "Client",
    "ContextWMError",
    "Conversation",
    "ConversationSettings",
    "DeadlineExceededError",
    "EnhancedContext",
    "FailedPreconditionError",
    "FileRef",
    "InternalError",
    "InvalidArgumentError",
    "Item",
    "NewItem",
    "NotFoundError",
    "Page",
    "PermissionDeniedError",
    "RequestCancelledError",
    "ResourceExhaustedError",
    "ScoreParts",
    "ScoredItem",
    "ScoringWeights",
    "SearchResult",
    "TimeRange",
    "TokenAccount",
    "UnauthenticatedError",
    "UnavailableError",
    "UnexpectedStatusError",
    "WindowStats",
    "map_rpc_error",
]
