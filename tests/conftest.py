"""Shared fixtures: the real embedding model (loaded once), in-process servers on port 0."""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from certificates import Pki, make_pki
from contextwm.adapters.embedder_onnx import OnnxEmbedder
from contextwm.adapters.embedder_st import SentenceTransformerEmbedder
from contextwm.adapters.postgres.store import PostgresStore
from contextwm.app import Service
from contextwm.ports.embedder import Embedder
from contextwm.settings import ServerSettings
from contextwm_client import Client
from postgres_server import PostgresServer
from stores import STORES, RoleStore, open_store

if TYPE_CHECKING:  # imported by the tracing tests only
    from opentelemetry.trace import TracerProvider


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A real PostgreSQL cluster on a free loopback port, started once per test session."""
    server = PostgresServer()
    yield server
    server.close()


@pytest.fixture
def pg_dsn(postgres: PostgresServer) -> str:
    """The DSN of a new, empty database of the session's PostgreSQL."""
    return postgres.create_database(f"t{uuid.uuid4().hex}")


@pytest.fixture
def shared_stores(pg_dsn: str) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    """Two PostgreSQL stores on one new database, as two servers sharing it have them."""
    first, second = PostgresStore(pg_dsn), PostgresStore(pg_dsn)
    yield first, second
    second.close()
    first.close()


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RoleStore]:
    """A new, empty store of each kind in turn: the store-role tests run once per store
    (modules that test one store define their own `store`)."""
    made = open_store(request.param, request, tmp_path)
    yield made
    made.close()


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """Certificates for TLS tests (a CA, server and client certificates), made once."""
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def embedder() -> OnnxEmbedder:
    """The bundled all-MiniLM-L6-v2 on the default engine, loaded once per test session."""
    return OnnxEmbedder()


@pytest.fixture(scope="session")
def torch_embedder() -> SentenceTransformerEmbedder:
    """The same model on PyTorch: the reference the default engine is tested against."""
    return SentenceTransformerEmbedder()


StartService = Callable[..., Service]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Tests marked both_stores run their servers on each store in turn.
    if "store_kind" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        "both_stores"
    ):
        metafunc.parametrize("store_kind", STORES, indirect=True)


@pytest.fixture
def store_kind(request: pytest.FixtureRequest) -> str:
    """The store the test's servers keep conversations in: SQLite unless the test is marked
    both_stores, then each in turn."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def start_service(
    tmp_path: Path,
    embedder: Embedder,
    store_kind: str,
    request: pytest.FixtureRequest,
) -> Iterator[StartService]:
    """Starts real servers on loopback port 0 with a fresh store (a SQLite file, or a new
    PostgreSQL database under both_stores); stops them afterwards.

    Keyword arguments override ServerSettings fields (conversation=..., limits=...), except
    `model`, an Embedder instance to use instead of the shared one, `clock`, the wall
    clock the server reads, and `tracer_provider`, an OpenTelemetry tracer provider that
    gets a span per call. Servers started by one test share its PostgreSQL database.
    """
    started: list[Service] = []
    store = request.getfixturevalue("pg_dsn") if store_kind == "postgresql" else ""

    def start(
        *,
        model: Embedder | None = None,
        clock: Callable[[], float] = time.time,
        tracer_provider: TracerProvider | None = None,
        **overrides: Any,
    ) -> Service:
        data_dir = overrides.pop("data_dir", tmp_path / f"data{len(started)}")
        # The shared model embeds in-process here: a child process per server would load the
        # model again for every test (the subprocess tests cover the child process).
        settings = dataclasses.replace(
            ServerSettings(
                port=0, data_dir=data_dir, store=store, grace_seconds=1.0, indexer_process=False
            ),
            **overrides,
        )
        service = Service.start(
            settings, embedder=model or embedder, clock=clock, tracer_provider=tracer_provider
        )
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop(grace=0)


@pytest.fixture
def service(start_service: StartService) -> Service:
    return start_service()


@pytest.fixture
def client(service: Service) -> Iterator[Client]:
    with Client(f"127.0.0.1:{service.port}") as c:
        yield c
