"""Items and helpers the store tests share, and the stores they run on: every test of a role
runs on SQLite and on PostgreSQL (a real server the tests start), which must behave alike."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
import pytest
from contextwm.adapters.postgres.store import PostgresStore
from contextwm.adapters.sqlite import SqliteStore
from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.items import FileRef, Flag, Item, ItemFilter, ItemState
from contextwm.ports.store import Store
from contextwm.retrieval.ranking import bm25, matched_idf

STORES = ("sqlite", "postgresql")
MODEL = "test-model"
W, A = ItemState.WINDOW, ItemState.ARCHIVED
BOTH = (W, A)
T0 = 1_700_000_000.0


# Every role of the store: the tests of each role run on both stores.
RoleStore = Store


def open_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> RoleStore:
    """A new, empty store of this kind."""
    if kind == "sqlite":
        return SqliteStore(tmp_path / "store.db")
    return PostgresStore(request.getfixturevalue("pg_dsn"))


def make_item(
    seq: int,
    content: str = "",
    *,
    role: str = "user",
    ts: float | None = None,
    tokens: int = 3,
    flags: Flag = Flag.NONE,
    metadata: dict[str, str] | None = None,
    file: FileRef | None = None,
    conversation_id: str = "c1",
) -> Item:
    return Item(
        conversation_id=conversation_id,
        seq=seq,
        role=role,
        content=content or f"item number {seq}",
        timestamp=T0 + seq if ts is None else ts,
        token_count=tokens,
        flags=flags,
        metadata=MappingProxyType(metadata or {}),
        file=file,
        state=W,
    )


def add(
    store: RoleStore,
    key: int,
    items: Sequence[Item],
    evicted: Sequence[int] = (),
    idems: Sequence[str | None] | None = None,
) -> None:
    store.commit_append(
        key, items, idems if idems is not None else [None] * len(items), evicted, 1000, "general"
    )


def new_conversation(store: RoleStore, cid: str = "c1", ns: str = "default") -> int:
    return store.create_conversation(ns, cid, ConversationSettings(), T0).key


def set_states(store: RoleStore, key: int, seqs: Sequence[int], state: ItemState) -> None:
    """Puts these items in this state directly, as compaction and restore would (with the
    other rows those write)."""
    if isinstance(store, PostgresStore):
        with store._transaction() as pg:
            pg.execute(
                "UPDATE items SET state = %s WHERE conv = %s AND seq = ANY(%s)",
                (int(state), key, list(seqs)),
            )
        return
    assert isinstance(store, SqliteStore)
    with store._transaction(changes=key) as db:
        db.execute(
            f"UPDATE items SET state = ? WHERE conv = ? AND seq IN ({','.join('?' * len(seqs))})",
            (int(state), key, *seqs),
        )


def search(
    store: RoleStore,
    key: int,
    *terms: str,
    states: Sequence[ItemState] = BOTH,
    flt: ItemFilter | None = None,
    limit: int = 50,
) -> list[int]:
    """Items holding any of the terms, ranked by BM25 as the engine ranks them."""
    postings = store.term_postings(key, terms, limit)
    weights = matched_idf(postings, items=1000)
    scores = bm25(weights, store.row_items(key, list(weights), states, flt), mean_tokens=10.0)
    return sorted(scores, key=lambda seq: (-scores[seq], seq))


def listed(
    store: RoleStore,
    key: int,
    term: str,
    states: Sequence[ItemState] = BOTH,
    limit: int = 10,
    flt: ItemFilter | None = None,
) -> list[int]:
    """The seqs of the items term_postings lists for a term, in these states matching flt."""
    rows = store.term_postings(key, [term], limit)[term].rows
    found = store.row_items(key, rows, states, flt)
    return [found[r][0] for r in rows if r in found]


def unit_vectors(n: int, dim: int = 8, seed: int = 0) -> npt.NDArray[np.float32]:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    out: npt.NDArray[np.float32] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out
