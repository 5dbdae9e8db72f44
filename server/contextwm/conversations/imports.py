"""Bulk import: a stream of chunks of historic items for any conversations, embedded a chunk
at a time and applied as live appends of the same items, each embedded before the next
arrives, would apply them; each chunk is acknowledged once stored; a refused item is
reported and the rest goes on."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from contextwm.conversations.appends import Appends, Staged
from contextwm.conversations.validation import (
    check_batch,
    check_item,
    check_item_tokens,
    check_new_conversation_id,
    namespace_of,
)
from contextwm.domain.errors import ContextWMError, InvalidArgument, NotFound, ResourceExhausted
from contextwm.domain.items import NewItem
from contextwm.ports.conversation_store import ConversationStore
from contextwm.ports.embedder import Embedder, Vectors
from contextwm.ports.item_store import ItemStore


@dataclass(frozen=True, slots=True)
class ImportEntry:
    """One item of an import, where it goes, and the sender's name for where it came from."""

    namespace: str
    conversation_id: str
    item: NewItem | None  # None when it could not be read: then error says why
    source: str = ""
    error: ContextWMError | None = None


@dataclass(frozen=True, slots=True)
class ImportFailure:
    index: int  # position in the stream, from 0
    source: str
    error: ContextWMError


@dataclass(slots=True)
class ChunkSummary:
    """What one chunk of an import did, once its items are stored: every one of its items
    is appended, a duplicate or failed."""

    items: int = 0
    appended: int = 0
    duplicates: int = 0
    evicted: int = 0
    out_of_order: int = 0  # stored with a timestamp before an earlier item's
    failed: int = 0
    failures: list[ImportFailure] = field(default_factory=list)
    # Conversations appended to (or holding its duplicates) that no earlier chunk of the
    # stream was.
    conversations: set[tuple[str, str]] = field(default_factory=set)

    def fail(self, index: int, source: str, error: ContextWMError) -> None:
        self.failed += 1
        self.failures.append(ImportFailure(index, source, error))


@dataclass(frozen=True, slots=True)
class _Entry:
    """An acceptable item; stored is set when its idempotency key was stored already when
    the chunk was checked, so that it is neither embedded nor appended again."""

    index: int
    item: NewItem
    source: str
    stored: bool


@dataclass(slots=True)
class _Chunk:
    """A chunk checked item by item: the items to append by conversation (stream order kept
    within each), the texts to embed for those not stored already, and its outcome so far."""

    groups: dict[tuple[str, str], list[_Entry]]
    texts: list[str]
    summary: ChunkSummary


class ImportStore(ConversationStore, ItemStore, Protocol):
    """What an import looks up before it embeds: the conversation, and its stored keys."""


class Imports:
    """Runs imports; several may run at once (each conversation's lock orders them)."""

    def __init__(self, appends: Appends, store: ImportStore, embedder: Embedder) -> None:
        """Args:
        appends: where items go, as live appends do.
        store: where the idempotency keys of a chunk are looked up before it is embedded.
        embedder: embeds each chunk in one call.
        """
        self.appends = appends
        self.store = store
        self.embedder = embedder

    def run(self, chunks: Iterable[Sequence[ImportEntry]]) -> Iterator[ChunkSummary]:
        """Imports chunks in order, yielding each chunk's summary once its items are stored.
        The next chunk is read and embedded while the one before is applied, so at most two
        are held at once whatever the sender's pace.

        Raises:
            InvalidArgument, ResourceExhausted: a chunk over the batch limits (nothing of it
                is stored; earlier chunks stay).
        """
        position = 0
        seen: set[tuple[str, str]] = set()  # conversations of earlier chunks
        with ThreadPoolExecutor(1, thread_name_prefix="contextwm-import") as pool:
            in_hand: tuple[_Chunk, Future[Vectors]] | None = None
            for entries in chunks:
                chunk = self._check(entries, position)
                position += len(entries)
                embedding = pool.submit(self.embedder.embed, chunk.texts)
                if in_hand is not None:
                    yield self._apply(*in_hand, seen)
                in_hand = (chunk, embedding)
            if in_hand is not None:
                yield self._apply(*in_hand, seen)

    def _check(self, entries: Sequence[ImportEntry], position: int) -> _Chunk:
        """Groups a chunk's acceptable items by conversation; the others are failures."""
        limits = self.appends.limits
        check_batch(
            len(entries), sum(len(e.item.content.encode()) for e in entries if e.item), limits
        )
        summary = ChunkSummary(items=len(entries))
        accepted: dict[tuple[str, str], list[tuple[int, NewItem, str]]] = {}
        for n, entry in enumerate(entries, start=position):
            try:
                if entry.item is None:
                    raise entry.error or InvalidArgument("item is required")
                conversation = (
                    namespace_of(entry.namespace),
                    check_new_conversation_id(entry.conversation_id),
                )
                check_item(entry.item, limits)
                self.appends.check_files(*conversation, [entry.item])
            except ContextWMError as e:
                summary.fail(n, entry.source, e)
                continue
            accepted.setdefault(conversation, []).append((n, entry.item, entry.source))
        groups = {
            conversation: self._mark_stored(conversation, group)
            for conversation, group in accepted.items()
        }
        # In the order _apply hands the vectors out: conversation by conversation.
        texts = [e.item.content for group in groups.values() for e in group if not e.stored]
        return _Chunk(groups, texts, summary)

    def _mark_stored(
        self, conversation: tuple[str, str], group: list[tuple[int, NewItem, str]]
    ) -> list[_Entry]:
        """Looks the group's idempotency keys up before anything is embedded: a re-sent
        import then costs a lookup per item, not an embedding. The check is repeated under
        the conversation's lock when the chunk is applied (another import may store a key
        meanwhile); a key found here stays stored, since only a deletion removes items."""
        keys = [item.idempotency_key for _, item, _ in group if item.idempotency_key]
        stored: set[str] = set()
        if keys:
            record = self.store.get_conversation(*conversation)
            if record is not None:
                stored = set(self.store.find_idempotent(record.key, keys))
        return [
            _Entry(n, item, source, bool(item.idempotency_key) and item.idempotency_key in stored)
            for n, item, source in group
        ]

    def _apply(
        self, chunk: _Chunk, embedding: Future[Vectors], seen: set[tuple[str, str]]
    ) -> ChunkSummary:
        vectors = embedding.result()
        row = 0
        for conversation, group in chunk.groups.items():
            fresh = [e for e in group if not e.stored]
            self._append(conversation, group, vectors[row : row + len(fresh)], chunk.summary)
            row += len(fresh)
        # Failures found when checking and when applying, in stream order.
        chunk.summary.failures.sort(key=lambda f: f.index)
        # Counted once per stream, so that the chunks' counts add up to the stream's.
        chunk.summary.conversations -= seen
        seen |= chunk.summary.conversations
        return chunk.summary

    def _append(
        self,
        conversation: tuple[str, str],
        group: list[_Entry],
        vectors: Vectors,
        summary: ChunkSummary,
    ) -> None:
        """Appends one conversation's items of a chunk one at a time, in one commit."""
        fresh = [e for e in group if not e.stored]
        duplicates = len(group) - len(fresh)
        left = self.appends.room.left(conversation[0])
        if left is not None and left < len(fresh):
            # The items past the namespace's quota fail as their Appends would; the rest go.
            try:
                self.appends.room.check(conversation[0], left + 1)
            except ResourceExhausted as e:
                for entry in fresh[left:]:
                    summary.fail(entry.index, entry.source, e)
            fresh, vectors = fresh[:left], vectors[:left]
        if fresh:
            appends = self.appends
            keys = [e.item.idempotency_key for e in fresh if e.item.idempotency_key]
            staged = Staged()
            try:
                rt = appends.runtimes.get(*conversation, create=True)
                with appends.busy.timing(), appends.work.change(rt) as change:
                    counter = appends.counters(rt.record.settings.encoding)
                    seen = set(appends.store.find_idempotent(rt.key, keys)) if keys else set()
                    for entry, vector in zip(fresh, vectors, strict=True):
                        item = entry.item
                        key = item.idempotency_key
                        if key and key in seen:
                            duplicates += 1
                            continue
                        tokens = counter.count(item.content)
                        try:
                            check_item_tokens(tokens, appends.limits)
                        except ContextWMError as e:
                            summary.fail(entry.index, entry.source, e)
                            continue
                        appends.stage(change, [(item, tokens)], staged, [vector])
                        if key:
                            seen.add(key)
                    appends.commit(change, staged)
            except NotFound as e:  # deleted while the import ran
                for entry in group:
                    summary.fail(entry.index, entry.source, e)
                return
            summary.appended += len(staged.items)
            summary.evicted += len(staged.evicted)
            summary.out_of_order += len(staged.out_of_order)
        summary.duplicates += duplicates
        summary.conversations.add(conversation)
