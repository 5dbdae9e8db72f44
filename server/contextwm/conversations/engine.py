"""The context engine: conversations and their runtimes, appends with eviction, vectors.

It owns the live conversation runtimes and keeps them consistent with the store, the truth:
a change is applied to memory, committed in one transaction, and memory is reloaded from the
store when the commit fails, so a crash at any point leaves nothing half done. Retrieval
(retrieval.py) and the agent loop (agent_loop.py) work on the same runtimes.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from contextwm.agent_loop.active_context import ActiveContext
from contextwm.agent_loop.events import EventHub
from contextwm.agent_loop.file_copies import supersede
from contextwm.agent_loop.ledger import Ledger, extract_facts
from contextwm.agent_loop.usage import check_model, measure
from contextwm.conversations.activity import BusyMeter, VectorWaiters
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.conversations.validation import (
    Limits,
    check_batch,
    check_conversation_id,
    check_item,
    check_item_tokens,
    namespace_of,
    page_size_of,
    page_token_seq,
)
from contextwm.domain.active import ActiveEntry, Replacement
from contextwm.domain.conversations import (
    ConversationSettings,
    ConversationState,
    SettingsPatch,
    WindowStats,
    apply_patch,
)
from contextwm.domain.errors import ContextWMError, InvalidArgument, NotFound, PermissionDenied
from contextwm.domain.history import EditKind, Event, EventKind, EventPayload
from contextwm.domain.items import Flag, Item, ItemState, NewItem
from contextwm.domain.usage import Models, Usage
from contextwm.ports.embedder import Embedder
from contextwm.ports.store import ConversationRecord, Store
from contextwm.ports.tokens import TokenCounter
from contextwm.ports.vector_index import VectorIndexFiles
from contextwm.ports.workspace import Workspace, Workspaces
from contextwm.window.conversation_state import adapt_window, detect_state
from contextwm.window.importance import detect_flags
from contextwm.window.window import Vector, Window, WindowEntry, choose_evictions

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    record: ConversationRecord
    window: WindowStats
    archived_items: int
    total_items: int
    state: ConversationState
    last_item_at: float | None
    last_seq: int
    pending_embeddings: int


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


class ContextEngine:
    """Thread-safe. Build it, then `start()` the indexer that embeds appended items."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        index_files: VectorIndexFiles,
        counters: Callable[[str], TokenCounter],
        *,
        defaults: ConversationSettings | None = None,
        limits: Limits | None = None,
        index_wait_seconds: float = 5.0,
        clock: Callable[[], float] = time.time,
        models: Models | None = None,
        event_retention_seconds: float = 3600.0,
        workspaces: Workspaces | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.index_files = index_files
        self.counters = counters
        self.defaults = defaults or ConversationSettings()
        self.limits = limits or Limits()
        self.index_wait_seconds = index_wait_seconds
        self.clock = clock
        self.models: Models = models or {}
        self.events = EventHub()
        self.event_retention_seconds = event_retention_seconds
        self.workspaces = workspaces
        self._runtimes: dict[tuple[str, str], ConversationRuntime] = {}
        self._by_key: dict[int, ConversationRuntime] = {}
        self._registry_lock = threading.Lock()
        # Set by the indexer so appends can wake it.
        self.on_append: Callable[[], None] = lambda: None
        # What the indexer paces itself by (see indexer_pacing).
        self.appends_busy = BusyMeter()
        self.vector_waiters = VectorWaiters()

    # ------------------------------------------------------------ runtimes

    def _load(self, record: ConversationRecord) -> ConversationRuntime:
        lock = threading.RLock()
        settings = record.settings
        counter = self.counters(settings.encoding)
        rt = ConversationRuntime(
            record=record,
            window=Window([]),
            token_limit=settings.window_max_tokens,
            state=ConversationState.GENERAL,
            last_seq=0,
            first_ts=None,
            last_ts=None,
            pending=0,
            total=0,
            archived=0,
            tokens=0,
            lock=lock,
            indexed=threading.Condition(lock),
            active=ActiveContext(counter, mask_after_turns=settings.mask_tool_outputs_after_turns),
            ledger=Ledger(),
        )
        self._fill(rt, record)
        return rt

    def _fill(self, rt: ConversationRuntime, record: ConversationRecord) -> None:
        """(Re)loads everything a runtime holds from the store, the truth: on first use, after
        a checkpoint restore, and after a commit that failed half-way through memory."""
        model = self.embedder.model_name
        key = record.key
        counter = self.counters(record.settings.encoding)
        rt.record = record
        rt.window = Window(
            [WindowEntry(item, vec) for item, vec in self.store.window_items(key, model)]
        )
        rt.token_limit = record.token_limit or record.settings.window_max_tokens
        rt.state = ConversationState(record.state)
        rt.last_seq = record.last_seq
        rt.first_ts, rt.last_ts = self.store.clock_bounds(key)
        counts = self.store.counts(key, model)
        rt.pending, rt.total, rt.archived = counts.pending_vectors, counts.total, counts.archived
        rt.tokens = counts.tokens
        rt.has_reverted = counts.reverted > 0
        rt.index = None
        rt.term_counts = {}
        rt.active_start = record.active_start
        rt.reported = record.reported
        rt.last_event = record.last_event
        rt.last_edit = self.store.max_edit_id(key)
        rt.compactions = len(self.store.compactions(key, live_only=True))
        rt.ledger = Ledger(self.store.facts(key))
        rt.whole_copies = self.store.whole_file_copies(key)
        edits = self.store.edits(key, live_only=True)
        rt.replaced = {
            e.seqs[0]: Replacement(e.seqs[0], e.detail, counter.count(e.detail))
            for e in edits
            if e.kind is EditKind.DUPLICATE_READ and record.settings.replace_duplicate_reads
        }
        truncated = [s for e in edits if e.kind is EditKind.TRUNCATION for s in e.seqs]
        rt.active = ActiveContext(
            counter, mask_after_turns=record.settings.mask_tool_outputs_after_turns
        )
        rt.active.reset(
            self.store.active_entries(key, record.active_start),
            truncated,
            rt.replaced.values(),
        )

    def runtime(
        self, namespace: str, conversation_id: str, *, create: bool = False
    ) -> ConversationRuntime:
        """The live runtime of a conversation, loaded from the store on first use.

        Raises:
            NotFound: when it does not exist and create is False.
        """
        ns = namespace_of(namespace)
        check_conversation_id(conversation_id)
        with self._registry_lock:
            rt = self._runtimes.get((ns, conversation_id))
            if rt is not None:
                return rt
            record = self.store.get_conversation(ns, conversation_id)
            if record is None:
                if not create:
                    raise NotFound(
                        f"conversation {conversation_id!r} not found in namespace {ns!r}"
                    )
                record = self.store.create_conversation(
                    ns, conversation_id, self.defaults, self.clock()
                )
            rt = self._load(record)
            self._runtimes[(ns, conversation_id)] = rt
            self._by_key[rt.key] = rt
            return rt

    def runtime_by_key(self, key: int) -> ConversationRuntime | None:
        """A loaded runtime by store key (the indexer's way in); None if not loaded."""
        with self._registry_lock:
            return self._by_key.get(key)

    def locked(self, namespace: str, conversation_id: str) -> ConversationRuntime:
        """The live runtime with its lock held; the caller releases it.

        Raises:
            NotFound: no such conversation, or deleted meanwhile.
        """
        rt = self.runtime(namespace, conversation_id)
        rt.lock.acquire()
        if rt.deleted:
            rt.lock.release()
            raise NotFound(f"conversation {conversation_id!r} was deleted")
        return rt

    def wait_indexed(self, rt: ConversationRuntime) -> None:
        """Read-your-writes for dense search: waits (bounded by index_wait_seconds) until the
        items appended so far are embedded."""
        if rt.pending == 0:
            return
        deadline = time.monotonic() + self.index_wait_seconds
        with self.vector_waiters.waiting(), rt.indexed:
            while rt.pending > 0 and not rt.deleted:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                rt.indexed.wait(left)

    def ensure_index(self, rt: ConversationRuntime) -> None:
        """Makes rt.index hold exactly the archived and compacted embedded items (caller
        holds rt.lock).

        A saved file is used only when its ids equal what the store says; a missing, stale or
        corrupt file is rebuilt from the stored vectors, which are the truth.
        """
        if rt.index is not None:
            return
        expected = self.store.archived_ids(rt.key, self.embedder.model_name)
        index = self.index_files.load(rt.key)
        if index is not None and np.array_equal(np.sort(index.ids()), expected):
            rt.index = index
            return
        if index is not None:
            log.warning(
                "index of conversation %s is stale; rebuilding it from stored vectors", rt.key
            )
        index = self.index_files.new()
        seqs, vectors = self.store.archived_vectors(rt.key, self.embedder.model_name)
        index.add(seqs.tolist(), vectors)
        rt.index = index
        rt.index_dirty = True

    # ------------------------------------------------------------ conversations

    def create_conversation(
        self, namespace: str, conversation_id: str, patch: SettingsPatch
    ) -> ConversationInfo:
        ns = namespace_of(namespace)
        check_conversation_id(conversation_id)
        settings = apply_patch(self.defaults, self._model_encoding(patch))
        check_model(settings, self.models)
        self._check_workspace_root(settings)
        self.counters(settings.encoding)  # fail before storing if the encoding cannot load
        with self._registry_lock:
            record = self.store.create_conversation(ns, conversation_id, settings, self.clock())
        return self.get_conversation(ns, record.conversation_id)

    def _model_encoding(self, patch: SettingsPatch) -> SettingsPatch:
        """A patch that names a model takes the model's encoding unless it names its own."""
        spec = self.models.get(patch.model) if patch.model else None
        if spec is None or patch.encoding is not None:
            return patch
        return dataclasses.replace(patch, encoding=spec.encoding)

    def workspace_of(self, settings: ConversationSettings) -> Workspace | None:
        """The conversation's workspace (its own root or the server's default), if any.

        Raises:
            PermissionDenied: a root outside those the server allows.
            InvalidArgument: a root that is not an absolute path to a directory.
        """
        if self.workspaces is None:
            self._check_workspace_root(settings)  # a root of its own is refused
            return None
        return self.workspaces.open(settings.workspace_root)  # checks the root too

    def _check_workspace_root(self, settings: ConversationSettings) -> None:
        """A conversation's own workspace_root must be one the server allows."""
        if self.workspaces is not None:
            self.workspaces.check_root(settings.workspace_root)
        elif settings.workspace_root:
            raise PermissionDenied(
                "this server has no workspaces: start it with --workspace to allow"
                f" workspace_root {settings.workspace_root!r}"
            )

    def get_conversation(self, namespace: str, conversation_id: str) -> ConversationInfo:
        rt = self.locked(namespace, conversation_id)
        try:
            return self._info(rt)
        finally:
            rt.lock.release()

    def _info(self, rt: ConversationRuntime) -> ConversationInfo:
        return ConversationInfo(
            record=rt.record,
            window=rt.stats(),
            archived_items=rt.archived,
            total_items=rt.total,
            state=rt.state,
            last_item_at=rt.last_ts,
            last_seq=rt.last_seq,
            pending_embeddings=rt.pending,
        )

    def list_conversations(
        self, namespace: str, page_size: int, page_token: str
    ) -> tuple[list[ConversationInfo], str]:
        ns = namespace_of(namespace)
        size = page_size_of(page_size, self.limits)
        records = self.store.list_conversations(ns, page_token, size + 1)
        infos: list[ConversationInfo] = []
        for record in records[:size]:
            try:
                infos.append(self.get_conversation(ns, record.conversation_id))
            except NotFound:  # deleted while we listed
                continue
        more = len(records) > size
        return infos, (records[size - 1].conversation_id if more else "")

    def update_conversation(
        self, namespace: str, conversation_id: str, patch: SettingsPatch
    ) -> ConversationInfo:
        rt = self.locked(namespace, conversation_id)
        try:
            if rt.last_seq == 0:
                patch = self._model_encoding(patch)
            previous = rt.record.settings
            settings = apply_patch(previous, patch)
            check_model(settings, self.models)
            self._check_workspace_root(settings)
            if settings.encoding != rt.record.settings.encoding and rt.last_seq > 0:
                raise InvalidArgument(
                    "encoding cannot change once a conversation has items (their token"
                    " counts were made with the old one)"
                )
            token_limit = rt.token_limit
            if not settings.adaptive_window or patch.window_max_tokens is not None:
                token_limit = settings.window_max_tokens
            self.store.update_settings(rt.key, settings, token_limit)
            rt.record = dataclasses.replace(rt.record, settings=settings)
            rt.token_limit = token_limit
            if settings.encoding != previous.encoding:
                self._fill(rt, rt.record)  # an empty conversation: nothing counted yet
            rt.active.set_mask_after_turns(settings.mask_tool_outputs_after_turns)
            self.evict_to_fit(rt)
            return self._info(rt)
        finally:
            rt.lock.release()

    def delete_conversation(self, namespace: str, conversation_id: str) -> int:
        rt = self.locked(namespace, conversation_id)
        try:
            deleted = self.store.delete_conversation(rt.key)
            rt.deleted = True
            rt.index = None
            self.index_files.delete(rt.key)
            rt.indexed.notify_all()
        finally:
            rt.lock.release()
        self.events.close(rt.key)
        with self._registry_lock:
            self._runtimes.pop((rt.record.namespace, rt.record.conversation_id), None)
            self._by_key.pop(rt.key, None)
        return deleted

    # ------------------------------------------------------------ appends

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
        rt = self.runtime(namespace, conversation_id, create=True)
        with self.appends_busy.timing(), rt.lock:
            if rt.deleted:
                raise NotFound(f"conversation {conversation_id!r} was deleted")
            return self._append_locked(rt, items, keys)

    def _check_files(self, namespace: str, conversation_id: str, items: Sequence[NewItem]) -> None:
        """File references must stay inside the workspace, which the server reads them from
        (checked before a conversation is created implicitly, so a refusal leaves none)."""
        files = [(n, i.file.path) for n, i in enumerate(items) if i.file is not None]
        if not files:
            return
        try:
            settings = self.runtime(namespace, conversation_id).record.settings
        except NotFound:
            settings = self.defaults
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

    def _append_locked(
        self, rt: ConversationRuntime, items: Sequence[NewItem], keys: list[str]
    ) -> AppendOutcome:
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

        # Apply to memory, decide evictions, commit; on failure reload memory from the store.
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
        try:
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
            evicted = self._evictions(rt)
            for replacement in superseded.replacements:
                rt.replaced[replacement.seq] = replacement
                rt.active.replace(replacement)
            rt.whole_copies = superseded.copies
            rt.ledger.add(facts)
            payloads: list[tuple[EventKind, EventPayload]] = [
                (EventKind.DUPLICATE_READ, e) for e in superseded.edits
            ]
            if evicted:
                payloads.append((EventKind.EVICTION, tuple(evicted)))
            payloads.append((EventKind.USAGE, self.usage_of(rt)))
            events = self.number_events(rt, payloads)
            self.store.commit_append(
                rt.key,
                new,
                idems,
                evicted,
                rt.token_limit,
                rt.state.value,
                facts=facts,
                edits=superseded.edits,
                events=events,
            )
        except BaseException:
            self.reload(rt)
            raise
        rt.last_edit += len(superseded.edits)
        rt.last_event = events[-1].number
        self.archive(rt, evicted)
        rt.pending += len(new)
        rt.total += len(new)
        rt.tokens += sum(i.token_count for i in new)
        self.on_append()
        self.events.publish(rt.key, events)
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

    def number_events(
        self, rt: ConversationRuntime, payloads: Sequence[tuple[EventKind, EventPayload]]
    ) -> list[Event]:
        """Numbered events for what is about to be committed (rt.lock held); rt.last_event
        moves on only once the commit succeeded."""
        at = self.clock()
        return [
            Event(rt.last_event + n, at, kind, payload)
            for n, (kind, payload) in enumerate(payloads, start=1)
        ]

    def reload(self, rt: ConversationRuntime) -> None:
        """After a failed commit: memory back to the store's truth, or out of the registry
        so that the next call loads it afresh (rt.lock held)."""
        try:
            record = self.store.conversation_record(rt.key)
            if record is None:
                raise NotFound(f"conversation {rt.record.conversation_id!r} was deleted")
            self._fill(rt, record)
        except Exception:
            log.exception("reloading conversation %s failed; dropping it from memory", rt.key)
            rt.deleted = True
            with self._registry_lock:
                self._runtimes.pop((rt.record.namespace, rt.record.conversation_id), None)
                self._by_key.pop(rt.key, None)

    def usage_of(self, rt: ConversationRuntime) -> Usage:
        """The conversation's usage figure now (rt.lock held)."""
        active = rt.active
        return measure(
            rt.record.settings,
            self.models,
            active.totals(),
            rt.reported,
            compactions=rt.compactions,
            compactable=active.row_count() > (1 if rt.active_start else 0),
        )

    def archive(self, rt: ConversationRuntime, seqs: Sequence[int]) -> None:
        """Moves committed evictions out of the window and into the index (rt.lock held).
        Items whose vector has not arrived yet are indexed by the indexer when it does."""
        rt.archived += len(seqs)
        ids: list[int] = []
        vectors: list[Vector] = []
        for seq in seqs:
            entry = rt.window.remove(seq)
            if entry.vector is not None:
                ids.append(seq)
                vectors.append(entry.vector)
        if ids and rt.index is not None:
            rt.index.add(ids, np.stack(vectors))
            rt.index_dirty = True

    def _evictions(self, rt: ConversationRuntime) -> list[int]:
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

    def evict_to_fit(self, rt: ConversationRuntime) -> list[int]:
        """Evicts until the window fits its current limits again, after a settings change or
        a checkpoint restore (rt.lock held)."""
        evicted = self._evictions(rt)
        if evicted:
            self.store.commit_append(rt.key, [], [], evicted, rt.token_limit, rt.state.value)
            self.archive(rt, evicted)
        return evicted

    def apply_vectors(self, key: int, seqs: Sequence[int], vectors: Vector) -> None:
        """Stores freshly computed vectors and puts them where they belong: on the window
        entry, or into the index for items already archived. Called by the indexer."""
        rt = self.runtime_by_key(key)
        if rt is None:
            record = self.store.conversation_record(key)
            if record is None:
                return  # deleted meanwhile
            rt = self.runtime(record.namespace, record.conversation_id)
        with rt.lock:
            if rt.deleted:
                return
            self.store.put_vectors(self.embedder.model_name, [(key, s) for s in seqs], vectors)
            archived_ids: list[int] = []
            archived_vecs: list[Vector] = []
            outside = [s for s in seqs if rt.window.get(s) is None]
            # Outside the window means archived or compacted, unless reverted.
            reverted = self.store.reverted_among(rt.key, outside) if rt.has_reverted else set()
            for seq, vec in zip(seqs, vectors, strict=True):
                entry = rt.window.get(seq)
                if entry is not None:
                    entry.vector = vec
                elif seq not in reverted:
                    archived_ids.append(seq)
                    archived_vecs.append(vec)
            if archived_ids and rt.index is not None:
                rt.index.add(archived_ids, np.stack(archived_vecs))
                rt.index_dirty = True
            rt.pending = max(0, rt.pending - len(seqs))
            if rt.pending == 0:
                rt.indexed.notify_all()

    # ------------------------------------------------------------ items

    def set_pinned(self, namespace: str, conversation_id: str, seq: int, pinned: bool) -> Item:
        rt = self.locked(namespace, conversation_id)
        try:
            item = self.store.get_items(rt.key, [seq]).get(seq)
            if item is None:
                raise NotFound(f"conversation {conversation_id!r} has no item with seq {seq}")
            flags = item.flags | Flag.PINNED if pinned else item.flags & ~Flag.PINNED
            self.store.set_flags(rt.key, seq, flags)
            item = dataclasses.replace(item, flags=flags)
            entry = rt.window.get(seq)
            if entry is not None:
                entry.item = item
            return item
        finally:
            rt.lock.release()

    def list_items(
        self,
        namespace: str,
        conversation_id: str,
        page_size: int,
        page_token: str,
        states: Sequence[ItemState],
    ) -> tuple[list[Item], str]:
        size = page_size_of(page_size, self.limits)
        after = page_token_seq(page_token)
        rt = self.runtime(namespace, conversation_id)
        items = self.store.list_items(rt.key, after, size + 1, states)
        more = len(items) > size
        return items[:size], (str(items[size - 1].seq) if more else "")

    # ------------------------------------------------------------ lifecycle

    def save_indexes(self, rested: float = 0.0) -> int:
        """Writes changed index files; returns how many were written.

        Args:
            rested: skip indexes searched less than this many seconds ago. Serialising a
                100k-item index holds its conversation's lock for tens of milliseconds, which
                a periodic save should not add to a busy conversation's latency.
        """
        with self._registry_lock:
            runtimes = list(self._runtimes.values())
        written = 0
        for rt in runtimes:
            with rt.lock:
                if rt.index is None or not rt.index_dirty or rt.deleted:
                    continue
                if time.monotonic() - rt.last_search < rested:
                    continue
                # Serialise under the lock (tens of ms at 100k items), write without it.
                snapshot = rt.index.snapshot()
                rt.index_dirty = False
            self.index_files.save(rt.key, snapshot)
            written += 1
        return written


def _active_entry(item: Item) -> ActiveEntry:
    return ActiveEntry.of(item.seq, item.role, item.token_count, item.kind, item.metadata)
