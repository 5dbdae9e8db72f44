"""Bulk import: a stream of chunks of historic items for any conversations, embedded a chunk
at a time and applied as live appends of the same items, each embedded before the next
arrives, would apply them; a refused item is reported and the rest goes on."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from contextwm.conversations.appends import Appends, Staged
from contextwm.conversations.validation import (
    check_batch,
    check_item,
    check_item_tokens,
    check_new_conversation_id,
    namespace_of,
)
from contextwm.domain.errors import ContextWMError, InvalidArgument, NotFound
from contextwm.domain.items import NewItem
from contextwm.ports.embedder import Embedder, Vectors

# Failures listed in a summary; more are only counted.
MAX_LISTED_FAILURES = 1000


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
class ImportSummary:
    appended: int = 0
    duplicates: int = 0
    evicted: int = 0
    out_of_order: int = 0  # stored with a timestamp before an earlier item's
    failed: int = 0
    failures: list[ImportFailure] = field(default_factory=list)
    conversations: set[tuple[str, str]] = field(default_factory=set)

    def fail(self, index: int, source: str, error: ContextWMError) -> None:
        self.failed += 1
        if len(self.failures) < MAX_LISTED_FAILURES:
            self.failures.append(ImportFailure(index, source, error))


@dataclass(slots=True)
class _Chunk:
    """A chunk checked item by item: the items to append by conversation (stream order kept
    within each), and the texts to embed for them."""

    groups: dict[tuple[str, str], list[tuple[int, NewItem, str]]]
    texts: list[str]


class Imports:
    """Runs imports; several may run at once (each conversation's lock orders them)."""

    def __init__(self, appends: Appends, embedder: Embedder) -> None:
        """Args:
        appends: where items go, as live appends do.
        embedder: embeds each chunk in one call.
        """
        self.appends = appends
        self.embedder = embedder

    def run(self, chunks: Iterable[Sequence[ImportEntry]]) -> ImportSummary:
        """Imports chunks in order. The next chunk is read and embedded while the one before
        is applied, so at most two are held at once whatever the sender's pace.

        Raises:
            InvalidArgument, ResourceExhausted: a chunk over the batch limits (nothing of it
                is stored; earlier chunks stay).
        """
        summary = ImportSummary()
        position = 0
        with ThreadPoolExecutor(1, thread_name_prefix="contextwm-import") as pool:
            in_hand: tuple[_Chunk, Future[Vectors]] | None = None
            for entries in chunks:
                chunk = self._check(entries, position, summary)
                position += len(entries)
                embedding = pool.submit(self.embedder.embed, chunk.texts)
                if in_hand is not None:
                    self._apply(*in_hand, summary)
                in_hand = (chunk, embedding)
            if in_hand is not None:
                self._apply(*in_hand, summary)
        return summary

    def _check(
        self, entries: Sequence[ImportEntry], position: int, summary: ImportSummary
    ) -> _Chunk:
        """Groups a chunk's acceptable items by conversation; the others are failures."""
        limits = self.appends.limits
        check_batch(
            len(entries), sum(len(e.item.content.encode()) for e in entries if e.item), limits
        )
        groups: dict[tuple[str, str], list[tuple[int, NewItem, str]]] = {}
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
            groups.setdefault(conversation, []).append((n, entry.item, entry.source))
        # In the order _apply hands the vectors out: conversation by conversation.
        texts = [item.content for group in groups.values() for _, item, _ in group]
        return _Chunk(groups, texts)

    def _apply(self, chunk: _Chunk, embedding: Future[Vectors], summary: ImportSummary) -> None:
        vectors = embedding.result()
        row = 0
        for conversation, group in chunk.groups.items():
            self._append(conversation, group, vectors[row : row + len(group)], summary)
            row += len(group)

    def _append(
        self,
        conversation: tuple[str, str],
        group: list[tuple[int, NewItem, str]],
        vectors: Vectors,
        summary: ImportSummary,
    ) -> None:
        """Appends one conversation's items of a chunk one at a time, in one commit."""
        appends = self.appends
        keys = [item.idempotency_key for _, item, _ in group if item.idempotency_key]
        staged = Staged()
        try:
            rt = appends.runtimes.get(*conversation, create=True)
            with appends.busy.timing(), appends.work.change(rt) as change:
                counter = appends.counters(rt.record.settings.encoding)
                seen = set(appends.store.find_idempotent(rt.key, keys)) if keys else set()
                for (n, item, source), vector in zip(group, vectors, strict=True):
                    key = item.idempotency_key
                    if key and key in seen:
                        summary.duplicates += 1
                        continue
                    tokens = counter.count(item.content)
                    try:
                        check_item_tokens(tokens, appends.limits)
                    except ContextWMError as e:
                        summary.fail(n, source, e)
                        continue
                    appends.stage(change, [(item, tokens)], staged, [vector])
                    if key:
                        seen.add(key)
                appends.commit(change, staged)
        except NotFound as e:  # deleted while the import ran
            for n, _, source in group:
                summary.fail(n, source, e)
            return
        summary.appended += len(staged.items)
        summary.evicted += len(staged.evicted)
        summary.out_of_order += len(staged.out_of_order)
        summary.conversations.add(conversation)
