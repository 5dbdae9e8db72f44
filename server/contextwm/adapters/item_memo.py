"""Archived items kept in memory after a read: a query's best hits, their words' rows and
their vectors are read again query after query, and each read from the store costs more
than the ranking around it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from contextwm.domain.items import Item, ItemState

# Only items in these states are kept: they change only by the writes that call forget(),
# while a window item is archived by every append that evicts it. Any item's vector is
# kept, with its model: an item gets no second vector of the server's model, and a re-embed
# writes the server's model's over another's, which the server never asks for.
KEPT_STATES = frozenset({ItemState.ARCHIVED, ItemState.COMPACTED})
# What the memo may hold, in characters of content (a row counts ROW_COST): about this many
# bytes of memory, for the conversations read last.
MAX_CHARS = 32 * 1024 * 1024
ITEM_COST = 200  # an item's fields besides its content
ROW_COST = 100

Row = tuple[int, int, ItemState]  # an item's (seq, token count, state) by its row id
Vector = npt.NDArray[np.float32]
T = TypeVar("T")


@dataclass(slots=True)
class _Conversation:
    items: dict[int, Item] = field(default_factory=dict)
    rows: dict[int, Row] = field(default_factory=dict)
    vectors: dict[str, dict[int, Vector]] = field(default_factory=dict)  # by model, then seq
    chars: int = 0


class ItemMemo:
    """Items, full-text rows and vectors by conversation key, least recently read conversation
    dropped first. Thread-safe.

    A writer that changes an item already archived calls forget() after its commit; a
    reader takes `generation` before it reads the store and passes it to keep(), which
    drops what it read if a change was committed meanwhile (its snapshot may predate it).
    """

    def __init__(self, max_chars: int = MAX_CHARS) -> None:
        self._max = max_chars
        self._conversations: OrderedDict[int, _Conversation] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.generation = 0

    def items(self, key: int, seqs: Sequence[int]) -> tuple[dict[int, Item], list[int]]:
        """The kept items of these seqs, and the seqs not kept."""
        memo = self._read(key)
        return _split(memo.items if memo else {}, seqs)

    def rows(self, key: int, rows: Sequence[int]) -> tuple[dict[int, Row], list[int]]:
        """The kept rows of these row ids, and the row ids not kept."""
        memo = self._read(key)
        return _split(memo.rows if memo else {}, rows)

    def vectors(
        self, key: int, model: str, seqs: Sequence[int]
    ) -> tuple[dict[int, Vector], list[int]]:
        """The kept vectors of these items by model, and the seqs not kept."""
        memo = self._read(key)
        return _split(memo.vectors.get(model, {}) if memo else {}, seqs)

    def _read(self, key: int) -> _Conversation | None:
        with self._lock:
            memo = self._conversations.get(key)
            if memo is not None:
                self._conversations.move_to_end(key)
            return memo

    def keep(
        self,
        key: int,
        generation: int,
        items: Iterable[Item] = (),
        rows: Mapping[int, Row] | None = None,
        vectors: tuple[str, Mapping[int, Vector]] | None = None,
    ) -> None:
        """Keeps what a read that began at `generation` found, unless a change was committed
        since; only items and rows in KEPT_STATES. vectors: (model, vectors by seq)."""
        with self._lock:
            if generation != self.generation:
                return
            memo = self._conversations.get(key)
            if memo is None:
                memo = self._conversations[key] = _Conversation()
            self._conversations.move_to_end(key)
            added = 0
            for item in items:
                if item.state in KEPT_STATES and item.seq not in memo.items:
                    memo.items[item.seq] = item
                    added += len(item.content) + ITEM_COST
            for row, value in (rows or {}).items():
                if value[2] in KEPT_STATES and row not in memo.rows:
                    memo.rows[row] = value
                    added += ROW_COST
            if vectors is not None:
                model, by_seq = vectors
                kept = memo.vectors.setdefault(model, {})
                for seq, vector in by_seq.items():
                    if seq not in kept:
                        kept[seq] = vector
                        added += vector.nbytes
            memo.chars += added
            self._chars += added
            while self._chars > self._max and self._conversations:
                _, dropped = self._conversations.popitem(last=False)
                self._chars -= dropped.chars

    def forget(self, key: int) -> None:
        """Drops a conversation's items, rows and vectors: call after a commit that changed
        any of its archived or compacted items or any vector (or deleted the conversation)."""
        with self._lock:
            self.generation += 1
            dropped = self._conversations.pop(key, None)
            if dropped is not None:
                self._chars -= dropped.chars


def _split(kept: Mapping[int, T], keys: Sequence[int]) -> tuple[dict[int, T], list[int]]:
    """The kept values of these keys, and the keys without one. kept may gain entries
    meanwhile (another thread's keep): single lookups are safe, iterating it would not be."""
    out: dict[int, T] = {}
    missing: list[int] = []
    for k in keys:
        value = kept.get(k)
        if value is None:
            missing.append(k)
        else:
            out[k] = value
    return out, missing
