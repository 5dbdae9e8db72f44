"""Forgetting items for good, and deleting conversations, with a receipt: each conversation in
one unit of work that deletes the items with every row derived from them and rewrites what
quoted them, then brings this server's memory, index files and caches in line with the store;
the store's files are scrubbed once the last conversation is done."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.conversations.unit_of_work import Change
from contextwm.conversations.validation import check_conversation_id, namespace_of
from contextwm.domain.erasure import (
    ErasedConversation,
    ErasureCounts,
    ErasureDigest,
    ErasureReceipt,
    seq_ranges,
)
from contextwm.domain.errors import ContextWMError, NotFound
from contextwm.domain.history import Erased, Event, EventKind
from contextwm.domain.items import ItemFilter
from contextwm.erasure.redaction import History, redact
from contextwm.ports.checkpoint_store import CheckpointStore
from contextwm.ports.conversation_store import ConversationStore
from contextwm.ports.erasure_store import ErasureStore
from contextwm.ports.event_store import EventStore
from contextwm.ports.history_store import HistoryStore
from contextwm.ports.item_store import ItemStore
from contextwm.ports.session_store import SessionStore
from contextwm.ports.vector_index import VectorIndex
from contextwm.ports.vector_store import VectorStore

log = logging.getLogger(__name__)

# Rows read per query when a whole conversation's items or events are read.
PAGE = 1000


class ErasureReads(
    ErasureStore,
    ConversationStore,
    ItemStore,
    HistoryStore,
    EventStore,
    CheckpointStore,
    SessionStore,
    VectorStore,
    Protocol,
):
    """What an erasure reads and writes: the items, and every place that names or quotes
    them."""


class FileCache(Protocol):
    """A cache of workspace files' text (workspace_files.ChunkCache)."""

    def invalidate(self, root: Path, path: str) -> bool: ...


class TextCache(Protocol):
    """A cache keyed by texts (the short-text token counts), cleared whole."""

    def clear(self) -> None: ...


@dataclass(frozen=True, slots=True)
class _Done:
    """One conversation's part of a receipt, and the files its erased items were read from."""

    erased: ErasedConversation
    counts: ErasureCounts
    paths: frozenset[str]
    runtime: ConversationRuntime


class Erasure:
    """Thread-safe: each conversation is erased in a unit of work of its own."""

    def __init__(
        self,
        engine: ContextEngine,
        *,
        file_cache: FileCache | None = None,
        text_caches: Sequence[TextCache] = (),
    ) -> None:
        """Args:
        engine: the conversations, their store, indexes and runtimes.
        file_cache: the workspace files this server caches (None: it caches none).
        text_caches: caches keyed by texts, cleared after every erasure.
        """
        self._engine = engine
        self._store: ErasureReads = engine.store
        self._file_cache = file_cache
        self._text_caches = tuple(text_caches)

    def forget(self, namespace: str, conversation_id: str, flt: ItemFilter) -> ErasureReceipt:
        """Erases the items that flt matches, in any state, from one conversation or (with
        conversation_id "") from every conversation of the namespace, one after the other.

        What an item leaves behind goes with it: its vector and words in every index, its
        facts, its idempotency key; summaries that quote it are dropped, ledgers, edits,
        events, checkpoints and the session are rewritten without it (erasure/redaction.py).
        A failure part-way leaves the conversations done so far erased; calling again
        erases the rest.

        Args:
            namespace: the namespace ("" for the default one).
            conversation_id: one conversation, or "" for all of the namespace's.
            flt: what to forget (domain.erasure.forget_filter checks it).

        Returns:
            The receipt: the conversations that lost items, counts per place, the digest.

        Raises:
            NotFound: the conversation named does not exist.
        """
        ns = namespace_of(namespace)
        if conversation_id:
            names = [check_conversation_id(conversation_id)]
            if self._store.get_conversation(ns, conversation_id) is None:
                raise NotFound(f"conversation {conversation_id!r} not found in namespace {ns!r}")
        else:
            names = [cid for _, cid in self._store.conversation_keys(ns)]
        digest = ErasureDigest()
        done: list[_Done] = []
        try:
            for cid in sorted(names, key=str.encode):  # the digest's order
                try:
                    part = self._forget_in(ns, cid, flt, digest)
                except NotFound:
                    if conversation_id:
                        raise
                    continue  # deleted meanwhile
                if part is not None:
                    done.append(part)
        except BaseException:
            self._after(done)
            raise
        return self._receipt(ns, done, digest, self._after(done))

    def delete_conversation(self, namespace: str, conversation_id: str) -> ErasureReceipt:
        """Deletes a conversation with everything of it (engine.delete_conversation), and
        says what went.

        Raises:
            NotFound: no such conversation.
        """
        engine = self._engine
        ns = namespace_of(namespace)
        digest = ErasureDigest()
        with engine.change(ns, conversation_id) as change:
            rt = change.rt
            before = self._store.footprint(rt.key)
            seqs: list[int] = []
            paths: set[str] = set()
            after = 0
            while page := self._store.item_texts(rt.key, after, PAGE):
                for text in page:
                    digest.add(ns, rt.record.conversation_id, text.seq, text.content)
                    seqs.append(text.seq)
                    if text.path is not None:
                        paths.add(text.path)
                after = page[-1].seq
            held = len(self._store.archived_ids(rt.key, engine.embedder.model_name))
            removed = engine.remove_conversation(change)
        engine.removed(rt)
        counts = ErasureCounts(
            items=removed.items,
            tokens=before.tokens,
            vectors=before.vectors,
            postings=before.postings,
            index_entries=held,
            namespace_index_entries=removed.namespace_index_entries,
            compactions=before.compactions,
            summaries=before.compactions,
            facts=before.facts,
            checkpoints=before.checkpoints,
            edits=before.edits,
            events=before.events,
            sessions=before.sessions,
        )
        erased = ErasedConversation(rt.record.conversation_id, seq_ranges(seqs), deleted=True)
        part = _Done(erased, counts, frozenset(paths), rt)
        return self._receipt(ns, [part], digest, self._after([part]))

    # ------------------------------------------------------------ one conversation

    def _forget_in(
        self, ns: str, conversation_id: str, flt: ItemFilter, digest: ErasureDigest
    ) -> _Done | None:
        engine = self._engine
        store = self._store
        with engine.change(ns, conversation_id) as change:
            rt = change.rt
            items = store.erasable_items(rt.key, flt)
            if not items:
                return None
            counter = engine.counters(rt.record.settings.encoding)
            redaction = redact(items, self._history(rt.key), counter)
            write = redaction.write
            seqs = [i.seq for i in items]
            # Loaded (or built) first, so that the ids it holds are removed exactly and its
            # file is written without them below, rather than rebuilt at some later use.
            engine.ensure_index(rt)
            change.emit(EventKind.ERASURE, Erased(tuple(seqs)))
            rows = change.commit(lambda events: store.erase(rt.key, write, events))
            for item in items:
                digest.add(ns, rt.record.conversation_id, item.seq, item.content)
            # The rewritten markers lost their vectors too: embedded again from the new text.
            unindexed = [*seqs, *(m.seq for m in write.markers)]
            index = rt.index
            entries = index.remove(unindexed) if index is not None else 0
            namespace_entries = engine.vectors.namespaces.removed(ns, rt.key, unindexed)
            self._reload(change, index)
        counts = ErasureCounts(
            items=rows.items,
            tokens=rows.tokens,
            vectors=rows.vectors,
            postings=rows.postings,
            index_entries=entries,
            namespace_index_entries=namespace_entries,
            compactions=redaction.compactions,
            summaries=redaction.summaries,
            markers=redaction.markers,
            facts=rows.facts,
            checkpoints=redaction.checkpoints,
            edits=redaction.edits,
            events=redaction.events,
            sessions=redaction.sessions,
        )
        paths = frozenset(i.file.path for i in items if i.file is not None)
        erased = ErasedConversation(rt.record.conversation_id, seq_ranges(seqs))
        return _Done(erased, counts, paths, rt)

    def _history(self, key: int) -> History:
        """What may name or quote the conversation's items, besides their own rows."""
        store = self._store
        compactions = store.compactions(key)
        events: list[Event] = []
        while page := store.events_after(key, events[-1].number if events else 0, PAGE):
            events += page
        return History(
            compactions=compactions,
            markers=store.get_items(key, [c.marker_seq for c in compactions]),
            edits=store.edits(key),
            events=events,
            checkpoints=store.checkpoints(key),
            session=store.session(key),
        )

    def _reload(self, change: Change, index: VectorIndex | None) -> None:
        """Memory back to the store's truth after an erasure (window, active context, ledger,
        file copies, counts), keeping the index the erasure pruned, whose file is written
        now: a saved file must not hold the erased vectors until the next periodic save."""
        engine = self._engine
        rt = change.rt
        engine.runtimes.reload(rt)
        engine.runtimes.check_live(rt)
        if rt.index is None:
            rt.index = index
        if rt.index is not None:
            engine.index_files.save(rt.key, rt.index.snapshot())
            rt.index_dirty = False
        change.emit(EventKind.USAGE, rt.usage(engine.models))
        change.commit(lambda events: self._store.record_events(rt.key, events))

    # ------------------------------------------------------------ after the units of work

    def _after(self, done: Sequence[_Done]) -> int:
        """What follows erasures outside any lock: cached files and texts forgotten, the
        indexer told (rewritten markers wait for a vector), the store's files scrubbed.
        Returns how many cached files went."""
        if not done:
            return 0
        files = sum(self._drop_files(part) for part in done)
        for cache in self._text_caches:
            cache.clear()
        self._engine.on_delete()
        try:
            self._store.scrub()
        except ContextWMError:
            # The erasure stands; what scrubbing would have freed is freed by the store's
            # own maintenance later (see docs/security.md).
            log.exception("scrubbing the store after an erasure failed")
        return files

    def _drop_files(self, part: _Done) -> int:
        """Drops the erased file items' files from the chunk cache; returns how many."""
        if self._file_cache is None or not part.paths:
            return 0
        try:
            workspace = self._engine.workspace_of(part.runtime.record.settings)
        except ContextWMError:
            return 0  # a root the server no longer allows: it caches nothing of it
        if workspace is None:
            return 0
        return sum(self._file_cache.invalidate(workspace.root, path) for path in part.paths)

    def _receipt(
        self, ns: str, done: Sequence[_Done], digest: ErasureDigest, cached_files: int
    ) -> ErasureReceipt:
        counts = ErasureCounts(chunk_cache_entries=cached_files)
        for part in done:
            counts = counts + part.counts
        return ErasureReceipt(
            namespace=ns,
            at=self._engine.clock(),
            conversations=tuple(part.erased for part in done),
            counts=counts,
            digest=digest.hexdigest(),
        )
