"""Erasure as values: what is forgotten (a filter), what an erasure removed where (its
counts), the digest of the removed texts, and the receipt that carries them."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from contextwm.domain.errors import InvalidArgument
from contextwm.domain.items import ItemFilter

DIGEST_ALGORITHM = "sha256"
# Each field of the digest is preceded by its length in bytes, as an unsigned 64-bit
# big-endian integer: no separator a text could contain can make two lists of items hash
# alike.
_LENGTH_BYTES = 8


def forget_filter(metadata: dict[str, str], since: float | None, until: float | None) -> ItemFilter:
    """The filter of a Forget call: items whose metadata has every pair, with a timestamp at or
    after since and before until.

    Raises:
        InvalidArgument: no criterion at all (deleting a whole conversation is what
            DeleteConversation is for), or since not before until.
    """
    flt = ItemFilter(since=since, until=until, metadata=dict(metadata))
    if flt.empty:
        raise InvalidArgument(
            "forget needs at least one criterion (metadata, since or until): to remove a whole"
            " conversation, delete it"
        )
    if since is not None and until is not None and since >= until:
        raise InvalidArgument(f"since ({since}) must be before until ({until})")
    if any(not k for k in metadata):
        raise InvalidArgument("a metadata key to forget by may not be empty")
    return flt


class ErasureDigest:
    """SHA-256 over the removed items, fed in canonical order: by conversation id (compared
    as UTF-8 bytes), then seq. Each item adds four fields, namespace, conversation id, seq
    (in decimal) and content, each as its UTF-8 bytes preceded by their length (8 bytes,
    big-endian). Anyone holding the items (an export taken before) can compute it again."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self._last: tuple[bytes, int] | None = None

    def add(self, namespace: str, conversation_id: str, seq: int, content: str) -> None:
        """Adds one removed item.

        Raises:
            ValueError: an item out of canonical order (a bug of the caller).
        """
        place = (conversation_id.encode(), seq)
        if self._last is not None and place <= self._last:
            raise ValueError(f"item {place} added after {self._last}: out of canonical order")
        self._last = place
        for field in (namespace, conversation_id, str(seq), content):
            data = field.encode()
            self._hash.update(len(data).to_bytes(_LENGTH_BYTES, "big"))
            self._hash.update(data)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def digest_of(namespace: str, items: Iterable[tuple[str, int, str]]) -> str:
    """The digest of removed items given as (conversation id, seq, content), in any order."""
    digest = ErasureDigest()
    for conversation_id, seq, content in sorted(items, key=lambda i: (i[0].encode(), i[1])):
        digest.add(namespace, conversation_id, seq, content)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class ErasureCounts:
    """What an erasure removed or rewrote, place by place.

    Attributes:
        items: item rows deleted.
        tokens: their token counts, summed.
        vectors: stored vectors deleted (the removed items', and those of rewritten
            compaction markers, which are embedded again from their new text).
        postings: lexical postings deleted: (item, term) pairs of the removed items.
        index_entries: ids removed from this server's vector index of the conversation.
        namespace_index_entries: ids removed from this server's namespace-wide index.
        compactions: compaction records rewritten (Forget) or deleted (DeleteConversation).
        summaries: compaction summaries dropped because they quoted a removed item.
        markers: compaction marker items whose text was rewritten.
        facts: fact ledger rows deleted (facts whose source is a removed item).
        checkpoints: checkpoints rewritten or deleted.
        edits: context edits rewritten or deleted.
        events: stored events (kept for Watch replay) rewritten or deleted.
        sessions: conversation sessions changed or deleted.
        chunk_cache_entries: cached workspace files dropped from this server's memory.
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

    def __add__(self, other: ErasureCounts) -> ErasureCounts:
        return ErasureCounts(
            **{
                f.name: getattr(self, f.name) + getattr(other, f.name)
                for f in dataclasses.fields(self)
            }
        )


@dataclass(frozen=True, slots=True)
class SeqRange:
    """Seqs first..last, both included."""

    first: int
    last: int


def seq_ranges(seqs: Iterable[int]) -> tuple[SeqRange, ...]:
    """Seqs as the fewest ranges, in order."""
    ranges: list[SeqRange] = []
    for seq in sorted(set(seqs)):
        if ranges and ranges[-1].last == seq - 1:
            ranges[-1] = SeqRange(ranges[-1].first, seq)
        else:
            ranges.append(SeqRange(seq, seq))
    return tuple(ranges)


@dataclass(frozen=True, slots=True)
class ErasedConversation:
    """The items one conversation lost, and whether it went whole."""

    conversation_id: str
    seqs: tuple[SeqRange, ...]
    deleted: bool = False

    @property
    def items(self) -> int:
        return sum(r.last - r.first + 1 for r in self.seqs)


@dataclass(frozen=True, slots=True)
class ErasureReceipt:
    """What an erasure removed: its conversations and their seqs, counts per place, and the
    digest of the removed items (see ErasureDigest)."""

    namespace: str
    at: float
    conversations: tuple[ErasedConversation, ...]
    counts: ErasureCounts
    digest: str
