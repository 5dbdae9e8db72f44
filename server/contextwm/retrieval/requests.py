"""What callers ask retrieval for, what they get back, and the checks on the asking."""

from __future__ import annotations

from dataclasses import dataclass, field

from contextwm.conversations.validation import Limits, check_metadata_size, check_timestamp
from contextwm.domain.checks import check_range
from contextwm.domain.conversations import ConversationState
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.items import ROLES, ItemFilter, ScoredItem
from contextwm.retrieval.pipeline import TokenAccount
from contextwm.retrieval.timehints import TimeHint

# Ranked items an enhanced context draws on unless the request says otherwise: as many as
# the budget could hold at HIT_TOKENS each, at least MIN_HITS. Items are taken by relevance
# per token, so a short answer ranked 80th by score can be worth more than the 20th: on
# LongMemEval 100 candidates beat 60 or 80 by 4 points at 1024 tokens.
HIT_TOKENS = 40
MIN_HITS = 100


@dataclass(frozen=True, slots=True)
class ContextRequest:
    query: str | None
    max_tokens: int
    recent_share: float | None = None  # None: relevance decides; a share: the fixed split
    similarity_threshold: float | None = None
    max_history_items: int | None = None  # None: as many as the budget could hold
    include_neighbors: bool = True
    mode: str = "hybrid"
    time_hints: bool = True
    as_of: float | None = None  # when the query is asked; None: the conversation's newest time

    @property
    def hits(self) -> int:
        """How many ranked items the context draws on."""
        if self.max_history_items is not None:
            return self.max_history_items
        return max(MIN_HITS, self.max_tokens // HIT_TOKENS)


def check_context_request(request: ContextRequest, limits: Limits) -> None:
    """Raises InvalidArgument, naming the option at fault, for an option out of its range."""
    check_range("max_tokens", request.max_tokens, 1, limits.max_budget_tokens)
    if request.recent_share is not None:
        check_range("recent_share", request.recent_share, 0.0, 1.0)
    if request.max_history_items is not None:
        check_range("max_history_items", request.max_history_items, 0, limits.max_top_k)
    if request.similarity_threshold is not None:
        check_range("similarity_threshold", request.similarity_threshold, -1.0, 1.0)
    if request.as_of is not None:
        check_timestamp("as_of", request.as_of)


@dataclass(frozen=True, slots=True)
class EnhancedContext:
    recent: tuple[ScoredItem, ...]
    history: tuple[ScoredItem, ...]
    text: str
    query: str
    query_from_focus: bool
    tokens: TokenAccount
    time_hint: TimeHint | None
    unindexed_items: int
    state: ConversationState


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    conversation_id: str | None = None
    top_k: int = 10
    include_window: bool = False
    filter: ItemFilter = field(default_factory=ItemFilter)
    mode: str = "hybrid"
    similarity_threshold: float | None = None
    as_of: float | None = None  # when the query is asked; None: the conversation's newest time
    time_hints: bool = True


def check_search_request(request: SearchRequest, limits: Limits) -> None:
    """Raises InvalidArgument or ResourceExhausted, naming the option at fault."""
    check_range("top_k", request.top_k, 1, limits.max_top_k)
    if not request.query.strip():
        raise InvalidArgument("query is empty")
    if request.similarity_threshold is not None:
        check_range("similarity_threshold", request.similarity_threshold, -1.0, 1.0)
    if request.as_of is not None:
        check_timestamp("as_of", request.as_of)
    check_filter(request.filter, limits)


def check_filter(f: ItemFilter, limits: Limits) -> None:
    """A filter's roles must be known, its times plausible, its metadata within the limits."""
    unknown = sorted(f.roles - ROLES)
    if unknown:
        shown = ", ".join(repr(r) for r in unknown[:5])
        raise InvalidArgument(
            f"filter.roles: unknown role {shown}; roles are: {', '.join(sorted(ROLES))}"
        )
    if f.since is not None:
        check_timestamp("filter.since", f.since)
    if f.until is not None:
        check_timestamp("filter.until", f.until)
    # A filter asking for more pairs than an item may carry could never match.
    check_metadata_size("filter", f.metadata, limits)


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    hits: tuple[ScoredItem, ...]
    time_hint: TimeHint | None
