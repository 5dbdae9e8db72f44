"""The namespace-wide lookups of search: each one statement over every conversation of a
namespace, so that searching a namespace costs a few queries however many it holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from contextwm.domain.items import Item, ItemFilter, ItemState
from contextwm.ports.embedder import Vectors
from contextwm.ports.lexical_store import TermPostings

# An item across conversations: (conversation key, seq).
ItemKey = tuple[int, int]


@dataclass(frozen=True, slots=True)
class PostingRow:
    """An item found by a term: where it is, and its length for BM25."""

    key: int
    seq: int
    tokens: int


@dataclass(frozen=True, slots=True)
class NamespaceVectors:
    """Every stored vector of one model in a namespace, row by row."""

    keys: npt.NDArray[np.int64]
    seqs: npt.NDArray[np.int64]
    vectors: Vectors


class NamespaceStore(Protocol):
    """Durable reads over a namespace's conversations; safe to call from several threads."""

    def namespace_postings(
        self, namespace: str, terms: Sequence[str], limit: int
    ) -> dict[str, TermPostings]:
        """For each term, the namespace's items that contain it, as term_postings gives them
        for one conversation: how many, and the row ids of up to limit of them (the first in
        row order). The count of a term in more than limit items may include other
        namespaces' (SQLite reads it from the full-text index of the whole store; PostgreSQL
        counts the namespace's exactly); it is never below limit + 1."""
        ...

    def namespace_totals(self, namespace: str) -> tuple[int, int]:
        """(items, summed token counts) of the namespace, every state counted: BM25's
        collection size and mean item length."""
        ...

    def posting_rows(
        self, rows: Sequence[int], states: Sequence[ItemState], flt: ItemFilter | None = None
    ) -> dict[int, PostingRow]:
        """Of these rows (from namespace_postings), those in these states matching flt."""
        ...

    def present_items(
        self, items: Sequence[ItemKey], states: Sequence[ItemState], flt: ItemFilter | None = None
    ) -> set[ItemKey]:
        """Those of these items that exist, are in these states and match flt."""
        ...

    def namespace_filtered(
        self, namespace: str, flt: ItemFilter, states: Sequence[ItemState], limit: int
    ) -> list[ItemKey]:
        """Items of the namespace (up to limit) in these states that match the filter, in
        no order callers may rely on (SQLite's follows its plan: by conversation, state and
        seq, or by conversation and time when the filter bounds the time; PostgreSQL's is
        always the first): callers take them as a set."""
        ...

    def namespace_items(self, items: Sequence[ItemKey]) -> dict[ItemKey, Item]:
        """These items, where they exist."""
        ...

    def namespace_vectors(self, namespace: str, model: str) -> NamespaceVectors:
        """Every stored vector of model of the namespace's items that are not reverted."""
        ...

    def vector_marks(self, namespace: str) -> dict[int, int]:
        """Per conversation of the namespace, a mark that grows with every vector write of
        any server sharing the store; empty from a store one server uses, whose writers tell
        the namespace's index themselves."""
        ...

    def vectors_since(
        self, namespace: str, model: str, marks: Mapping[int, int]
    ) -> NamespaceVectors:
        """Vectors of model of these conversations' items that are not reverted, written
        after each conversation's mark (from vector_marks)."""
        ...


class NearestVectors(Protocol):
    """Exact inner-product search over the stored vectors of a namespace's items. The result
    may name items since removed or in any state: callers check them with present_items."""

    def nearest(
        self,
        namespace: str,
        query: npt.NDArray[np.float32],
        k: int,
        allowed: Sequence[ItemKey] | None = None,
    ) -> list[tuple[ItemKey, float]]:
        """The k items (among allowed, when given) most similar to query, best first."""
        ...

    def vectors(
        self, namespace: str, items: Sequence[ItemKey]
    ) -> dict[ItemKey, npt.NDArray[np.float32]]:
        """The stored vectors of those of these items that have one."""
        ...
