"""Appends: items counted, flagged and stored all or nothing; the window evicts what no longer
fits into the archive; the agent loop's views (active context, ledger, duplicate reads) move
with them in the same unit of work."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from contextwm.conversations.activity import BusyMeter
from contextwm.conversations.namespace_room import NamespaceRoom
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
from contextwm.domain.facts import Fact
from contextwm.domain.history import ContextEdit, EventKind
from contextwm.domain.items import Flag, Item, ItemState, NewItem
from contextwm.domain.usage import Models
from contextwm.llm_context.file_copies import supersede
from contextwm.llm_context.ledger import extract_facts
from contextwm.ports.item_store import ItemStore, ItemVectors
from contextwm.ports.tokens import TokenCounter
from contextwm.ports.workspace import Workspace
from contextwm.window.conversation_state import adapt_window, detect_state
from contextwm.window.importance import detect_flags
from contextwm.window.window import Vector, WindowEntry, choose_evictions


@dataclass(frozen=True, slots=True)
class AppendedItem:
    seq: int
    token_count: int
    flags: Flag
    duplicate: bool
    out_of_order: bool = False  # its timestamp is before that of an item stored before it


@dataclass(slots=True)
class Staged:
    """What appends staged in one change have yet to write, in order."""

    items: list[Item] = field(default_factory=list)
    idempotency_keys: list[str | None] = field(default_factory=list)
    evicted: list[int] = field(default_factory=list)
    # Evicted window entries, for the index once the commit succeeded.
    out_of_window: list[WindowEntry] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    edits: list[ContextEdit] = field(default_factory=list)
    # (seq, vector) of new items that came with their embedding.
    vectors: list[tuple[int, Vector]] = field(default_factory=list)
    # New items whose timestamp is before that of an item stored before them.
    out_of_order: set[int] = field(default_factory=set)


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
        store: ItemStore,
        runtimes: Runtimes,
        work: UnitOfWork,
        vectors: Vectors,
        counters: Callable[[str], TokenCounter],
        *,
        limits: Limits,
        models: Models,
        clock: Callable[[], float],
        workspace_of: Callable[[ConversationSettings], Workspace | None],
        room: NamespaceRoom,
    ) -> None:
        self.store = store
        self.room = room
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
        self.check_files(namespace, conversation_id, items)
        rt = self.runtimes.get(namespace, conversation_id, create=True, current=False)
        with self.busy.timing(), self.work.change(rt) as change:
            return self._append(change, items, keys)

    def check_files(self, namespace: str, conversation_id: str, items: Sequence[NewItem]) -> None:
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
        counter = self.counters(rt.record.settings.encoding)
        seen = self.store.find_idempotent(rt.key, keys) if keys else {}
        counted: list[tuple[NewItem, int]] = []
        for n, it in enumerate(items):
            if it.idempotency_key not in seen:
                tokens = counter.count(it.content)
                check_item_tokens(tokens, self.limits, n if len(items) > 1 else None)
                counted.append((it, tokens))
        self.room.check(rt.record.namespace, len(counted))
        staged = Staged()
        new = iter(self.stage(change, counted, staged))
        results: list[AppendedItem] = []
        for it in items:
            old = seen.get(it.idempotency_key) if it.idempotency_key else None
            if old is not None:
                results.append(AppendedItem(old.seq, old.token_count, old.flags, True))
            else:
                item = next(new)
                late = item.seq in staged.out_of_order
                results.append(AppendedItem(item.seq, item.token_count, item.flags, False, late))
        self.commit(change, staged)
        return AppendOutcome(tuple(results), tuple(staged.evicted), rt.stats())

    def stage(
        self,
        change: Change,
        counted: Sequence[tuple[NewItem, int]],
        staged: Staged,
        vectors: Sequence[Vector] | None = None,
    ) -> list[Item]:
        """Adds counted items (each with its token count) to the window as one append, evicts
        what no longer fits, and records in staged what the commit must write; returns the
        new items. Several stages may share one commit: the window then ends as the same
        appends one after the other would leave it.

        Args:
            vectors: the items' embeddings, when the caller has them already.
        """
        rt = change.rt
        if not counted:
            return []
        settings = rt.record.settings
        now = self.clock()
        new: list[Item] = []
        for it, tokens in counted:
            flags = it.flags
            if settings.detect_importance:
                flags |= detect_flags(it.role, it.content)
            new.append(
                Item(
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
            )
        pending = {i.seq: i for i in new}
        superseded = supersede(
            rt.whole_copies,
            new,
            tokens_of=lambda seq: self._token_count(rt, seq, pending),
            counter=self.counters(settings.encoding),
            at=now,
            first_edit_id=rt.last_edit + 1,
            replace=settings.replace_duplicate_reads,
        )
        facts = [f for item in new for f in extract_facts(item)]
        change.touch()
        entries = [WindowEntry(item) for item in new]
        for entry in entries:
            rt.window.add(entry)
            rt.active.append(_active_entry(entry.item))
        rt.last_seq = new[-1].seq
        latest = rt.last_ts
        for item in new:
            if latest is not None and item.timestamp < latest:
                staged.out_of_order.add(item.seq)
            latest = item.timestamp if latest is None else max(latest, item.timestamp)
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
        rt.last_edit += len(superseded.edits)
        for edit in superseded.edits:
            change.emit(EventKind.DUPLICATE_READ, edit)
        if evicted:
            change.emit(EventKind.EVICTION, tuple(evicted))
        if vectors is not None:
            # Only now: live, an item's vector arrives after the append that evicts for it.
            for entry, vector in zip(entries, vectors, strict=True):
                entry.vector = vector
            staged.vectors += [(item.seq, vec) for item, vec in zip(new, vectors, strict=True)]
        staged.items += new
        staged.idempotency_keys += [it.idempotency_key for it, _ in counted]
        staged.evicted += evicted
        staged.out_of_window += self.vectors.take_out(rt, evicted)
        staged.facts += facts
        staged.edits += superseded.edits
        return new

    def commit(self, change: Change, staged: Staged) -> None:
        """Writes what was staged in one store transaction (with a usage event), then puts
        the evicted items' vectors into the index."""
        rt = change.rt
        if not staged.items:
            return
        change.emit(EventKind.USAGE, rt.usage(self.models))
        embedded = (
            ItemVectors(
                self.vectors.model_name,
                [s for s, _ in staged.vectors],
                [v for _, v in staged.vectors],
            )
            if staged.vectors
            else None
        )
        change.commit(
            lambda events: self.store.commit_append(
                rt.key,
                staged.items,
                staged.idempotency_keys,
                staged.evicted,
                rt.token_limit,
                rt.state.value,
                facts=staged.facts,
                edits=staged.edits,
                events=events,
                vectors=embedded,
                appended_at=self.clock(),
            )
        )
        if embedded is not None:
            self.vectors.stored(rt, embedded.seqs, np.stack(embedded.vectors))
        self.vectors.index_entries(rt, staged.out_of_window)
        self.evicted.add(len(staged.evicted))
        rt.pending += len(staged.items) - len(staged.vectors)
        rt.total += len(staged.items)
        rt.tokens += sum(i.token_count for i in staged.items)
        self.on_append()

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
