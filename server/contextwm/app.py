"""Start-up and shutdown: listens first (health probes answer), then builds every resource
from the settings, then reports ready."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from contextwm.adapters.embedder_process import ProcessEmbedder
from contextwm.adapters.faiss_index import FaissIndexFiles
from contextwm.adapters.sqlite import SqliteStore
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.adapters.workspace import Workspaces
from contextwm.conversations.engine import ContextEngine
from contextwm.datadir.layout import DataDir
from contextwm.datadir.lock import DataDirLock
from contextwm.datadir.startup import refuse_unusable
from contextwm.indexing.indexer import Indexer
from contextwm.ports.embedder import Embedder
from contextwm.reembedding.reembedder import Reembedder
from contextwm.settings import ServerSettings
from contextwm.transport.server import GrpcServer

log = logging.getLogger(__name__)


def make_embedder(kind: str) -> Embedder:
    """The embedder a setting names: the bundled MiniLM model, or a hashing one for tests."""
    if kind == "hashing":
        from contextwm.adapters.embedder_fake import HashingEmbedder

        return HashingEmbedder()
    from contextwm.adapters.embedder_st import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@dataclass
class Service:
    """A running contextwm: store, engine, indexer and gRPC server."""

    settings: ServerSettings
    store: SqliteStore
    engine: ContextEngine
    indexer: Indexer
    server: GrpcServer
    port: int
    lock: DataDirLock
    reembedder: Reembedder
    # The indexer's embedder when it runs in a child process (settings.indexer_process).
    batch_embedder: ProcessEmbedder | None = None

    @classmethod
    def start(cls, settings: ServerSettings, *, embedder: Embedder | None = None) -> Service:
        """Listens, then builds everything and reports ready: `listen(settings).load(embedder)`.

        Args:
            settings: the server settings.
            embedder: an already loaded embedder to share (tests load the model once).

        Raises:
            DataDirInUse: another server runs on the data directory.
            UnusableStore: the store file is damaged or missing where it should be; nothing
                was written to it.
        """
        return cls.listen(settings).load(embedder)

    @classmethod
    def listen(cls, settings: ServerSettings) -> Listening:
        """Takes the data directory, checks its store, then binds and starts the gRPC server:
        health probes answer from here on, while the model loads (see `Listening.load`).

        Raises:
            DataDirInUse: another server runs on the data directory.
            UnusableStore: the store file is damaged or missing where it should be; nothing
                was written to it.
            OSError: the address cannot be bound.
        """
        data = DataDir(settings.data_dir)
        data.root.mkdir(parents=True, exist_ok=True)
        lock = DataDirLock.take(data)
        try:
            # First, before anything listens or the model loads: a refusal comes at once.
            refuse_unusable(data)
            server = GrpcServer(
                workers=settings.workers, max_message_bytes=settings.max_message_bytes
            )
            address = (
                f"unix:{settings.socket}" if settings.socket else f"{settings.host}:{settings.port}"
            )
            port = server.bind(address)
            server.start()
        except BaseException:
            lock.release()
            raise
        where = address if settings.socket else f"{settings.host}:{port}"
        log.info(
            "contextwm listening on %s (data in %s); loading the model", where, settings.data_dir
        )
        return Listening(settings, data, lock, server, port)

    @classmethod
    def _build(cls, listening: Listening, embedder: Embedder | None) -> Service:
        import faiss

        settings, data = listening.settings, listening.data
        # One thread per search: for a single query vector FAISS's OpenMP split costs more
        # than it gains (measured 14.5 ms with 2 threads against 5.5 ms with 1 at 100k items).
        faiss.omp_set_num_threads(1)
        batch_embedder = None
        store = None
        try:
            if settings.indexer_process and settings.embedder == "minilm":
                # Started first: the child loads its model while this process loads its own.
                batch_embedder = ProcessEmbedder(niceness=settings.indexer_niceness)
            embedder = embedder or make_embedder(settings.embedder)
            # Warm up what loads lazily, so the first request does not pay for it (about 1 s).
            embedder.embed(["warm-up"])
            token_counter(settings.conversation.encoding).count("warm-up")
            store = SqliteStore(data.store, synchronous=settings.sqlite_synchronous)
            engine = ContextEngine(
                store,
                embedder,
                FaissIndexFiles(data.index_dir(embedder.model_name), embedder.dimension),
                token_counter,
                defaults=settings.conversation,
                limits=settings.limits,
                index_wait_seconds=settings.index_wait_seconds,
                models=settings.models,
                event_retention_seconds=settings.event_retention_seconds,
                workspaces=Workspaces(settings.workspace_root, settings.workspace_allowed_roots),
            )
            if batch_embedder is not None:
                batch_embedder.ready()
                if batch_embedder.model_name != embedder.model_name:
                    raise RuntimeError(
                        f"the embedding process loaded {batch_embedder.model_name!r},"
                        f" the server {embedder.model_name!r}"
                    )
        except BaseException:
            if batch_embedder is not None:
                batch_embedder.close()
            if store is not None:
                store.close()
            raise
        indexer = Indexer(
            engine,
            batch_size=settings.indexer_batch_size,
            save_interval=settings.index_save_seconds,
            embedder=batch_embedder,
            busy_duty=settings.indexer_busy_duty,
        )
        indexer.start()
        reembedder = Reembedder(
            engine,
            batch_embedder or embedder,
            batch_size=settings.indexer_batch_size,
            # Only to delete files: the other model's dimension does not matter.
            index_files_of=lambda model: FaissIndexFiles(
                data.index_dir(model), embedder.dimension, create=False
            ),
        )
        listening.server.serve(engine, reembedder)
        log.info("contextwm ready")
        return cls(
            settings,
            store,
            engine,
            indexer,
            listening.server,
            listening.port,
            listening.lock,
            reembedder,
            batch_embedder,
        )

    def stop(self, grace: float | None = None) -> None:
        """Stops a re-embed after its batch in hand, drains calls in flight, stops the
        indexer, saves indexes, closes the store, and lets go of the data directory."""
        # First: a re-embed may run for long, and would hold the grace period to the end.
        self.reembedder.stop()
        self.server.stop(self.settings.grace_seconds if grace is None else grace)
        self.indexer.stop()
        if self.batch_embedder is not None:
            self.batch_embedder.close()
        self.store.close()
        self.lock.release()


@dataclass
class Listening:
    """A start half done: the data directory is locked and its store checked, and the server
    listens; health reports live but not ready, and ContextService calls are refused
    UNAVAILABLE until `load` has built the rest."""

    settings: ServerSettings
    data: DataDir
    lock: DataDirLock
    server: GrpcServer
    port: int

    def load(self, embedder: Embedder | None = None) -> Service:
        """Loads the model, opens the store, starts the indexer, then reports ready.

        Args:
            embedder: an already loaded embedder to share (tests load the model once).
        """
        try:
            return Service._build(self, embedder)
        except BaseException:
            self.abandon()
            raise

    def abandon(self) -> None:
        """Stops listening and lets go of the data directory, without serving."""
        self.server.stop(0)
        self.lock.release()
