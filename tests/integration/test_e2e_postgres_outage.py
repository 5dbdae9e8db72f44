"""A server on PostgreSQL while the database crashes and comes back: calls answer UNAVAILABLE
meanwhile (never INTERNAL, never a partial answer) and health reports it not ready, the server
reconnects by itself, and what was acknowledged is all there."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import grpc
import psycopg
import pytest
from conftest import StartService
from contextwm_client import Client, UnavailableError
from grpc_health.v1 import health_pb2, health_pb2_grpc
from postgres_server import PostgresServer

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def readiness_becomes(port: int, status: int, within: float = 10.0) -> bool:
    """Whether the server's readiness ("" in the health service) reaches status in time."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if health.Check(health_pb2.HealthCheckRequest(service="")).status == status:
                return True
            time.sleep(0.1)
    return False


@pytest.fixture
def database() -> Iterator[PostgresServer]:
    """A cluster of the test's own: it is crashed and restarted."""
    server = PostgresServer()
    yield server
    server.close()


def test_calls_are_unavailable_while_the_database_is_down_and_work_again_after(
    start_service: StartService, database: PostgresServer
) -> None:
    service = start_service(store=database.create_database("outage"))
    with Client(f"127.0.0.1:{service.port}") as client:
        acknowledged = [client.append("c", f"note {n} about the walrus").seq for n in range(5)]
        database.stop("immediate")
        assert readiness_becomes(service.port, NOT_SERVING)
        calls: dict[str, Callable[[], object]] = {
            "append": lambda: client.append("c", "written while the database is down"),
            "search": lambda: client.search("walrus", conversation_id="c"),
            "new conversation": lambda: client.append("other", "hello"),
        }
        for name, call in calls.items():
            started = time.monotonic()
            with pytest.raises(UnavailableError) as caught:
                call()
            assert caught.value.code == "UNAVAILABLE", name
            assert "PostgreSQL" in str(caught.value) and "retry" in str(caught.value), name
            assert time.monotonic() - started < 15, name
        database.start()
        assert readiness_becomes(service.port, SERVING)
        # No restart of the server: its pool reconnects on the next call.
        seq = client.append("c", "written after the database came back").seq
        assert seq == acknowledged[-1] + 1
        items = client.list_items("c").entries
        assert [i.seq for i in items] == [*acknowledged, seq]
        hits = client.search("walrus", conversation_id="c", include_window=True, mode="lexical")
        assert {h.seq for h in hits.hits} == set(acknowledged)


# Holds an insert of an item whose text starts with SLOW for three seconds: a write in flight
# when the database goes down.
SLOW_TRIGGER = """
CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(3); RETURN NEW; END $$;
CREATE TRIGGER slow_row BEFORE INSERT ON items FOR EACH ROW
WHEN (NEW.content LIKE 'SLOW%') EXECUTE FUNCTION slow_row();
"""


def wait_for_sleeping_insert(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    deadline = time.monotonic() + 10
    while not conn.execute(
        "SELECT 1 FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
    ).fetchone():
        assert time.monotonic() < deadline, "the slow insert never started"
        time.sleep(0.02)


def test_a_call_waiting_on_a_write_the_outage_cut_is_unavailable_not_not_found(
    start_service: StartService, database: PostgresServer
) -> None:
    dsn = database.create_database("waiting")
    service = start_service(store=dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SLOW_TRIGGER)
    outcomes: dict[str, BaseException | None] = {}

    def append(name: str, text: str) -> None:
        with Client(f"127.0.0.1:{service.port}") as client:
            try:
                client.append("c", text)
                outcomes[name] = None
            except BaseException as exc:
                outcomes[name] = exc

    with Client(f"127.0.0.1:{service.port}") as client:
        client.append("c", "first")
        slow = threading.Thread(target=append, args=("slow", "SLOW item"))
        slow.start()
        with psycopg.connect(dsn, autocommit=True) as conn:
            wait_for_sleeping_insert(conn)
        waiting = threading.Thread(target=append, args=("waiting", "second"))
        waiting.start()
        # Nothing outside the server shows a call waiting for the conversation's lock: this
        # is ample for one that needs no store round trip to get there.
        time.sleep(0.5)
        database.stop("immediate")
        slow.join(30)
        waiting.join(30)
        assert isinstance(outcomes["slow"], UnavailableError), outcomes
        assert isinstance(outcomes["waiting"], UnavailableError), outcomes
        database.start()
        assert readiness_becomes(service.port, SERVING)
        assert [i.content for i in client.list_items("c").entries] == ["first"]
        assert client.append("c", "second").seq == 2


def test_readiness_follows_the_database_within_about_a_second_under_load(
    start_service: StartService, database: PostgresServer
) -> None:
    dsn = database.create_database("busy")
    service = start_service(store=dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SLOW_TRIGGER)
    target = f"127.0.0.1:{service.port}"

    def append(conversation: str) -> None:
        with Client(target) as client, contextlib.suppress(UnavailableError):
            client.append(conversation, "SLOW item")

    # Every connection of the server's pool busy with a write when the database goes down.
    writers = [threading.Thread(target=append, args=(f"c{n}",)) for n in range(8)]
    for writer in writers:
        writer.start()
    with psycopg.connect(dsn, autocommit=True) as conn:
        deadline = time.monotonic() + 20
        while conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
        ).fetchone() != (8,):
            assert time.monotonic() < deadline, "the writers never all got a connection"
            time.sleep(0.02)
    database.stop("immediate")
    # Timed from its return: the database is down by then (pg_ctl is slow on a busy machine).
    stopped = time.monotonic()
    assert readiness_becomes(service.port, NOT_SERVING)
    took = time.monotonic() - stopped
    print(f"readiness NOT_SERVING {took:.2f} s after the database stopped")
    assert took < 2.5
    for writer in writers:
        writer.join(30)
    database.start()
    assert readiness_becomes(service.port, SERVING)
