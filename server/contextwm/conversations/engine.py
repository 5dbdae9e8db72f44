"""The context engine: what the service's features share. It builds the conversation
runtimes, the unit of work, appends and vectors over one store, and manages conversations
themselves (create, read, list, update settings, delete, pin items, statistics).

The store is the truth: a change is applied to memory and committed in one transaction
inside a unit of work, which puts memory back to the store's state when anything fails, so
a crash at any point leaves nothing half done.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from contextwm.conversations.appends import AppendOutcome, Appends
from contextwm.conversations.events import EventHub
from contextwm.conversations.namespace_room import NamespaceRoom
from contextwm.conversations.removals import RemovalCounters, Removals
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.conversations.runtimes import Runtimes
from contextwm.conversations.stats import Stats
from contextwm.conversations.totals import LoadedTotals, loaded_totals
from contextwm.conversations.unit_of_work import Change, UnitOfWork
from contextwm.conversations.validation import (
    Limits,
    check_new_conversation_id,
    namespace_of,
    page_size_of,
    page_token_seq,
)
from contextwm.conversations.vectors import Vectors
from contextwm.domain.conversations import (
    ConversationSettings,
    ConversationState,
    SettingsPatch,
    WindowStats,
    apply_patch,
)
from contextwm.domain.errors import InvalidArgument, NotFound, PermissionDenied
from contextwm.domain.items import Flag, Item, ItemState, NewItem
from contextwm.domain.retention import RetentionPolicies
from contextwm.domain.usage import Models
from contextwm.llm_context.usage import check_model
from contextwm.ports.caches import CacheCounts
from contextwm.ports.conversation_store import ConversationRecord
from contextwm.ports.embedder import Embedder
from contextwm.ports.store import Store
from contextwm.ports.tokens import TokenCounter
from contextwm.ports.vector_index import VectorIndexFiles
from contextwm.ports.workspace import Workspace, Workspaces


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
    last_event: int


@dataclass(frozen=True, slots=True)
class RemovedConversation:
    """What deleting a conversation took: its items, and the ids this server's namespace
    index held of it (0 when that index was not built)."""

    items: int
    namespace_index_entries: int


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
        retention: RetentionPolicies | None = None,
        max_loaded_conversations: int = 256,
        query_embedder: Embedder | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        # Queries' vectors are compared with the stored ones, never stored themselves.
        self.query_embedder = query_embedder or embedder
        self.index_files = index_files
        self.counters = counters
        self.defaults = defaults or ConversationSettings()
        self.limits = limits or Limits()
        self.clock = clock
        self.models: Models = models or {}
        self.events = EventHub(store)
        # What other servers sharing the store commit reaches this one's watchers too (the
        # store calls back until it closes; SQLite, which one server owns, never does).
        store.follow_events(self.events.committed, self.events.resync)
        self.event_retention_seconds = event_retention_seconds
        self.workspaces = workspaces
        # The namespaces' retention policies, and what retention removed so far.
        self.retention_policies = retention or RetentionPolicies()
        self.retention_counters = RemovalCounters()
        model = embedder.model_name
        self.runtimes = Runtimes(
            store, counters, model, self.defaults, clock, max_loaded=max_loaded_conversations
        )
        self.work = UnitOfWork(self.runtimes, self.events, clock)
        self.vectors = Vectors(
            store, self.runtimes, index_files, model, wait_seconds=index_wait_seconds
        )
        # What another server sharing the store erased leaves this one's files and memory.
        store.follow_erasures(self.vectors.erased_elsewhere)
        self.appends = Appends(
            store,
            self.runtimes,
            self.work,
            self.vectors,
            counters,
            limits=self.limits,
            models=self.models,
            clock=clock,
            workspace_of=self.workspace_of,
            room=NamespaceRoom(store, self.limits.max_items_per_namespace),
        )
        self.stats = Stats(store, index_files, model, self.limits)
        # Readers waiting for vectors, whom the indexer serves first.
        self.vector_waiters = self.vectors.waiters
        # Called after a conversation or some of its items are deleted (the indexer rescans
        # for pending items: the store may hand the freed ids out again).
        self.on_delete: Callable[[], None] = lambda: None
        # The caches whose hits and misses the metrics report, by name; features add theirs.
        self.caches: dict[str, CacheCounts] = {"conversations": self.runtimes}
        self.removals = Removals(store, self.vectors, lambda: self.on_delete())

    # ------------------------------------------------------------ runtimes

    def runtime(
        self, namespace: str, conversation_id: str, *, create: bool = False
    ) -> ConversationRuntime:
        """The live runtime of a conversation, loaded from the store on first use.

        Raises:
            NotFound: when it does not exist and create is False.
        """
        return self.runtimes.get(namespace, conversation_id, create=create)

    @contextmanager
    def holding(self, namespace: str, conversation_id: str) -> Iterator[ConversationRuntime]:
        """The live runtime with its lock held, for reading it.

        Raises:
            NotFound: no such conversation, or deleted meanwhile.
        """
        with self.runtimes.holding(self.runtime(namespace, conversation_id)) as rt:
            yield rt

    def change(self, namespace: str, conversation_id: str) -> AbstractContextManager[Change]:
        """A unit of work on the conversation (see unit_of_work.UnitOfWork.change).

        Raises:
            NotFound: no such conversation, or deleted meanwhile.
        """
        return self.work.change(self.runtimes.get(namespace, conversation_id, current=False))

    # ------------------------------------------------------------ what features share

    def append(
        self, namespace: str, conversation_id: str, items: Sequence[NewItem]
    ) -> AppendOutcome:
        """Appends items all or nothing, evicting what no longer fits (see Appends.append)."""
        return self.appends.append(namespace, conversation_id, items)

    def ensure_index(self, rt: ConversationRuntime) -> None:
        self.vectors.ensure_index(rt)

    def save_indexes(self, rested: float = 0.0) -> int:
        return self.vectors.save_indexes(rested)

    def totals(self) -> LoadedTotals:
        """Window fill, archive, pending vectors and index sizes of the loaded conversations."""
        return loaded_totals(self.runtimes.loaded())

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

    # ------------------------------------------------------------ conversations

    def create_conversation(
        self, namespace: str, conversation_id: str, patch: SettingsPatch
    ) -> ConversationInfo:
        ns = namespace_of(namespace)
        check_new_conversation_id(conversation_id)
        settings = apply_patch(self.defaults, self._model_encoding(patch))
        check_model(settings, self.models)
        self._check_workspace_root(settings)
        self.counters(settings.encoding)  # fail before storing if the encoding cannot load
        with self.runtimes.lock:
            record = self.store.create_conversation(ns, conversation_id, settings, self.clock())
        return self.get_conversation(ns, record.conversation_id)

    def _model_encoding(self, patch: SettingsPatch) -> SettingsPatch:
        """A patch that names a model takes the model's encoding unless it names its own."""
        spec = self.models.get(patch.model) if patch.model else None
        if spec is None or patch.encoding is not None:
            return patch
        return dataclasses.replace(patch, encoding=spec.encoding)

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
        with self.holding(namespace, conversation_id) as rt:
            return _info(rt)

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
        with self.change(namespace, conversation_id) as change:
            rt = change.rt
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
            change.commit(lambda _: self.store.update_settings(rt.key, settings, token_limit))
            rt.record = dataclasses.replace(rt.record, settings=settings)
            rt.token_limit = token_limit
            if settings.encoding != previous.encoding:
                self.runtimes.fill(rt, rt.record)  # an empty conversation: nothing counted yet
            rt.active.set_mask_after_turns(settings.mask_tool_outputs_after_turns)
            self.appends.evict_to_fit(change)
            return _info(rt)

    def delete_conversation(self, namespace: str, conversation_id: str) -> int:
        """Deletes a conversation with everything of it; returns how many items it had.

        Raises:
            NotFound: no such conversation.
        """
        with self.change(namespace, conversation_id) as change:
            deleted = self.remove_conversation(change).items
        self.removed(change.rt)
        return deleted

    def remove_conversation(self, change: Change) -> RemovedConversation:
        """Deletes the conversation of a change from the store, its index file and this
        server's namespace index (for callers that read it first within the same change);
        call `removed` once the change has ended."""
        rt = change.rt
        items = change.commit(lambda _: self.store.delete_conversation(rt.key))
        rt.deleted = True
        rt.index = None
        self.index_files.delete(rt.key)
        entries = self.vectors.namespaces.dropped(rt.record.namespace, rt.key)
        rt.indexed.notify_all()
        return RemovedConversation(items, entries)

    def removed(self, rt: ConversationRuntime) -> None:
        """After remove_conversation's change: its watchers are told, its runtime goes."""
        self.events.close(rt.key)
        self.runtimes.forget(rt)
        self.on_delete()

    # ------------------------------------------------------------ items

    def set_pinned(self, namespace: str, conversation_id: str, seq: int, pinned: bool) -> Item:
        with self.change(namespace, conversation_id) as change:
            rt = change.rt
            item = self.store.get_items(rt.key, [seq]).get(seq)
            if item is None:
                raise NotFound(f"conversation {conversation_id!r} has no item with seq {seq}")
            flags = item.flags | Flag.PINNED if pinned else item.flags & ~Flag.PINNED
            change.commit(lambda _: self.store.set_flags(rt.key, seq, flags))
            item = dataclasses.replace(item, flags=flags)
            entry = rt.window.get(seq)
            if entry is not None:
                entry.item = item
            return item

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


def _info(rt: ConversationRuntime) -> ConversationInfo:
    return ConversationInfo(
        record=rt.record,
        window=rt.stats(),
        archived_items=rt.archived,
        total_items=rt.total,
        state=rt.state,
        last_item_at=rt.last_ts,
        last_seq=rt.last_seq,
        pending_embeddings=rt.pending,
        last_event=rt.last_event,
    )
