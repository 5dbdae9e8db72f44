"""Two replicas on one PostgreSQL database behind gRPC's round-robin balancing: a write
acknowledged by one is read by the other at once, and concurrent appends through both keep
one conversation exactly as one server would."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest
from contextwm_client import Client, ConversationSettings, ScoringWeights
from postgres_server import PostgresServer
from server_process import ServerProcess

pytestmark = pytest.mark.slow

WINDOW = 10


@pytest.fixture(scope="module")
def replicas(
    tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer
) -> Iterator[list[ServerProcess]]:
    """Two server processes on one new database, shared by this module's tests (each uses
    conversations of its own): starting them is most of the time these tests take."""
    dsn = postgres.create_database(f"replicas{uuid.uuid4().hex}")
    root = tmp_path_factory.mktemp("replicas")
    started: list[ServerProcess] = []
    try:
        for n in range(2):
            started.append(
                ServerProcess(
                    root / f"replica{n}",
                    "--store",
                    dsn,
                    "--log-level",
                    "debug",  # a line per call: which replica served what
                    env={"CONTEXTWM_INDEXER_PROCESS": "false"},
                )
            )
        yield started
    finally:
        for server in started:
            server.kill()


def balanced(replicas: list[ServerProcess]) -> Client:
    """A client whose calls go to the replicas in turn."""
    target = "ipv4:" + ",".join(f"127.0.0.1:{r.port}" for r in replicas)
    return Client(target, channel_options=[("grpc.lb_policy_name", "round_robin")])


def test_a_write_acknowledged_by_one_replica_is_read_by_the_other_at_once(
    replicas: list[ServerProcess],
) -> None:
    clients = [Client(f"127.0.0.1:{r.port}") for r in replicas]
    try:
        clients[0].create_conversation("c", settings=ConversationSettings(window_max_items=WINDOW))
        for n in range(1, 25):
            # Written through one replica, read at once through the other, then the other way.
            writer, reader = clients[n % 2], clients[(n + 1) % 2]
            word = f"zebra{n:03d}"
            assert writer.append("c", f"note {n}: the code word is {word}").seq == n
            assert [i.seq for i in reader.list_items("c", page_size=1000).entries][-1] == n
            hits = reader.search(word, conversation_id="c", include_window=True, mode="lexical")
            assert [h.seq for h in hits.hits] == [n]
            context = reader.get_context("c", word, max_tokens=2000)
            assert n in {i.item.seq for i in (*context.recent, *context.history)}
            assert reader.get_active_context("c").entries[-1].seq == n
            assert reader.get_conversation("c").window.item_count == min(n, WINDOW)
    finally:
        for client in clients:
            client.close()


def test_concurrent_appends_through_both_replicas_keep_one_order_and_one_window(
    replicas: list[ServerProcess],
) -> None:
    # Recency alone decides evictions: the window is the newest WINDOW items of the order the
    # appends were acknowledged in, as one server would keep it.
    settings = ConversationSettings(
        window_max_items=WINDOW, weights=ScoringWeights(recency=1.0, similarity=0.0)
    )
    with balanced(replicas) as client:
        client.create_conversation("shared", settings=settings)
    acknowledged: dict[int, str] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        try:
            with balanced(replicas) as client:
                for n in range(25):
                    text = f"writer {w} item {n}"
                    seq = client.append("shared", text).seq
                    with lock:
                        assert seq not in acknowledged, seq
                        acknowledged[seq] = text
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert errors == []
    assert sorted(acknowledged) == list(range(1, 201))  # unique and gapless
    for replica in replicas:
        with Client(f"127.0.0.1:{replica.port}") as client:
            items = client.list_items("shared", page_size=1000).entries
            assert {i.seq: i.content for i in items} == acknowledged
            window = [i.seq for i in items if i.state == "window"]
            assert window == list(range(201 - WINDOW, 201))
            assert all(i.state == "archived" for i in items if i.seq <= 200 - WINDOW)
    # The balancer spread the appends over both replicas.
    served = [sum("/Append " in line for line in r.output) for r in replicas]
    assert min(served) >= 50, served


def test_a_namespace_search_on_one_replica_finds_what_the_other_archived_and_embedded(
    replicas: list[ServerProcess],
) -> None:
    # Each replica's namespace index was built before the other wrote the items (warmed by a
    # first search); it catches up on the vectors the other stored, through the store.
    a, b = (Client(f"127.0.0.1:{r.port}", namespace="catch-up") for r in replicas)
    try:
        a.create_conversation("seed", settings=ConversationSettings(window_max_items=2))
        for n in range(4):
            a.append("seed", f"seed note {n} about rowing")
        a.search("rowing", conversation_id="seed", mode="dense")  # waits until embedded
        assert b.search("rowing", mode="dense").hits  # b's namespace index exists now
        a.create_conversation("late", settings=ConversationSettings(window_max_items=2))
        for n in range(6):  # four of them archived
            a.append("late", f"late note {n}: the walrus prefers cold water")
        a.search("walrus", conversation_id="late", mode="dense")  # waits until embedded
        hits = b.search("walrus cold water", mode="dense", top_k=10).hits
        assert {(h.item.conversation_id, h.item.seq) for h in hits} >= {
            ("late", s) for s in range(1, 5)
        }
    finally:
        a.close()
        b.close()
