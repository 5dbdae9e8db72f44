"""Appends: items counted, flagged and stored all or nothing; the window evicts what no longer
fits into the archive; the agent loop's views (active context, ledger, duplicate reads) move
with them in the same unit of work."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from contextwm.conversations.activity import BusyMeter
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.conversations.runtimes import Runtimes
from contextwm.conversations.tally import Tally
from contextwm.conversations.unit_of_work import Change, UnitOfWork
from contextwm.conversations.validation import (
    Limits,
    check_batch,
    check_item,
    check_item_tokens,
)
from contextwm.conversations.vectors import Vectors
from contextwm.domain.active import ActiveEntry
from contextwm.domain.conversations import ConversationSettings, WindowStats
from contextwm.domain.errors import ContextWMError, InvalidArgument, NotFound
from contextwm.domain.history import EventKind
from contextwm.domain.items import Flag, Item, ItemState, NewItem
from contextwm.domain.usage import Models
from contextwm.llm_context.file_copies import supersede
from contextwm.llm_context.ledger import extract_facts
from contextwm.ports.store import Store
from contextwm.ports.tokens import TokenCounter
from contextwm.ports.workspace import Workspace
from contextwm.window.conversation_state import adapt_window, detect_state
from contextwm.window.importance import detect_flags
from contextwm.window.window import WindowEntry, choose_evictions


@dataclass(frozen=True, slots=True)
class AppendedItem:
    seq: int
    token_count: int
    flags: Flag
    duplicate: bool


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    results: tuple[AppendedItem, ...]
    evicted: tuple[int, ...]
    window: WindowStats


class Appends:
    """Thread-safe: an append holds its conversation's lock from the first change to the
    commit."""

    def __init__(
        self,
        store: Store,
        runtimes: Runtimes,
        work: UnitOfWork,
        vectors: Vectors,
        counters: Callable[[str], TokenCounter],
        *,
        limits: Limits,
        models: Models,
        clock: Callable[[], float],
        workspace_of: Callable[[ConversationSettings], Workspace | None],
    ) -> None:
        self.store = store
        self.runtimes = runtimes
        self.work = work
        self.vectors = vectors
        self.counters = counters
        self.limits = limits
        self.models = models
        self.clock = clock
        self.workspace_of = workspace_of
        # Set by the indexer so appends can wake it.
        self.on_append: Callable[[], None] = lambda: None
        # What the indexer paces itself by: time spent appending.
        self.busy = BusyMeter()
        # Items evicted from a window into the archive since the server started.
        self.evicted = Tally()

    def append(
        self, namespace: str, conversation_id: str, items: Sequence[NewItem]
    ) -> AppendOutcome:
        """Appends items all or nothing, evicting what no longer fits.

        Raises:
            InvalidArgument, ResourceExhausted: for bad or oversized items; nothing is stored.
        """
        check_batch(len(items), sum(len(i.content.encode()) for i in items), self.limits)
        for n, item in enumerate(items):
            check_item(item, self.limits, n if len(items) > 1 else None)
        keys = [i.idempotency_key for i in items if i.idempotency_key]
        if len(keys) != len(set(keys)):
            raise InvalidArgument("two items in one batch share an idempotency_key")
        self._check_files(namespace, conversation_id, items)
        rt = self.runtimes.get(namespace, conversation_id, create=True)
        with self.busy.timing(), self.work.change(rt) as change:
            return self._append(change, items, keys)

    def _check_files(self, namespace: str, conversation_id: str, items: Sequence[NewItem]) -> None:
        """File references must stay inside the workspace, which the server reads them from
        (checked before a conversation is created implicitly, so a refusal leaves none)."""
        files = [(n, i.file.path) for n, i in enumerate(items) if i.file is not None]
        if not files:
            return
        try:
            settings = self.runtimes.get(namespace, conversation_id).record.settings
        except NotFound:
            settings = self.runtimes.defaults
        workspace = self.workspace_of(settings)
        if workspace is None:
            return
        for n, path in files:
            try:
                workspace.relative(path)
            except ContextWMError as e:
                where = f"item {n}: " if len(items) > 1 else ""
                raise type(e)(
                    f"{where}file reference refused: {e.message}; name a path inside the"
                    " workspace, or append without the file reference"
                ) from None

    def _append(self, change: Change, items: Sequence[NewItem], keys: list[str]) -> AppendOutcome:
        rt = change.rt
        settings = rt.record.settings
        counter = self.counters(settings.encoding)
        seen = self.store.find_idempotent(rt.key, keys) if keys else {}
        now = self.clock()
        new: list[Item] = []
        idems: list[str | None] = []
        results: list[AppendedItem] = []
        for n, it in enumerate(items):
            if it.idempotency_key and it.idempotency_key in seen:
                old = seen[it.idempotency_key]
                results.append(AppendedItem(old.seq, old.token_count, old.flags, True))
                continue
            tokens = counter.count(it.content)
            check_item_tokens(tokens, self.limits, n if len(items) > 1 else None)
            flags = it.flags
            if settings.detect_importance:
                flags |= detect_flags(it.role, it.content)
            item = Item(
                conversation_id=rt.record.conversation_id,
                seq=rt.last_seq + len(new) + 1,
                role=it.role,
                content=it.content,
                timestamp=it.timestamp if it.timestamp is not None else now,
                token_count=tokens,
                flags=flags,
                metadata=dict(it.metadata),
                file=it.file,
                state=ItemState.WINDOW,
            )
            new.append(item)
            idems.append(it.idempotency_key)
            results.append(AppendedItem(item.seq, tokens, flags, False))
        if not new:
            return AppendOutcome(tuple(results), (), rt.stats())

        pending = {i.seq: i for i in new}
        superseded = supersede(
            rt.whole_copies,
            new,
            tokens_of=lambda seq: self._token_count(rt, seq, pending),
            counter=counter,
            at=now,
            first_edit_id=rt.last_edit + 1,
            replace=settings.replace_duplicate_reads,
        )
        facts = [f for item in new for f in extract_facts(item)]
        change.touch()
        for item in new:
            rt.window.add(WindowEntry(item))
            rt.active.append(_active_entry(item))
        rt.last_seq = new[-1].seq
        newest = max(i.timestamp for i in new)
        rt.last_ts = newest if rt.last_ts is None else max(rt.last_ts, newest)
        oldest = min(i.timestamp for i in new)
        rt.first_ts = oldest if rt.first_ts is None else min(rt.first_ts, oldest)
        recent_texts = [e.item.content for e in rt.window.newest(10)]
        rt.state = detect_state(recent_texts)
        if settings.adaptive_window:
            rt.token_limit = adapt_window(
                settings.window_max_tokens, rt.token_limit, recent_texts, rt.state
            )
        evicted = self.evictions(rt)
        for replacement in superseded.replacements:
            rt.replaced[replacement.seq] = replacement
            rt.active.replace(replacement)
        rt.whole_copies = superseded.copies
        rt.ledger.add(facts)
        for edit in superseded.edits:
            change.emit(EventKind.DUPLICATE_READ, edit)
        if evicted:
            change.emit(EventKind.EVICTION, tuple(evicted))
        change.emit(EventKind.USAGE, rt.usage(self.models))
        change.commit(
            lambda events: self.store.commit_append(
                rt.key,
                new,
                idems,
                evicted,
                rt.token_limit,
                rt.state.value,
                facts=facts,
                edits=superseded.edits,
                events=events,
                appended_at=now,
            )
        )
        rt.last_edit += len(superseded.edits)
        self.vectors.archive(rt, evicted)
        self.evicted.add(len(evicted))
        rt.pending += len(new)
        rt.total += len(new)
        rt.tokens += sum(i.token_count for i in new)
        self.on_append()
        return AppendOutcome(tuple(results), tuple(evicted), rt.stats())

    def _token_count(self, rt: ConversationRuntime, seq: int, pending: dict[int, Item]) -> int:
        """An item's stored token count, from the batch, the window or the store."""
        if seq in pending:
            return pending[seq].token_count
        entry = rt.window.get(seq)
        if entry is not None:
            return entry.item.token_count
        item = self.store.get_items(rt.key, [seq]).get(seq)
        return item.token_count if item else 0

    @staticmethod
    def evictions(rt: ConversationRuntime) -> list[int]:
        """The seqs to evict so that rt's window fits its current limits (rt.lock held)."""
        settings = rt.record.settings
        if rt.window.tokens <= rt.token_limit and len(rt.window) <= settings.window_max_items:
            return []  # it fits: no scores, so no focus vector either
        evictions = choose_evictions(
            rt.window,
            token_limit=rt.token_limit,
            item_limit=settings.window_max_items,
            settings=settings,
            clock=rt.clock(),
            focus=rt.window.focus_vector(settings.focus_items),
        )
        return [e.seq for e in evictions]

    def evict_to_fit(self, change: Change) -> list[int]:
        """Evicts until the window fits its current limits again, after a settings change or
        a checkpoint restore."""
        rt = change.rt
        evicted = self.evictions(rt)
        if evicted:
            change.touch()
            self.store.commit_append(rt.key, [], [], evicted, rt.token_limit, rt.state.value)
            self.vectors.archive(rt, evicted)
            self.evicted.add(len(evicted))
        return evicted


def _active_entry(item: Item) -> ActiveEntry:
    return ActiveEntry.of(item.seq, item.role, item.token_count, item.kind, item.metadata)
