"""The client's value types: frozen dataclasses for what goes over the wire, free of protobuf.

Vocabularies stay strings, as on the wire: roles (user, assistant, system, tool, file, error),
flags (pinned, error, code, question, solution), file kinds (read, write, mention), item states
(window, archived, compacted, reverted), conversation states (general, coding, debugging,
research) and retrieval modes (hybrid, dense, lexical). Datetimes the client returns are
timezone-aware UTC; datetimes it is given without a timezone are taken as UTC.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class FileRef:
    """A file an item refers to.

    Attributes:
        path: The file's path, as the agent saw it.
        kind: "read", "write" or "mention".
    """

    path: str
    kind: str


@dataclass(frozen=True, slots=True)
class NewItem:
    """An item to append.

    Attributes:
        content: The item's text.
        role: One of user, assistant, system, tool, file, error.
        timestamp: Event time for historic data; server time when None. Naive means UTC.
        flags: Importance flags to set (the server may detect more).
        metadata: String pairs returned unchanged wherever the item appears.
        file: The file the item refers to, if any.
        idempotency_key: A retried append with the same key returns the first result.
    """

    content: str
    role: str = "user"
    timestamp: datetime | None = None
    flags: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    file: FileRef | None = None
    idempotency_key: str | None = None


@dataclass(frozen=True, slots=True)
class Item:
    """A stored item.

    Attributes:
        conversation_id: The conversation the item belongs to.
        seq: Server-assigned position, increasing per conversation from 1.
        role: The item's role.
        content: The item's text.
        timestamp: Event time (UTC).
        token_count: Tokens of the content in the conversation's encoding.
        flags: Client flags and detected flags together.
        metadata: The metadata given at append time.
        file: The file the item refers to, if any.
        state: "window", "archived", "compacted" or "reverted".
    """

    conversation_id: str
    seq: int
    role: str
    content: str
    timestamp: datetime
    token_count: int
    flags: tuple[str, ...]
    metadata: Mapping[str, str]
    file: FileRef | None
    state: str


@dataclass(frozen=True, slots=True)
class ScoreParts:
    """Why an item scored what it did; parts that do not apply are 0."""

    recency: float
    importance: float
    similarity: float
    lexical: float
    role: float
    time: float


@dataclass(frozen=True, slots=True)
class ScoredItem:
    """An item with its score, as retrieval returns it.

    Attributes:
        item: The item.
        score: Retrieval score for history hits, relevance score for window items.
        parts: The parts the score was made of.
        neighbor_of: Seq of the hit this item was brought along with, or None for a hit.
    """

    item: Item
    score: float
    parts: ScoreParts
    neighbor_of: int | None

    @property
    def content(self) -> str:
        """The item's text."""
        return self.item.content

    @property
    def metadata(self) -> Mapping[str, str]:
        """The item's metadata."""
        return self.item.metadata

    @property
    def seq(self) -> int:
        """The item's seq."""
        return self.item.seq

    @property
    def role(self) -> str:
        """The item's role."""
        return self.item.role

    @property
    def timestamp(self) -> datetime:
        """The item's event time (UTC)."""
        return self.item.timestamp

    @property
    def token_count(self) -> int:
        """The item's token count."""
        return self.item.token_count


@dataclass(frozen=True, slots=True)
class WindowStats:
    """Fill and limits of a conversation's window.

    Attributes:
        item_count: Items in the window.
        token_count: Tokens in the window.
        token_limit: The current token limit (differs from the setting when it adapts).
        item_limit: The item limit.
    """

    item_count: int
    token_count: int
    token_limit: int
    item_limit: int


@dataclass(frozen=True, slots=True)
class ScoringWeights:
    """Weights of the relevance score; None and missing keys keep the server defaults.

    Attributes:
        recency: Weight of the recency decay, 0..1.
        similarity: Weight of the similarity to the conversation's focus.
        importance: Added per importance flag, keyed by flag.
        role: Added per role, keyed by role.
    """

    recency: float | None = None
    similarity: float | None = None
    importance: Mapping[str, float] = field(default_factory=dict)
    role: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConversationSettings:
    """Per-conversation settings. None means the server default (or unchanged on update).

    Settings the server returns have every field set.
    """

    window_max_tokens: int | None = None
    window_max_items: int | None = None
    encoding: str | None = None
    recency_half_life_seconds: float | None = None
    recency_half_life_items: float | None = None
    focus_items: int | None = None
    similarity_threshold: float | None = None
    adaptive_window: bool | None = None
    detect_importance: bool | None = None
    weights: ScoringWeights | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """A conversation's effective settings and statistics.

    Attributes:
        namespace: The tenant scope.
        conversation_id: The client-chosen id.
        settings: Effective settings, every field set.
        window: The window's fill and limits.
        archived_items: Items evicted to the archive.
        total_items: All items.
        state: "general", "coding", "debugging" or "research".
        created_at: Creation time (UTC).
        last_item_at: Timestamp of the newest item (UTC), None when empty.
        last_seq: Seq of the newest item, 0 when empty.
        pending_embeddings: Items dense search does not see yet.
    """

    namespace: str
    conversation_id: str
    settings: ConversationSettings
    window: WindowStats
    archived_items: int
    total_items: int
    state: str
    created_at: datetime
    last_item_at: datetime | None
    last_seq: int
    pending_embeddings: int


@dataclass(frozen=True, slots=True)
class AppendResult:
    """The outcome of appending one item.

    Attributes:
        seq: The item's seq.
        token_count: The item's token count.
        flags: Effective flags: client flags and detected flags.
        duplicate: True when an earlier append with the same idempotency key was returned.
        evicted_seqs: Items this call moved from the window to the archive.
        window: The window after the call.
    """

    seq: int
    token_count: int
    flags: tuple[str, ...]
    duplicate: bool
    evicted_seqs: tuple[int, ...]
    window: WindowStats


@dataclass(frozen=True, slots=True)
class AppendedItem:
    """The outcome for one item of a batch append (see `AppendResult` for the fields)."""

    seq: int
    token_count: int
    flags: tuple[str, ...]
    duplicate: bool


@dataclass(frozen=True, slots=True)
class AppendBatchResult:
    """The outcome of a batch append.

    Attributes:
        results: One per appended item, in request order.
        evicted_seqs: Items this call moved from the window to the archive.
        window: The window after the call.
    """

    results: tuple[AppendedItem, ...]
    evicted_seqs: tuple[int, ...]
    window: WindowStats


@dataclass(frozen=True, slots=True)
class TokenAccount:
    """Where the tokens of an enhanced context went.

    Attributes:
        budget: The requested budget.
        total: Tokens of the whole rendered text; never above budget.
        recent: Tokens of the recent-context section.
        history: Tokens of the historical-context section.
        query: Tokens of the current-query section.
        recent_omitted: Window items that did not fit.
        encoding: The encoding the tokens were counted in.
    """

    budget: int
    total: int
    recent: int
    history: int
    query: int
    recent_omitted: int
    encoding: str


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A time range the server read from a query.

    Attributes:
        since: Start (UTC), None when open.
        until: End (UTC), None when open.
        phrase: The words the range was read from, e.g. "last week".
    """

    since: datetime | None
    until: datetime | None
    phrase: str


@dataclass(frozen=True, slots=True)
class EnhancedContext:
    """Recent window plus relevant history under a token budget.

    Attributes:
        text: The rendered text to hand to a model.
        recent: Window items, chronological.
        history: History hits and their neighbours, chronological.
        query: The query used; the focus text when the request had none.
        query_from_focus: True when the focus stood in for the query.
        tokens: Where the tokens went.
        time_range: The time range read from the query, if any.
        unindexed_items: Items not embedded yet when the call ran (found lexically only).
        state: The conversation's state: general, coding, debugging or research.
    """

    text: str
    recent: tuple[ScoredItem, ...]
    history: tuple[ScoredItem, ...]
    query: str
    query_from_focus: bool
    tokens: TokenAccount
    time_range: TimeRange | None
    unindexed_items: int
    state: str

    @property
    def total_tokens(self) -> int:
        """Tokens of the whole rendered text (`tokens.total`)."""
        return self.tokens.total


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Search hits, best first.

    Attributes:
        hits: The hits.
        time_range: The time range read from the query, if any.
    """

    hits: tuple[ScoredItem, ...]
    time_range: TimeRange | None


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing.

    Attributes:
        items: The page's entries.
        next_page_token: Pass to the next call to continue; empty on the last page.
    """

    items: tuple[T, ...]
    next_page_token: str
