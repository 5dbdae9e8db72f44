"""A server on PostgreSQL while the database crashes and comes back: calls answer UNAVAILABLE
meanwhile (never INTERNAL, never a partial answer), the server reconnects by itself, and what
was acknowledged is all there. One server per database, until replicas keep their windows
in step."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from conftest import StartService
from contextwm.adapters.postgres.database import StoreInUse
from contextwm_client import Client, UnavailableError
from postgres_server import PostgresServer


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
        calls: dict[str, Callable[[], object]] = {
            "append": lambda: client.append("c", "written while the database is down"),
            "context": lambda: client.get_context("c", "walrus", max_tokens=500),
            "search": lambda: client.search("walrus", conversation_id="c"),
            "list": lambda: client.list_items("c"),
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
        # No restart of the server: its pool reconnects on the next call.
        seq = client.append("c", "written after the database came back").seq
        assert seq == acknowledged[-1] + 1
        items = client.list_items("c").entries
        assert [i.seq for i in items] == [*acknowledged, seq]
        hits = client.search("walrus", conversation_id="c", include_window=True, mode="lexical")
        assert {h.seq for h in hits.hits} == set(acknowledged)


def test_a_second_server_on_the_same_database_is_refused_until_the_first_stops(
    start_service: StartService, database: PostgresServer
) -> None:
    store = database.create_database("shared")
    first = start_service(store=store)
    with pytest.raises(StoreInUse, match="another contextwm server serves"):
        start_service(store=store)
    with Client(f"127.0.0.1:{first.port}") as client:
        client.append("c", "kept by the first server")
    first.stop(grace=0)
    second = start_service(store=store)
    with Client(f"127.0.0.1:{second.port}") as client:
        assert [i.content for i in client.list_items("c").entries] == ["kept by the first server"]
