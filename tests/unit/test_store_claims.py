"""Claims of items to embed: on SQLite (one server per file) claiming is reading the pending
items; on PostgreSQL, replicas claiming at once get disjoint batches, a claim ends with the
item's vector or its release, and one whose lease ran out is claimable again."""

from __future__ import annotations

import threading
import time

from contextwm.adapters.postgres.store import PostgresStore
from stores import MODEL, RoleStore, add, make_item, new_conversation, unit_vectors

LONG = 60.0
# A lease the test lets run out: long enough that a busy machine does not run it out before
# the claims that must still see it held.
SHORT = 2.0


def claims_left(store: RoleStore) -> int:
    """Rows of the claims table (SQLite keeps none)."""
    if not isinstance(store, PostgresStore):
        return 0
    with store._read() as db:
        row = db.execute("SELECT count(*) FROM claims").fetchone()
    assert row is not None
    return int(row[0])


def fill(store: RoleStore, conversations: int, items: int) -> list[int]:
    """Conversations of pending items; returns the items' ids."""
    for c in range(conversations):
        key = new_conversation(store, f"c{c}")
        add(store, key, [make_item(s, f"text {c} {s}") for s in range(1, items + 1)])
    return [p.item_id for p in store.pending_vectors(MODEL, conversations * items + 1)]


# ---------------------------------------------------------------- both stores


def test_claiming_reads_the_pending_items(store: RoleStore) -> None:
    ids = fill(store, 2, 4)
    second = store.pending_vectors(MODEL, 10)[-1].conversation_key
    # Disjoint claims, each what the pending items were before it.
    oldest = store.pending_vectors(MODEL, 3)
    assert store.claim_pending(MODEL, 3, 0, "a", LONG) == oldest
    newest_of = store.pending_vectors_of(MODEL, second, 2)
    assert store.claim_pending_of(MODEL, second, 2, "a", LONG) == newest_of
    after = store.pending_vectors(MODEL, 1, ids[2])
    assert store.claim_pending(MODEL, 1, ids[2], "a", LONG) == after
    assert [p.item_id for p in oldest + after] == ids[:4]
    assert [p.seq for p in newest_of] == [4, 3]


def test_writing_vectors_ends_the_claim(store: RoleStore) -> None:
    fill(store, 1, 5)
    claimed = store.claim_pending(MODEL, 3, 0, "a", LONG)
    assert claims_left(store) == (3 if isinstance(store, PostgresStore) else 0)
    rows = [(p.conversation_key, p.seq) for p in claimed]
    store.put_vectors(MODEL, rows, unit_vectors(3))
    assert claims_left(store) == 0
    assert [p.seq for p in store.pending_vectors(MODEL, 10)] == [4, 5]
    assert [p.seq for p in store.claim_pending(MODEL, 10, 0, "b", LONG)] == [4, 5]


def test_a_released_claim_is_claimable_again(store: RoleStore) -> None:
    fill(store, 1, 4)
    claimed = store.claim_pending(MODEL, 2, 0, "a", LONG)
    store.release_claims("a", [p.item_id for p in claimed])
    assert store.claim_pending(MODEL, 10, 0, "b", LONG) == store.pending_vectors(MODEL, 10)


def test_releasing_all_of_an_owners_claims_leaves_the_others_alone(store: RoleStore) -> None:
    fill(store, 1, 6)
    store.claim_pending(MODEL, 2, 0, "dead", LONG)
    held = store.claim_pending(MODEL, 2, 0, "live", LONG)
    store.release_claims("dead")  # a restarted replica frees what its predecessor held
    free = [p for p in store.pending_vectors(MODEL, 10) if p not in held]
    expected = free if isinstance(store, PostgresStore) else store.pending_vectors(MODEL, 10)
    assert store.claim_pending(MODEL, 10, 0, "other", LONG) == expected


# ---------------------------------------------------------------- PostgreSQL replicas


def test_a_live_claim_is_left_to_its_owner(
    shared_stores: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = shared_stores
    ids = fill(a, 2, 3)
    key = a.pending_vectors(MODEL, 1)[0].conversation_key
    assert [p.item_id for p in a.claim_pending(MODEL, 2, 0, "a", LONG)] == ids[:2]
    assert [p.item_id for p in b.claim_pending(MODEL, 10, 0, "b", LONG)] == ids[2:]
    assert b.claim_pending(MODEL, 10, 0, "b", LONG) == []
    assert b.claim_pending_of(MODEL, key, 10, "b", LONG) == []
    # Still pending for whoever asks what is left to embed.
    assert len(b.pending_vectors(MODEL, 10)) == len(ids)


def test_claims_made_at_once_are_disjoint(
    shared_stores: tuple[PostgresStore, PostgresStore],
) -> None:
    ids = fill(shared_stores[0], 4, 150)
    claimers = [(store, f"{n}-{t}") for n, store in enumerate(shared_stores) for t in range(2)]
    got: dict[str, list[int]] = {owner: [] for _, owner in claimers}
    start = threading.Barrier(len(claimers))

    def claim(store: PostgresStore, owner: str) -> None:
        start.wait()
        cursor = 0
        while batch := store.claim_pending(MODEL, 7, cursor, owner, LONG):
            got[owner] += [p.item_id for p in batch]
            cursor = batch[-1].item_id

    threads = [threading.Thread(target=claim, args=c) for c in claimers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    claimed = [i for owned in got.values() for i in owned]
    assert sorted(claimed) == ids  # each exactly once
    assert all(got.values()), {o: len(i) for o, i in got.items()}


def test_an_expired_claim_is_claimable_again_behind_the_cursor(
    shared_stores: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = shared_stores
    ids = fill(a, 1, 6)
    dead = [p.item_id for p in a.claim_pending(MODEL, 3, 0, "dead", SHORT)]
    assert [p.item_id for p in b.claim_pending(MODEL, 10, 0, "b", LONG)] == ids[3:]
    assert b.claim_pending(MODEL, 10, ids[-1], "b", LONG) == []
    time.sleep(SHORT + 0.2)
    # b's cursor has passed them: claims that ran out are taken whatever their ids.
    assert [p.item_id for p in b.claim_pending(MODEL, 10, ids[-1], "b", LONG)] == dead
    assert a.claim_pending(MODEL, 10, 0, "dead", LONG) == []


def test_a_release_frees_items_behind_every_cursor(
    shared_stores: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = shared_stores
    ids = fill(a, 1, 4)
    a.claim_pending(MODEL, 2, 0, "a", LONG)
    b.release_claims("b", ids[:2])  # not b's: nothing happens
    assert b.claim_pending(MODEL, 10, ids[-1], "b", LONG) == []
    a.release_claims("a", ids[:2])
    assert [p.item_id for p in b.claim_pending(MODEL, 10, ids[-1], "b", LONG)] == ids[:2]


def test_a_deleted_item_takes_its_claim_along(
    shared_stores: tuple[PostgresStore, PostgresStore],
) -> None:
    a, _ = shared_stores
    fill(a, 1, 3)
    key = a.pending_vectors(MODEL, 1)[0].conversation_key
    a.claim_pending(MODEL, 10, 0, "a", LONG)
    a.delete_conversation(key)
    assert claims_left(a) == 0
