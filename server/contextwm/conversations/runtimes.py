"""The live conversation runtimes: loaded from the store on first use, reloaded from it (the
truth) whenever memory may have drifted, and found by name or by store key."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from contextwm.conversations.runtime import ConversationRuntime
from contextwm.conversations.validation import (
    check_conversation_id,
    check_new_conversation_id,
    namespace_of,
)
from contextwm.domain.active import Replacement
from contextwm.domain.conversations import ConversationSettings, ConversationState
from contextwm.domain.errors import AlreadyExists, NotFound, Unavailable
from contextwm.domain.history import EditKind
from contextwm.llm_context.active_context import ActiveContext
from contextwm.llm_context.ledger import Ledger
from contextwm.ports.conversation_locks import ConversationLocks
from contextwm.ports.conversation_store import ConversationRecord, ConversationStore
from contextwm.ports.history_store import HistoryStore
from contextwm.ports.item_store import ItemStore
from contextwm.ports.tokens import TokenCounter
from contextwm.window.window import Window, WindowEntry

log = logging.getLogger(__name__)


class RuntimeStore(ConversationStore, ConversationLocks, ItemStore, HistoryStore, Protocol):
    """What a runtime is loaded from: its conversation, its window's items and its history;
    and the version that tells whether it is current."""


class Runtimes:
    """Thread-safe registry of the loaded runtimes; each runtime has its own lock."""

    def __init__(
        self,
        store: RuntimeStore,
        counters: Callable[[str], TokenCounter],
        model_name: str,
        defaults: ConversationSettings,
        clock: Callable[[], float],
        *,
        max_loaded: int = 256,
        unload_idle_seconds: float = 30.0,
    ) -> None:
        """Args:
        max_loaded: runtimes kept in memory beyond which idle ones are unloaded (a window
            with its vectors takes about 0.25 MB, an index 1.5 KB per archived item).
        unload_idle_seconds: how long a runtime must have gone unused to be unloaded.
        """
        self.store = store
        self.max_loaded = max_loaded
        self.unload_idle_seconds = unload_idle_seconds
        self.counters = counters
        self.model_name = model_name
        self.defaults = defaults
        self.clock = clock
        # Least recently used first.
        self._by_name: OrderedDict[tuple[str, str], ConversationRuntime] = OrderedDict()
        self._by_key: dict[int, ConversationRuntime] = {}
        # Also serialises creating a conversation with loading it.
        self.lock = threading.Lock()
        # Lookups that found the runtime in memory, and those that went to the store (a
        # CacheCounts for the metrics); counted under self.lock.
        self.hits = 0
        self.misses = 0

    def get(
        self,
        namespace: str,
        conversation_id: str,
        *,
        create: bool = False,
        current: bool = True,
    ) -> ConversationRuntime:
        """The live runtime of a conversation, loaded from the store on first use, and
        current: what other servers sharing the store changed is loaded first. (current=False
        for a change, whose hold brings it current anyway: one look at the store less.)

        Raises:
            NotFound: when it does not exist and create is False.
        """
        ns = namespace_of(namespace)
        check_conversation_id(conversation_id)
        with self.lock:
            rt = self._by_name.get((ns, conversation_id))
            if rt is not None:
                self.hits += 1
                self._by_name.move_to_end((ns, conversation_id))
                rt.last_used = time.monotonic()
            else:
                self.misses += 1
                rt = self._load(self._record(ns, conversation_id, create))
                rt.last_used = time.monotonic()
                self._by_name[(ns, conversation_id)] = rt
                self._by_key[rt.key] = rt
                return rt
        return self.current(rt) if current else rt

    def _record(self, ns: str, conversation_id: str, create: bool) -> ConversationRecord:
        record = self.store.get_conversation(ns, conversation_id)
        if record is not None:
            return record
        if not create:
            raise NotFound(f"conversation {conversation_id!r} not found in namespace {ns!r}")
        check_new_conversation_id(conversation_id)
        try:
            return self.store.create_conversation(ns, conversation_id, self.defaults, self.clock())
        except AlreadyExists:
            # Another server sharing the store created it meanwhile.
            record = self.store.get_conversation(ns, conversation_id)
            if record is None:
                raise
            return record

    def current(self, rt: ConversationRuntime) -> ConversationRuntime:
        """rt, reloaded first if another server sharing the store changed the conversation
        since it was loaded (one look at its version).

        Raises:
            NotFound: the conversation was deleted meanwhile.
        """
        version = self.store.version(rt.key)
        if version == rt.version:
            return rt
        with rt.lock:
            if version is None:
                rt.deleted = True
                self.forget(rt)
                raise NotFound(f"conversation {rt.record.conversation_id!r} was deleted")
            if version != rt.version:
                self.reload(rt)
        return rt

    @contextmanager
    def held(self, rt: ConversationRuntime) -> Iterator[None]:
        """The conversation held against other servers' writers for a change of rt (rt.lock
        held): memory is brought up to the store's truth first, and every store write of the
        block commits with the block, or none.

        Raises:
            NotFound: the conversation was deleted meanwhile.
        """
        with self.store.hold(rt.key) as held:
            if held.version is None:
                rt.deleted = True
                self.forget(rt)
                raise NotFound(f"conversation {rt.record.conversation_id!r} was deleted")
            if held.version != rt.version:
                record = self.store.conversation_record(rt.key)
                assert record is not None  # held: it cannot go meanwhile
                self.fill(rt, record)
                rt.version = held.version
            yield
        if held.version is not None:
            rt.version = held.version

    def by_key(self, key: int) -> ConversationRuntime | None:
        """A loaded runtime by store key (the indexer's way in); None if not loaded."""
        with self.lock:
            return self._by_key.get(key)

    def loaded(self) -> list[ConversationRuntime]:
        with self.lock:
            return list(self._by_name.values())

    @contextmanager
    def holding(self, rt: ConversationRuntime) -> Iterator[ConversationRuntime]:
        """rt with its lock held, for reading or for a change that manages itself.

        Raises:
            NotFound: the conversation was deleted meanwhile.
        """
        with rt.lock:
            self.check_live(rt)
            yield rt

    @staticmethod
    def check_live(rt: ConversationRuntime) -> None:
        """Raises unless rt still serves its conversation (rt.lock held).

        Raises:
            NotFound: the conversation was deleted.
            Unavailable: rt was dropped from memory (idle for unload_idle_seconds, or its
                store failed to reload it): a retry loads the conversation afresh.
        """
        if rt.deleted:
            raise NotFound(f"conversation {rt.record.conversation_id!r} was deleted")
        if rt.unloaded:
            raise Unavailable(
                f"conversation {rt.record.conversation_id!r} was dropped from memory during"
                " the call; retry it"
            )

    def unload_idle(self) -> int:
        """Unloads the least recently used runtimes beyond max_loaded that have been idle
        for unload_idle_seconds, have no embedding pending and no unsaved index; returns how
        many. Memory stays bounded however many conversations a server sees; the store
        holds everything a runtime is rebuilt from.

        Call it from a thread that holds no runtime's lock (the indexer's housekeeping):
        the locks are reentrant, so a held one would look free.
        """
        unloaded = 0
        with self.lock:
            excess = len(self._by_name) - self.max_loaded
            idle_since = time.monotonic() - self.unload_idle_seconds
            for name, rt in list(self._by_name.items()):
                if excess <= 0 or rt.last_used > idle_since:
                    break  # least recently used first: the rest are busier still
                if rt.pending or rt.index_dirty or not rt.lock.acquire(blocking=False):
                    continue
                try:
                    rt.unloaded = True
                    del self._by_name[name]
                    del self._by_key[rt.key]
                finally:
                    rt.lock.release()
                excess -= 1
                unloaded += 1
        return unloaded

    def forget(self, rt: ConversationRuntime) -> None:
        """Drops a runtime from the registry: the next call loads the conversation afresh."""
        with self.lock:
            self._by_name.pop((rt.record.namespace, rt.record.conversation_id), None)
            self._by_key.pop(rt.key, None)

    def reload(self, rt: ConversationRuntime) -> None:
        """Memory back to the store's truth, or out of the registry so that the next call
        loads it afresh (rt.lock held): marked deleted when the store answers that the
        conversation is gone, unloaded when the store fails to answer (a database that
        restarts): calls waiting for rt are then told to retry, never that it was deleted.
        Never raises: it runs after a failed change, whose error is the one to report."""
        try:
            # The version first: a change committed between the two reads makes the next
            # look reload again, never the other way round.
            version = self.store.version(rt.key)
            record = None if version is None else self.store.conversation_record(rt.key)
            if record is not None and version is not None:
                self.fill(rt, record)
                rt.version = version
                return
        except Exception as exc:
            log.warning(
                "reloading conversation %s failed (%s); dropping it from memory until the"
                " next call loads it",
                rt.key,
                exc,
                exc_info=not isinstance(exc, Unavailable),
            )
            rt.unloaded = True
            self.forget(rt)
            return
        rt.deleted = True
        self.forget(rt)

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
        # The version first, then the record again, as reload() does: a change another server
        # committed after the caller read `record` would otherwise be taken for loaded (the
        # newer version over the older last_seq), and the next change would reuse a seq.
        version = self.store.version(record.key)
        fresh = None if version is None else self.store.conversation_record(record.key)
        if version is None or fresh is None:
            raise NotFound(f"conversation {record.conversation_id!r} was deleted")
        self.fill(rt, fresh)
        rt.version = version
        return rt

    def fill(self, rt: ConversationRuntime, record: ConversationRecord) -> None:
        """(Re)loads everything a runtime holds from the store, the truth: on first use, after
        a checkpoint restore, and after a commit that failed half-way through memory."""
        key = record.key
        store = self.store
        counter = self.counters(record.settings.encoding)
        rt.record = record
        rt.window = Window(
            [WindowEntry(item, vec) for item, vec in store.window_items(key, self.model_name)]
        )
        rt.token_limit = record.token_limit or record.settings.window_max_tokens
        rt.state = ConversationState(record.state)
        rt.last_seq = record.last_seq
        rt.first_ts, rt.last_ts = store.clock_bounds(key)
        counts = store.counts(key, self.model_name)
        rt.pending, rt.total, rt.archived = counts.pending_vectors, counts.total, counts.archived
        rt.tokens = counts.tokens
        rt.has_reverted = counts.reverted > 0
        rt.index = None
        rt.term_postings = {}
        rt.active_start = record.active_start
        rt.reported = record.reported
        rt.last_event = record.last_event
        rt.last_edit = store.max_edit_id(key)
        rt.compactions = len(store.compactions(key, live_only=True))
        rt.ledger = Ledger(store.facts(key))
        rt.whole_copies = store.whole_file_copies(key)
        edits = store.edits(key, live_only=True)
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
            store.active_entries(key, record.active_start), truncated, rt.replaced.values()
        )
