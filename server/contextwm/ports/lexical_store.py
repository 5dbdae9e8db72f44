"""The term postings of one conversation's items, which BM25 is computed from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from contextwm.domain.items import ItemFilter, ItemState


@dataclass(frozen=True, slots=True)
class TermPostings:
    """A conversation's items that contain one term: how many, and the first of them."""

    count: int  # every item of the conversation containing the term, in any state
    rows: tuple[int, ...]  # the store's row ids of up to the limit asked, oldest first
    # The same row ids in one block of memory: BM25 reads them query after query, and
    # Python ints scattered over the heap cost it more than the sums.
    array: npt.NDArray[np.int64] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "array", np.array(self.rows, dtype=np.int64))


class LexicalStore(Protocol):
    """Reads of the full-text postings; safe to call from several threads."""

    def term_postings(self, key: int, terms: Sequence[str], limit: int) -> dict[str, TermPostings]:
        """For each term, the conversation's items that contain it: how many, and the row
        ids of the first limit of them."""
        ...

    def row_items(
        self,
        key: int,
        rows: Sequence[int],
        states: Sequence[ItemState],
        flt: ItemFilter | None = None,
    ) -> dict[int, tuple[int, int]]:
        """Of these rows (from term_postings), those in these states matching flt: their
        (seq, token count) by row id."""
        ...
