"""The client's value types: frozen dataclasses for what goes over the wire, free of protobuf.

Vocabularies stay strings, as on the wire, typed with the `Literal` aliases of `_vocabulary`
(`Role`, `Flag`, `ItemState`, ...). Datetimes the client returns are timezone-aware UTC;
datetimes it is given without a timezone are taken as UTC. Results with long text have short
reprs (`_repr`); the full text is in the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

from contextwm_client._deprecation import warn_renamed
from contextwm_client._repr import ShortRepr
from contextwm_client._vocabulary import (
    Category,
    ChunkStrategy,
    ContributorType,
    ConversationState,
    EditKind,
    EventKind,
    FactKind,
    FileKind,
    Flag,
    ItemKind,
    ItemState,
    Role,
    Treatment,
    Unspecified,
    UsageSource,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class FileRef:
    """A file an item refers to.

    Attributes:
        path: The file's path, as the agent saw it.
        kind: "read", "write" or "mention".
        whole_file: The item's content is the whole file; a whole copy supersedes earlier
            whole copies of the same path. None lets the server decide (true for reads).
    """

    path: str
    kind: FileKind
    whole_file: bool | None = None


@dataclass(frozen=True, slots=True, repr=False)
class NewItem(ShortRepr):
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

    _long_fields = frozenset({"content"})

    content: str
    role: Role = "user"
    timestamp: datetime | None = None
    flags: tuple[Flag, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    file: FileRef | None = None
    idempotency_key: str | None = None

    def as_message(self) -> dict[str, str]:
        """The item as a chat message: {"role": role, "content": content}."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True, repr=False)
class Item(ShortRepr):
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
        kind: "message", or "compaction" for the marker item a compaction adds.
        compaction: The compaction a marker records (set on markers in listings).
    """

    _long_fields = frozenset({"content"})

    conversation_id: str
    seq: int
    role: Role
    content: str
    timestamp: datetime
    token_count: int
    flags: tuple[Flag, ...]
    metadata: Mapping[str, str]
    file: FileRef | None
    state: ItemState | Unspecified
    kind: ItemKind = "message"
    compaction: Compaction | None = None


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
        replaced: The content here is a one-line notice: a later whole copy of the item's
            file superseded it (the stored item is unchanged).
        category: With categories asked for, the category the item was kept in ("context"
            for history hits; "system", "dialog" or "system_output" for window items);
            None otherwise.
    """

    item: Item
    score: float
    parts: ScoreParts
    neighbor_of: int | None
    replaced: bool = False
    category: Category | None = None

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
    def role(self) -> Role:
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
class CategoryBudget:
    """A category's part of the budget, as shares 0..1; None keeps the current value.

    Attributes:
        category: "system", "context", "dialog" or "system_output".
        share: The category's share of the budget.
        min_share: It never lends below this.
        max_share: It never borrows past this ("system" excepted: it is never trimmed).
    """

    # Any str is accepted (an unknown name fails before the call), so that a name parsed from
    # text needs no cast; reading back gives a Category (or "unspecified").
    category: Category | str
    share: float | None = None
    min_share: float | None = None
    max_share: float | None = None


@dataclass(frozen=True, slots=True)
class CategoryOptions:
    """Asks get_context to assemble by category budgets, with contributors.

    Budgets and weights change the conversation's for this request only.

    Attributes:
        budgets: Budgets to change, at most one per category.
        contributor_weights: Weights 0..1 (0 switches one off), keyed by contributor type:
            "working_files", "retrieval", "codebase_map" or "project_docs".
        files: Working files to offer before those the items reference (relative to the
            workspace, or absolute inside it).
    """

    budgets: tuple[CategoryBudget, ...] = ()
    contributor_weights: Mapping[str, float] = field(default_factory=dict)
    files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """What the server removes by itself. None takes the wider policy's (a conversation's
    its namespace's, a namespace's the server default's); 0 switches a limit off.

    Window items, the active context (items from the last compaction on) and what a
    checkpoint restore would bring back are never removed by the item limits.

    Attributes:
        max_age_seconds: Archived and compacted items whose timestamp is older than this
            (against the server's clock) are removed.
        max_archived_items: Beyond this many archived and compacted items, the oldest go.
        inactive_seconds: A conversation with no append for this long is removed whole.
        remove_pinned: Whether the item limits may remove pinned items (default False).
    """

    max_age_seconds: float | None = None
    max_archived_items: int | None = None
    inactive_seconds: float | None = None
    remove_pinned: bool | None = None


@dataclass(frozen=True, slots=True)
class ConversationSettings:
    """Per-conversation settings. None means the server default (or unchanged on update).

    Settings the server returns have every field set. The agent-loop settings:

    Attributes:
        model: A model of the server's models table, whose context limit, reply reserve and
            encoding apply unless set here; "" for none.
        context_limit: Context limit of the agent's LLM in tokens; 0 takes the model's.
            Without a limit nothing is managed automatically (should_compact stays false).
        reserved_reply_tokens: Tokens kept free for the reply; 0 takes the model's.
        compaction_threshold: Fill ratio of the usable context at which should_compact is
            set, 0 < t <= 1.
        compaction_enabled: False switches should_compact off.
        mask_tool_outputs_after_turns: Tool outputs with this many assistant turns after
            them show as a one-line placeholder in the active context; 0 switches it off.
        replace_duplicate_reads: Replace file contents superseded by a later whole copy of
            the same file by a notice.
        workspace_root: The agent's workspace, an absolute directory under a root the server
            allows; "" for the server's own.
        category_budgets: Budgets of the categories, used by requests that ask for them; an
            entry changes the named category's set fields. Read back: all four categories.
        contributor_weights: Contributor weights 0..1 keyed by contributor type (0 switches
            one off). Read back: all four types.
        recent_min_items: The newest window items every enhanced context keeps whatever the
            query, as long as they take at most a quarter of the budget (0..1000).
        protected_tail_items: The newest items no append evicts, whatever older items
            score: at most this many (1..1000000) ...
        protected_tail_share: ... while together they take at most this share of the
            window's item limit and of its token limit (0..1). The newest item is always
            protected, unless it alone is larger than the window.
        retention: The conversation's own retention policy; each field set overrides its
            namespace's. Read back: only the fields the conversation set.
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
    model: str | None = None
    context_limit: int | None = None
    reserved_reply_tokens: int | None = None
    compaction_threshold: float | None = None
    compaction_enabled: bool | None = None
    mask_tool_outputs_after_turns: int | None = None
    replace_duplicate_reads: bool | None = None
    workspace_root: str | None = None
    category_budgets: tuple[CategoryBudget, ...] | None = None
    contributor_weights: Mapping[str, float] | None = None
    recent_min_items: int | None = None
    protected_tail_items: int | None = None
    protected_tail_share: float | None = None
    retention: RetentionPolicy | None = None


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
        last_event_id: The newest event's id (0: none yet); `watch(after_event_id=...)`
            from it streams only what happens next.
    """

    namespace: str
    conversation_id: str
    settings: ConversationSettings
    window: WindowStats
    archived_items: int
    total_items: int
    state: ConversationState | Unspecified
    created_at: datetime
    last_item_at: datetime | None
    last_seq: int
    pending_embeddings: int
    last_event_id: int = 0


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
        out_of_order: True when the item's timestamp is before that of an item stored
            before it (kept as given; contexts show items in time order).
    """

    seq: int
    token_count: int
    flags: tuple[Flag, ...]
    duplicate: bool
    evicted_seqs: tuple[int, ...]
    window: WindowStats
    out_of_order: bool = False


@dataclass(frozen=True, slots=True)
class AppendedItem:
    """The outcome for one item of a batch append (see `AppendResult` for the fields)."""

    seq: int
    token_count: int
    flags: tuple[Flag, ...]
    duplicate: bool
    out_of_order: bool = False


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

    @property
    def out_of_order(self) -> int:
        """How many items came with a timestamp before that of an item stored before them."""
        return sum(r.out_of_order for r in self.results)


@dataclass(frozen=True, slots=True)
class ImportItem:
    """One item of a bulk import, and where it goes.

    Attributes:
        conversation_id: The conversation (created with defaults if missing).
        item: The item; give it an idempotency_key so that a re-sent import adds it once.
        namespace: Namespace; None uses the client's.
        source: Your name for where it came from ("timeline.jsonl:12"), quoted in failures.
    """

    conversation_id: str
    item: NewItem
    namespace: str | None = None
    source: str = ""


@dataclass(frozen=True, slots=True)
class ImportFailure:
    """An item the server refused during an import; the rest went on.

    Attributes:
        index: The item's position in the import, from 0.
        source: The item's source as sent.
        code: The status name Append would have returned ("INVALID_ARGUMENT", ...).
        message: Why.
    """

    index: int
    source: str
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class RestoredExport:
    """The outcome of restoring an export.

    Attributes:
        restored: Conversations written.
        unchanged: Conversations stored already with exactly the exported rows (a resumed
            restore): nothing was written for them.
        items: Items of the conversations written.
    """

    restored: int
    unchanged: int
    items: int


@dataclass(frozen=True, slots=True)
class ImportResult:
    """The outcome of a bulk import.

    Attributes:
        appended: Items stored.
        duplicates: Items whose idempotency_key was stored already (nothing added).
        conversations: Conversations appended to.
        evicted: Items moved from windows to archives.
        failed: Items refused (all of them, also past the listed failures).
        failures: The refused items, in order, at most 1,000.
        out_of_order: Items stored with a timestamp before that of an item stored before
            them in their conversation (kept as given; contexts show items in time order).
    """

    appended: int
    duplicates: int
    conversations: int
    evicted: int
    failed: int
    failures: tuple[ImportFailure, ...]
    out_of_order: int = 0


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
        system: Tokens of the system section (with categories only).
    """

    budget: int
    total: int
    recent: int
    history: int
    query: int
    recent_omitted: int
    encoding: str
    system: int = 0


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
class CategoryAllocation:
    """What one category was allowed and used, in tokens.

    Attributes:
        category: "system", "context", "dialog" or "system_output".
        minimum: The tokens it never lends below.
        maximum: The tokens it never borrows past.
        granted: Its tokens after lending and borrowing.
        used: Its kept pieces plus its heading.
        lent: Tokens it lent to other categories.
        borrowed: Tokens it borrowed from other categories.
    """

    category: Category | Unspecified
    minimum: int
    maximum: int
    granted: int
    used: int
    lent: int
    borrowed: int


@dataclass(frozen=True, slots=True, repr=False)
class ContributorPiece(ShortRepr):
    """A contributor's piece of context and whether it was chosen.

    Attributes:
        type: "working_files", "retrieval", "codebase_map" or "project_docs".
        source: A workspace path, the doc's file name, "codebase", or "#seq" of a retrieval hit.
        chosen: It is in the rendered text.
        weight: Its contributor's weight.
        salience: Similarity to the query (or the focus), 0..1.
        score: weight x salience: the order in which the context category is filled.
        tokens: What it costs in the response.
        detail: "content", "diff against HEAD", "trimmed from N tokens", ...
        reason: Why it was left out; "" when chosen.
        content: The piece's text as rendered; "" when left out.
    """

    _long_fields = frozenset({"content"})

    type: ContributorType | Unspecified
    source: str
    chosen: bool
    weight: float
    salience: float
    score: float
    tokens: int
    detail: str
    reason: str
    content: str


@dataclass(frozen=True, slots=True)
class AllocationReport:
    """How get_context shared the budget between the categories, and which pieces it chose.

    Attributes:
        allocated: The tokens shared between the categories: the budget less the query.
        categories: One per category, in the order system, context, dialog, system_output.
        contributors: Chosen pieces first, then those left out, each by score.
    """

    allocated: int
    categories: tuple[CategoryAllocation, ...]
    contributors: tuple[ContributorPiece, ...]

    def category(self, name: Category) -> CategoryAllocation:
        """Returns the named category's allocation.

        Raises:
            KeyError: The report has no such category (the message names those it has).
        """
        for allocation in self.categories:
            if allocation.category == name:
                return allocation
        known = [allocation.category for allocation in self.categories]
        raise KeyError(f"no category {name!r} in the report; it has {known}")

    @property
    def chosen(self) -> tuple[ContributorPiece, ...]:
        """The pieces in the rendered text."""
        return tuple(piece for piece in self.contributors if piece.chosen)

    @property
    def left_out(self) -> tuple[ContributorPiece, ...]:
        """The pieces left out, each with its reason."""
        return tuple(piece for piece in self.contributors if not piece.chosen)


@dataclass(frozen=True, slots=True, repr=False)
class EnhancedContext(ShortRepr):
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
        allocation: The category allocation and contributor pieces; set when the request
            asked for categories.
    """

    _long_fields = frozenset({"text", "query"})

    text: str
    recent: tuple[ScoredItem, ...]
    history: tuple[ScoredItem, ...]
    query: str
    query_from_focus: bool
    tokens: TokenAccount
    time_range: TimeRange | None
    unindexed_items: int
    state: ConversationState | Unspecified
    allocation: AllocationReport | None = None

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
        entries: The page's entries (conversations, items or context edits), in order.
        next_page_token: Pass to the next call to continue; empty on the last page.
    """

    entries: tuple[T, ...]
    next_page_token: str

    @property
    def items(self) -> tuple[T, ...]:
        """Deprecated name of `entries` (as in `ActiveContext.entries`), kept for one release."""
        warn_renamed("Page.items", "Page.entries")
        return self.entries


# ---------------------------------------------------------------- agent loop


@dataclass(frozen=True, slots=True)
class Optimisations:
    """Tokens the active context's optimisations save, and what truncations removed.

    Attributes:
        masked_items: Tool outputs shown as a placeholder.
        masked_tokens_saved: Tokens the placeholders save.
        duplicate_reads: File contents replaced by a notice (a later whole copy exists).
        duplicate_tokens_saved: Tokens the notices save.
        truncated_items: Items truncations removed from the active context.
        truncated_tokens: Their tokens.
    """

    masked_items: int
    masked_tokens_saved: int
    duplicate_reads: int
    duplicate_tokens_saved: int
    truncated_items: int
    truncated_tokens: int


@dataclass(frozen=True, slots=True, repr=False)
class Usage(ShortRepr):
    """The active context's size against the model's limit: what to check before each request.

    Attributes:
        active_tokens: The active context as the server counts it.
        reported_tokens: The provider's last report plus what was appended since; 0 if none.
        used_tokens: The larger of the two.
        source: Which one used_tokens is: "server" or "reported".
        context_limit: The LLM's context limit; 0 when the conversation has none.
        reserved_reply_tokens: Tokens kept free for the reply.
        usable_tokens: context_limit - reserved_reply_tokens: what the threshold applies to.
        fill_ratio: used_tokens / usable_tokens (0 without a limit).
        threshold: The fill ratio at which should_compact is set.
        compaction_enabled: False when the conversation switched should_compact off.
        should_compact: Time to compact: send summary_request to the LLM, then `compact`.
        summary_request: Set with should_compact: the message asking the agent's LLM for a
            summary, fact ledger included.
        compactions: Compactions so far.
        active_items: Items in the active context.
        model: The conversation's model ("" for none).
        optimisations: What masking, duplicate-read replacement and truncation saved.
    """

    _long_fields = frozenset({"summary_request"})

    active_tokens: int
    reported_tokens: int
    used_tokens: int
    source: UsageSource
    context_limit: int
    reserved_reply_tokens: int
    usable_tokens: int
    fill_ratio: float
    threshold: float
    compaction_enabled: bool
    should_compact: bool
    summary_request: str
    compactions: int
    active_items: int
    model: str
    optimisations: Optimisations


@dataclass(frozen=True, slots=True, repr=False)
class ActiveEntry(ShortRepr):
    """One entry of the active context, as the agent sends it to its LLM.

    Attributes:
        seq: The item's seq; 0 for a truncation notice.
        role: The role to send.
        content: The text to send: the item's content, or its placeholder or notice.
        token_count: Tokens of content.
        original_tokens: Tokens of the stored item (of the removed items, for a notice).
        treatment: "as_is", "masked", "duplicate_read" or "truncation_notice".
        kind: "message" or "compaction" (the marker that opens the active context).
        timestamp: The item's event time (UTC); None for a truncation notice.
        metadata: The item's metadata.
        file: The file the item refers to, if any.
    """

    _long_fields = frozenset({"content"})

    seq: int
    role: Role
    content: str
    token_count: int
    original_tokens: int
    treatment: Treatment
    kind: ItemKind
    timestamp: datetime | None
    metadata: Mapping[str, str]
    file: FileRef | None

    def as_message(self) -> dict[str, str]:
        """The entry as a chat message: {"role": role, "content": content}."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class ActiveContext:
    """One page of the active context.

    Attributes:
        entries: The page's entries, in order.
        next_page_token: Pass to the next call to continue; empty on the last page.
        total_entries: Entries of the whole active context (every page).
        total_tokens: Tokens of the whole active context.
        usage: The usage at the time of the call.
    """

    entries: tuple[ActiveEntry, ...]
    next_page_token: str
    total_entries: int
    total_tokens: int
    usage: Usage


@dataclass(frozen=True, slots=True)
class LedgerFact:
    """One fact of the ledger a compaction keeps.

    Attributes:
        kind: "instruction", "file_read", "file_write", "command" or "error".
        text: The fact.
        seq: The item it was taken from.
        outcome: For commands "exit N", "failed" or ""; "" for other kinds.
    """

    kind: FactKind
    text: str
    seq: int
    outcome: str


@dataclass(frozen=True, slots=True, repr=False)
class Compaction(ShortRepr):
    """A compaction: a marker item with a summary that starts the new active context.

    Attributes:
        number: 1 for the conversation's first compaction, and so on.
        created_at: When it was recorded (UTC).
        summary: The summary the marker carries.
        extractive: The server wrote the summary by extraction (none was given).
        marker_seq: Seq of the marker item.
        items_archived: Items that left the active context.
        tokens_before: Active tokens before.
        tokens_after: Active tokens after.
        ledger: The fact ledger at compaction time, rendered.
        facts: The same ledger as facts.
        undone: A checkpoint restore undid it.
    """

    _long_fields = frozenset({"summary", "ledger"})

    number: int
    created_at: datetime
    summary: str
    extractive: bool
    marker_seq: int
    items_archived: int
    tokens_before: int
    tokens_after: int
    ledger: str
    facts: tuple[LedgerFact, ...]
    undone: bool


@dataclass(frozen=True, slots=True)
class CompactResult:
    """The outcome of a compaction.

    Attributes:
        compaction: The compaction recorded.
        usage: The usage after it.
    """

    compaction: Compaction
    usage: Usage


@dataclass(frozen=True, slots=True)
class TruncateResult:
    """The outcome of a truncation.

    Attributes:
        truncated_seqs: Items removed from the active context (archived, not deleted).
        tokens_removed: Their tokens.
        usage: The usage after it.
    """

    truncated_seqs: tuple[int, ...]
    tokens_removed: int
    usage: Usage


@dataclass(frozen=True, slots=True)
class ConversationRetention:
    """What retention removed from one conversation (or would, in a dry run).

    Attributes:
        namespace: The conversation's namespace.
        conversation_id: The conversation.
        policy: The policy that applied, every field set (0: off).
        conversation_removed: It was inactive and went whole.
        removed_by_age: Items older than the policy's maximum age.
        removed_by_count: Items beyond its maximum of archived items, oldest first.
        removed_by_inactivity: Items that went with the whole conversation.
        seqs: The seqs removed by age or count, ascending, at most 100.
        more_seqs: How many more were removed than `seqs` lists.
    """

    namespace: str
    conversation_id: str
    policy: RetentionPolicy
    conversation_removed: bool
    removed_by_age: int
    removed_by_count: int
    removed_by_inactivity: int
    seqs: tuple[int, ...]
    more_seqs: int


@dataclass(frozen=True, slots=True)
class RetentionReport:
    """The outcome of applying retention policies.

    Attributes:
        dry_run: Nothing was removed; the figures say what a run would remove.
        conversations: The conversations that lost items or went whole, by namespace and id.
        conversations_checked: How many conversations the run looked at.
        items_removed: Items removed in all, those of whole conversations included.
        conversations_removed: Whole conversations removed.
    """

    dry_run: bool
    conversations: tuple[ConversationRetention, ...]
    conversations_checked: int
    items_removed: int
    conversations_removed: int


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A named checkpoint.

    Attributes:
        name: The name.
        created_at: When it was created (UTC).
        last_seq: The newest item at the checkpoint.
        active_tokens: Active tokens at the checkpoint.
        compactions: Compactions at the checkpoint.
    """

    name: str
    created_at: datetime
    last_seq: int
    active_tokens: int
    compactions: int


@dataclass(frozen=True, slots=True)
class RestoreResult:
    """The outcome of a checkpoint restore.

    Attributes:
        checkpoint: The checkpoint restored.
        reverted_items: Items added after the checkpoint, now reverted (kept, listed).
        undone_edits: Context edits (compactions, truncations, replacements) undone.
        usage: The usage after it.
    """

    checkpoint: Checkpoint
    reverted_items: int
    undone_edits: int
    usage: Usage


@dataclass(frozen=True, slots=True)
class ContextEdit:
    """One change to the active context, from the conversation's context history.

    Attributes:
        id: The edit's id.
        created_at: When it was made (UTC).
        kind: "compaction", "truncation" or "duplicate_read".
        seqs: The items it concerns: the compacted or truncated ones, or the replaced read.
        related_seq: duplicate_read: the later copy; compaction: the marker; else 0.
        tokens_saved: Tokens it took out of the active context.
        detail: A description.
        undone_at: When a checkpoint restore undid it (UTC); None while in effect.
    """

    id: int
    created_at: datetime
    kind: EditKind
    seqs: tuple[int, ...]
    related_seq: int
    tokens_saved: int
    detail: str
    undone_at: datetime | None


@dataclass(frozen=True, slots=True)
class Event:
    """One event of a conversation's watch stream; only the part its kind uses is set.

    Attributes:
        id: Increasing per conversation from 1; pass the last one seen as after_event_id to
            resume a watch.
        created_at: When it happened (UTC).
        kind: "usage", "eviction", "compaction", "truncation", "duplicate_read",
            "checkpoint_created", "checkpoint_restored", "erasure" or "gap".
        usage: The new usage (usage events).
        eviction_seqs: Items moved from the window to the archive (eviction events).
        compaction: The compaction (compaction events).
        edit: The context edit (truncation and duplicate_read events).
        checkpoint: The checkpoint (checkpoint_created and checkpoint_restored events).
        reverted_items: Items a restore reverted (checkpoint_restored events).
        missed: Events dropped by retention before this one (gap events).
        erased_seqs: Items an erasure removed for good (erasure events).
    """

    id: int
    created_at: datetime
    kind: EventKind
    usage: Usage | None = None
    eviction_seqs: tuple[int, ...] = ()
    compaction: Compaction | None = None
    edit: ContextEdit | None = None
    checkpoint: Checkpoint | None = None
    reverted_items: int = 0
    missed: int = 0
    erased_seqs: tuple[int, ...] = ()


# ---------------------------------------------------------------- erasure


@dataclass(frozen=True, slots=True)
class ErasedConversation:
    """The items one conversation lost to an erasure.

    Attributes:
        conversation_id: The conversation.
        seqs: The seqs of its items that are gone, as (first, last) ranges, both included.
        deleted: The whole conversation went (delete_conversation).
    """

    conversation_id: str
    seqs: tuple[tuple[int, int], ...]
    deleted: bool = False

    @property
    def items(self) -> int:
        """How many items it lost."""
        return sum(last - first + 1 for first, last in self.seqs)


@dataclass(frozen=True, slots=True)
class ErasureCounts:
    """What an erasure removed or rewrote, place by place (see the proto's ErasureCounts).

    Attributes:
        items: Item rows deleted.
        tokens: Their tokens.
        vectors: Stored vectors deleted (rewritten compaction markers' included).
        postings: Lexical postings deleted, as (item, term) pairs.
        index_entries: Ids removed from the server's vector index of the conversation.
        namespace_index_entries: Ids removed from the server's namespace-wide index.
        compactions: Compaction records rewritten (deleted, for a deleted conversation).
        summaries: Summaries dropped because they quoted an erased item.
        markers: Compaction marker items whose text was rewritten.
        facts: Fact ledger rows deleted.
        checkpoints: Checkpoints rewritten or deleted.
        edits: Context edits rewritten or deleted.
        events: Kept events rewritten or deleted.
        sessions: Sessions changed or deleted.
        chunk_cache_entries: Workspace files dropped from the server's chunk cache.
    """

    items: int = 0
    tokens: int = 0
    vectors: int = 0
    postings: int = 0
    index_entries: int = 0
    namespace_index_entries: int = 0
    compactions: int = 0
    summaries: int = 0
    markers: int = 0
    facts: int = 0
    checkpoints: int = 0
    edits: int = 0
    events: int = 0
    sessions: int = 0
    chunk_cache_entries: int = 0


@dataclass(frozen=True, slots=True)
class ErasureReceipt:
    """What an erasure (forget, or a deleted conversation) removed.

    Attributes:
        namespace: The namespace.
        erased_at: When (UTC).
        conversations: The conversations that lost items.
        counts: What went where.
        digest: SHA-256 (hex) over the erased items in order of conversation id (compared
            as UTF-8 bytes), then seq; each item adds namespace, conversation id, seq in
            decimal and content, each as UTF-8 preceded by its length as 8 bytes big-endian.
            Recompute it from an export taken before the erasure to check what went.
    """

    namespace: str
    erased_at: datetime
    conversations: tuple[ErasedConversation, ...]
    counts: ErasureCounts
    digest: str


# ---------------------------------------------------------------- statistics


@dataclass(frozen=True, slots=True)
class StateStats:
    """The items in one state.

    Attributes:
        items: How many.
        tokens: Their summed token counts.
    """

    items: int
    tokens: int


@dataclass(frozen=True, slots=True)
class StoreStats:
    """What the store holds for one conversation, or for a whole scope.

    Attributes:
        items: Items in every state.
        tokens: Their summed token counts.
        window: Items in the window.
        archived: Items evicted to the archive.
        compacted: Items behind a compaction.
        reverted: Items added after a checkpoint that was restored.
        vectors: Items with a vector of the server's embedding model (`StatsResult.model`).
        missing_vectors: Items still waiting for it (dense search does not see them yet).
        index_bytes: Size on disk of the FAISS index files as last saved (they are written
            every `index_save_seconds` and at shutdown; 0 before a first save).
        oldest_item_at: The oldest item's timestamp (UTC), None without items.
        newest_item_at: The newest item's timestamp (UTC), None without items.
    """

    items: int
    tokens: int
    window: StateStats
    archived: StateStats
    compacted: StateStats
    reverted: StateStats
    vectors: int
    missing_vectors: int
    index_bytes: int
    oldest_item_at: datetime | None
    newest_item_at: datetime | None


@dataclass(frozen=True, slots=True)
class ConversationStats:
    """One conversation's figures.

    Attributes:
        namespace: Its namespace.
        conversation_id: Its id.
        stats: What the store holds for it.
    """

    namespace: str
    conversation_id: str
    stats: StoreStats


@dataclass(frozen=True, slots=True)
class ChunkCacheStats:
    """The server's cache of workspace file chunks, since it started.

    Attributes:
        hits: Reads served without reading the file again.
        misses: Reads that read the file.
        hit_rate: hits / (hits + misses); 0.0 before any read.
        bytes: Memory the cache holds now (an estimate of its Python objects).
        max_bytes: Its bound.
        entries: Files it holds.
        evictions: Files dropped to stay within the bound.
    """

    hits: int
    misses: int
    hit_rate: float
    bytes: int
    max_bytes: int
    entries: int
    evictions: int


@dataclass(frozen=True, slots=True)
class StatsResult:
    """One page of a scope's conversations with the figures of the whole scope.

    Attributes:
        conversations: This page's conversations, ordered by namespace, then id.
        total: Every conversation of the scope together, not just this page.
        conversation_count: Conversations in the scope, those without items included.
        next_page_token: Pass to the next call to continue; empty on the last page.
        model: The embedding model the vectors are counted for.
        chunk_cache: The server's cache of workspace file chunks.
    """

    conversations: tuple[ConversationStats, ...]
    total: StoreStats
    conversation_count: int
    next_page_token: str
    model: str
    chunk_cache: ChunkCacheStats


@dataclass(frozen=True, slots=True)
class ReembedProgress:
    """Progress of a re-embed, from `Client.reembed`.

    Attributes:
        model: The server's embedding model, which the stale conversations are brought to.
        conversations_done: Stale conversations of the scope finished so far.
        conversations_total: Stale conversations of the scope.
        items_done: Items this run has embedded.
        items_total: Items that were missing a vector of the model (items appended to a
            stale conversation during the run count too).
        items_reused: Items that already had one when the run began (an earlier run that was
            stopped embedded them): not embedded again.
        items_per_second: items_done per second so far.
        namespace: The namespace of the conversation being re-embedded ("" before the first).
        conversation_id: The conversation being re-embedded (the last one once finished).
        finished: Set on the last report: every conversation of the scope is current.
    """

    model: str
    conversations_done: int
    conversations_total: int
    items_done: int
    items_total: int
    items_reused: int
    items_per_second: float
    namespace: str
    conversation_id: str
    finished: bool


# ---------------------------------------------------------------- workspace files


@dataclass(frozen=True, slots=True, repr=False)
class FileChunk(ShortRepr):
    """One chunk of a workspace file.

    Attributes:
        path: Workspace-relative, with / separators.
        index: Which chunk, from 0.
        first_line: Its first line, 1-based.
        last_line: Its last line, included.
        content: The lines, with their line endings.
        total_lines: Lines in the file.
        total_chunks: Chunks the file is cut into, as this read cut it.
        has_more: A chunk follows.
        has_previous: A chunk precedes.
        token_count: Tokens of content in the conversation's encoding.
        strategy: The strategy used.
        fallback: Why it is not the one asked for; "" when it is.
        split: A definition longer than the limit was cut to make this chunk.
        replaced: The file is not valid UTF-8; such bytes were replaced by U+FFFD.
        sha256: SHA-256 of the file's bytes (hex), for `Client.edit_file`.
        seq: The item that records the read; 0 when not recorded.
    """

    path: str
    index: int
    first_line: int
    last_line: int
    content: str
    total_lines: int
    total_chunks: int
    has_more: bool
    has_previous: bool
    token_count: int
    strategy: ChunkStrategy | Unspecified
    fallback: str
    split: bool
    replaced: bool
    sha256: str
    seq: int

    _long_fields = frozenset({"content"})


@dataclass(frozen=True, slots=True)
class FileSearchLine:
    """A line of a search result: a match, or context around one (match False)."""

    number: int
    text: str
    match: bool


@dataclass(frozen=True, slots=True)
class FileSearchMatches:
    """A file's part of a search page.

    Attributes:
        path: Workspace-relative.
        lines: Matching lines and their context, in line order; a jump in numbers is a gap.
        matches_in_file: Matching lines in the whole file.
        first_match: Which of the file's matching lines this part starts at, from 0.
        shown: Matching lines in this part.
        capped: The file has more matching lines than max_matches_per_file.
    """

    path: str
    lines: tuple[FileSearchLine, ...]
    matches_in_file: int
    first_match: int
    shown: int
    capped: bool


@dataclass(frozen=True, slots=True, repr=False)
class FileSearchPage(ShortRepr):
    """One page of a workspace search.

    Attributes:
        files: The files of this page, in path order (a file may go on over pages).
        next_page_token: Pass to `Client.search_files` to continue; empty on the last page.
        total_matches: Matching lines in all (each file counted up to its cap).
        total_files: Files with a match.
        remaining_matches: Matching lines after this page.
        remaining_files: Files with matches not yet shown in full.
        files_searched: Files looked at.
        binary_skipped: Binary files skipped.
        too_large_skipped: Files over the server's size limit, skipped.
        text: The page as text (path lines, `N:match`, `N-context`, `--` between blocks).
        token_count: Tokens of text in the conversation's encoding.
    """

    files: tuple[FileSearchMatches, ...]
    next_page_token: str
    total_matches: int
    total_files: int
    remaining_matches: int
    remaining_files: int
    files_searched: int
    binary_skipped: int
    too_large_skipped: int
    text: str
    token_count: int

    _long_fields = frozenset({"text"})


@dataclass(frozen=True, slots=True)
class FileEdit:
    """An edit that was applied.

    Attributes:
        path: Workspace-relative.
        first_line: The replacement's first line in the edited file, 1-based.
        last_line: Its last line.
        sha256_before: The file's SHA-256 before the edit.
        sha256_after: And after it.
    """

    path: str
    first_line: int
    last_line: int
    sha256_before: str
    sha256_after: str


@dataclass(frozen=True, slots=True)
class FileView:
    """The file a conversation views.

    Attributes:
        path: Workspace-relative.
        chunk_index: The chunk read last.
        total_chunks: Chunks of the file as last cut.
        strategy: The strategy asked for.
        max_lines: Lines per chunk asked for.
        max_tokens: Tokens per chunk asked for; 0 when sized by lines.
        seen_chunks: The chunks read so far, ascending.
    """

    path: str
    chunk_index: int
    total_chunks: int
    strategy: ChunkStrategy | Unspecified
    max_lines: int
    max_tokens: int
    seen_chunks: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Session:
    """A conversation's session: the states that decide its tools, and the file it views.

    Attributes:
        conversation_id: The conversation.
        states: The active states, in the order they were set.
        tools: The tools available now.
        deciding_state: The state that decided them; "" when none is active.
        view: The file it views; None when none.
    """

    conversation_id: str
    states: tuple[str, ...]
    tools: tuple[str, ...]
    deciding_state: str
    view: FileView | None


@dataclass(frozen=True, slots=True)
class ToolCheck:
    """Whether a tool is available now.

    Attributes:
        tool: The tool asked about.
        allowed: It is available.
        reason: Why not, naming the state that forbids it; "" when allowed.
        deciding_state: The state that decided; "" when none is active.
    """

    tool: str
    allowed: bool
    reason: str
    deciding_state: str


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key as the server keeps it: never its token.

    Attributes:
        key_id: Names the key in errors, metrics and audit lines; safe to log.
        name: A name for people.
        role: "read", "write" or "admin".
        namespaces: Exact namespace names, prefixes ending in "/", or "*" for every one.
        created_at: When it was created (UTC).
        expires_at: When it stops working; None: never.
        revoked_at: When it was revoked; None: it was not.
    """

    key_id: str
    name: str
    role: str
    namespaces: tuple[str, ...]
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True, slots=True)
class CreatedKey:
    """A key and its token, which no call returns again: store it now.

    Attributes:
        key: The key.
        token: The bearer token: pass it as api_key= to a client.
    """

    key: ApiKey
    token: str = field(repr=False)
