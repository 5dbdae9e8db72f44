"""What servers sharing one PostgreSQL store agree on through it: a conversation held by one
is waited for by the others, its version moves with every hold that wrote, background work is
done by one at a time, and a namespace's vector index learns what the others embedded."""

from __future__ import annotations

import threading
import time

import pytest
from contextwm.adapters.faiss_index import FaissIndex
from contextwm.adapters.postgres.store import PostgresStore
from contextwm.conversations.namespace_index import NamespaceIndex
from contextwm.domain.conversations import ConversationSettings
from stores import MODEL, T0, add, make_item, unit_vectors


def test_a_hold_that_wrote_moves_the_version_and_one_that_did_not_leaves_it(
    shared_stores: tuple[PostgresStore, PostgresStore],
) -> None:
    one, other = shared_stores
    key = one.create_conversation("ns", "c", ConversationSettings(), T0).key
    assert one.version(key) == other.version(key) == 0
    with one.hold(key) as held:
        assert held.version == 0
        add(one, key, [make_item(1)])
        # Reentrant, and its writes join the outer hold's transaction: not yet visible.
        with one.hold(key) as inner:
            assert inner is held
            one.set_flags(key, 1, make_item(1).flags)
        assert other.get_items(key, [1]) == {}
    assert held.version == 1
    assert other.version(key) == 1 and other.get_items(key, [1])[1].seq == 1
    with one.hold(key) as held:
        one.get_items(key, [1])
    assert held.version == 1 == other.version(key)
    assert other.version(key + 1000) is None
    with other.hold(key + 1000) as missing:
        assert missing.version is None


def test_a_failed_hold_commits_none_of_its_writes(
    shared_stores: tuple[PostgresStore, PostgresStore],
) -> None:
    one, other = shared_stores
    key = one.create_conversation("ns", "c", ConversationSettings(), T0).key
    with pytest.raises(RuntimeError, match="boom"), one.hold(key):
        add(one, key, [make_item(1)])
        raise RuntimeError("boom")
    assert other.get_items(key, [1]) == {} and other.version(key) == 0


def test_a_second_server_waits_for_the_hold_and_then_sees_its_writes(
    shared_stores: tuple[PostgresStore, PostgresStore],
) -> None:
    one, other = shared_stores
    key = one.create_conversation("ns", "c", ConversationSettings(), T0).key
    inside = threading.Event()
    seen: list[tuple[int | None, list[int]]] = []

    def second() -> None:
        inside.wait(10)
        with other.hold(key) as held:
            seen.append((held.version, sorted(other.get_items(key, [1, 2]))))

    thread = threading.Thread(target=second)
    thread.start()
    with one.hold(key):
        add(one, key, [make_item(1)])
        inside.set()
        time.sleep(0.3)  # the other server's hold waits meanwhile
        assert seen == []
        add(one, key, [make_item(2)])
    thread.join(10)
    assert seen == [(1, [1, 2])]


def test_background_work_is_done_by_one_server_at_a_time(
    shared_stores: tuple[PostgresStore, PostgresStore],
) -> None:
    one, other = shared_stores
    with one.exclusively("retention") as mine:
        assert mine
        with other.exclusively("retention") as theirs:
            assert not theirs
        with other.exclusively("reembed") as theirs:
            assert theirs  # other work is not held up
    with other.exclusively("retention") as theirs:
        assert theirs


def test_a_namespace_index_catches_up_on_what_another_server_embedded(
    shared_stores: tuple[PostgresStore, PostgresStore],
) -> None:
    writer, reader = shared_stores
    a = writer.create_conversation("ns", "a", ConversationSettings(), T0).key
    b = writer.create_conversation("ns", "b", ConversationSettings(), T0).key
    for key in (a, b):
        add(writer, key, [make_item(s) for s in range(1, 5)])
    vectors = unit_vectors(8)
    writer.put_vectors(MODEL, [(a, 1), (a, 2)], vectors[:2])
    index = NamespaceIndex(reader, lambda: FaissIndex(8), MODEL)
    assert [item for item, _ in index.nearest("ns", vectors[0], 10)] == [(a, 1), (a, 2)]
    # Written by the other server: this one's index learns them before its next search.
    with writer.hold(b):
        writer.put_vectors(MODEL, [(b, 3)], vectors[2:3])
    writer.put_vectors(MODEL, [(a, 1)], vectors[3:4])  # replaced, not held twice
    found = index.nearest("ns", vectors[2], 10)
    assert found[0][0] == (b, 3)
    assert sorted(item for item, _ in found) == [(a, 1), (a, 2), (b, 3)]
    assert index.vectors("ns", [(a, 1)])[(a, 1)].tolist() == vectors[3].tolist()
    writer.delete_conversation(b)
    assert sorted(item for item, _ in index.nearest("ns", vectors[2], 10)) == [(a, 1), (a, 2)]
