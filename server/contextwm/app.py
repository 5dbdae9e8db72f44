"""Start-up and shutdown: listens first (health probes answer), then builds every resource
from the settings (the one place that does), then reports ready."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from contextwm.access.guard import Guard
from contextwm.access.keys import Keys
from contextwm.access.quotas import KeyQuotas
from contextwm.access.streams import OpenStreams
from contextwm.adapters.code_definitions import TreeSitterDefinitions
from contextwm.adapters.embedder_process import ProcessEmbedder
from contextwm.adapters.embedders import make_embedder
from contextwm.adapters.faiss_index import FaissIndexFiles
from contextwm.adapters.main_thread import MainThread
from contextwm.adapters.sqlite import SqliteStore
from contextwm.adapters.tokens_bpe import ShortCountCache, token_counter
from contextwm.adapters.workspace import Workspaces
from contextwm.agent_loop.loop import AgentLoop
from contextwm.budgets.context import CategoryContexts
from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.imports import Imports
from contextwm.datadir.layout import DataDir
from contextwm.datadir.lock import DataDirLock
from contextwm.datadir.replica import replica_name
from contextwm.datadir.startup import refuse_unusable
from contextwm.erasure.service import Erasure
from contextwm.exposure import Exposure, refusal
from contextwm.indexing.indexer import Indexer
from contextwm.inspector.listening import InspectorListening, check_address
from contextwm.observability import Metrics
from contextwm.observability.audit import AuditLog
from contextwm.ports.embedder import Embedder
from contextwm.ports.store import Store
from contextwm.reembedding.reembedder import Reembedder
from contextwm.retention.apply import Retention
from contextwm.retention.task import RetentionTask
from contextwm.retrieval.paragraph_tokens import PARAGRAPH_TOKENS
from contextwm.retrieval.retriever import Retriever
from contextwm.settings import ServerSettings, SettingsError
from contextwm.tls_files import ServerTls, load_server_tls, tls_configured
from contextwm.tool_availability.service import ToolSessions
from contextwm.transfer.service import Transfers
from contextwm.transport.access import CallAccess
from contextwm.transport.conversations.convert import ITEM_MESSAGES
from contextwm.transport.server import GrpcServer
from contextwm.transport.servicer import ContextServicer
from contextwm.transport.store_probe import StoreProbe
from contextwm.workspace_files.chunk_cache import ChunkCache
from contextwm.workspace_files.service import WorkspaceFiles
from contextwm.workspace_files.sessions import Sessions

if TYPE_CHECKING:  # OpenTelemetry is loaded only when tracing is on
    from opentelemetry.trace import TracerProvider

    from contextwm.observability.tracing import Tracing

log = logging.getLogger(__name__)


def open_store(settings: ServerSettings, data: DataDir) -> Store:
    """The store the settings name: PostgreSQL at settings.store, else the data directory's
    SQLite file.

    Raises:
        StoreUnavailable: PostgreSQL cannot be reached.
    """
    if settings.store:
        from contextwm.adapters.postgres.store import PostgresStore

        return PostgresStore(settings.store)
    return SqliteStore(data.store, synchronous=settings.sqlite_synchronous)


def open_audit_log(settings: ServerSettings) -> AuditLog | None:
    """The audit trail the settings name, opened (None: off).

    Raises:
        SettingsError: the file cannot be opened for appending.
    """
    try:
        return AuditLog.open(settings.audit_log, time.time)
    except OSError as exc:
        raise SettingsError(
            f"audit_log = {settings.audit_log!r}: cannot open it for appending: {exc.strerror}"
        ) from None


def open_tracing(
    settings: ServerSettings, provider: TracerProvider | None = None
) -> Tracing | None:
    """The tracing the settings ask for (otlp_endpoint), or that provider gives; None when
    off, and then nothing of OpenTelemetry is imported.

    Raises:
        SettingsError: otlp_endpoint is set but OpenTelemetry is not installed.
    """
    if provider is None and not settings.otlp_endpoint:
        return None
    from contextwm.observability.tracing import Tracing

    return Tracing.start(settings, provider)


def listening_tls(settings: ServerSettings) -> ServerTls | None:
    """The TLS the server listens with, once its files are checked and the address passes
    the secure-by-default rule (`contextwm.exposure`).

    A Unix socket is served in plaintext whatever the TLS settings: it reaches this machine
    only, and its file permissions say who may connect.

    Raises:
        SettingsError: The TLS settings cannot be used, or the address must not be listened
            on with the API keys and TLS the settings give.
    """
    if settings.socket:
        if tls_configured(settings) or settings.tls_client_ca_file:
            log.warning(
                "the Unix socket %s is served in plaintext: the TLS settings apply to a TCP"
                " address only",
                settings.socket,
            )
        return None
    tls = load_server_tls(settings)
    exposure = Exposure(
        host=settings.host,
        port=settings.port,
        api_keys=settings.require_api_keys,
        tls=tls is not None,
        insecure=settings.insecure,
    )
    why = refusal(exposure)
    if why is not None:
        raise SettingsError(why)
    if refusal(replace(exposure, insecure=False)) is not None:
        log.warning(
            "listening on %s without both API keys and TLS, as insecure allows: anyone on the"
            " network who reaches the port can use it",
            settings.host,
        )
    return tls


@dataclass
class Service:
    """A running contextwm: store, engine, indexer and gRPC server."""

    settings: ServerSettings
    store: Store
    engine: ContextEngine
    indexer: Indexer
    server: GrpcServer
    port: int
    lock: DataDirLock
    reembedder: Reembedder
    # The indexer's embedder when it runs in a child process (settings.indexer_process).
    batch_embedder: ProcessEmbedder | None = None
    metrics: Metrics | None = None  # when settings.metrics_port is set
    # The background run of retention (None when retention_interval_seconds is 0).
    retention_task: RetentionTask | None = None
    # Readiness that follows a database server (None on the SQLite file).
    store_probe: StoreProbe | None = None
    # Response streams under API keys, ended when their key stops working.
    key_streams: OpenStreams | None = None
    audit: AuditLog | None = None  # when settings.audit_log is set
    inspector: InspectorListening | None = None  # when settings.inspector_port is set
    tracing: Tracing | None = None  # when settings.otlp_endpoint is set (or tests trace)

    @property
    def metrics_port(self) -> int | None:
        """The port serving /metrics (the one bound when metrics_port was 0); None when off."""
        return self.metrics.port if self.metrics is not None else None

    @property
    def inspector_port(self) -> int | None:
        """The inspector's port (the one bound when inspector_port was 0); None when off."""
        return self.inspector.port if self.inspector is not None else None

    @classmethod
    def start(
        cls,
        settings: ServerSettings,
        *,
        embedder: Embedder | None = None,
        clock: Callable[[], float] = time.time,
        tracer_provider: TracerProvider | None = None,
    ) -> Service:
        """Listens, then builds everything and reports ready: `listen(settings).load(...)`.

        Args:
            settings: the server settings.
            embedder: an already loaded embedder to share (tests load the model once).
            clock: the wall clock (tests move it on to age items and conversations).
            tracer_provider: trace every call into this provider, whatever otlp_endpoint
                says (tests keep spans in memory); it stays the caller's to shut down.

        Raises:
            DataDirInUse: another server runs on the data directory.
            UnusableStore: the store file is damaged or missing where it should be; nothing
                was written to it.
        """
        return cls.listen(settings, tracer_provider=tracer_provider).load(embedder, clock)

    @classmethod
    def listen(
        cls, settings: ServerSettings, *, tracer_provider: TracerProvider | None = None
    ) -> Listening:
        """Takes the data directory, checks its store, then binds the metrics port (if
        enabled) and starts the gRPC server: health probes answer from here on, while the
        model loads (see `Listening.load`).

        Raises:
            DataDirInUse: another server runs on the data directory.
            UnusableStore: the store file is damaged or missing where it should be; nothing
                was written to it.
            StoreUnavailable: PostgreSQL cannot be reached.
            OSError: the address cannot be bound.
            SettingsError: the TLS settings cannot be used, or the address (or the
                inspector's) is not loopback and lacks API keys and TLS (see `listening_tls`
                and `inspector.listening.check_address`): nothing was created. Or the data
                directory cannot be created, or otlp_endpoint is set without OpenTelemetry
                installed.
        """
        tls = listening_tls(settings)
        check_address(settings)
        if settings.otlp_endpoint and tracer_provider is None:
            from contextwm.observability.tracing import probe

            probe()  # a missing package is refused before anything is created
        data = DataDir(settings.data_dir)
        try:
            data.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SettingsError(
                f"data_dir = '{data.root}': cannot create it: {exc.strerror}"
            ) from None
        audit = open_audit_log(settings)
        lock = DataDirLock.take(data)
        metrics = None
        store = None
        inspector = None
        tracing = None
        try:
            # First, before anything listens or the model loads: a refusal comes at once.
            if not settings.store:
                refuse_unusable(data)
            store = open_store(settings, data)
            if settings.metrics_port is not None:
                metrics = Metrics.start(settings.metrics_host, settings.metrics_port)
            tracing = open_tracing(settings, tracer_provider)
            server = GrpcServer(
                workers=settings.workers,
                max_message_bytes=settings.max_message_bytes,
                observe=metrics.observe_call if metrics is not None else None,
                audit=audit,
                tracer=tracing.tracer() if tracing is not None else None,
                trace_content=settings.trace_content,
            )
            address = (
                f"unix:{settings.socket}" if settings.socket else f"{settings.host}:{settings.port}"
            )
            port = server.bind(address, tls)
            if settings.inspector_port is not None:
                inspector = InspectorListening(settings, server)
            server.start()
        except BaseException:
            if inspector is not None:
                inspector.stop()
            if metrics is not None:
                metrics.stop()
            if store is not None:
                store.close()
            if audit is not None:
                audit.close()
            if tracing is not None:
                tracing.stop()
            lock.release()
            raise
        where = address if settings.socket else f"{settings.host}:{port}"
        security = "" if tls is None else " with mutual TLS" if tls.mutual else " with TLS"
        log.info(
            "contextwm listening on %s%s (data in %s); loading the model",
            where,
            security,
            settings.data_dir,
        )
        return Listening(
            settings, data, store, lock, server, port, metrics, audit, inspector, tracing
        )

    @classmethod
    def _build(
        cls,
        listening: Listening,
        embedder: Embedder | None,
        clock: Callable[[], float],
        main_thread: MainThread | None,
    ) -> Service:
        import faiss

        settings, data, store = listening.settings, listening.data, listening.store
        # One thread per search: for a single query vector FAISS's OpenMP split costs more
        # than it gains (measured 14.5 ms with 2 threads against 5.5 ms with 1 at 100k items).
        faiss.omp_set_num_threads(1)
        batch_embedder = None
        try:
            if settings.indexer_process and settings.embedder != "hashing":
                # Started first: the child loads its model while this process loads its own.
                batch_embedder = ProcessEmbedder(
                    settings.embedder, niceness=settings.indexer_niceness
                )
            embedder = embedder or make_embedder(settings.embedder, main_thread)
            query_embedder = None
            if settings.query_embedder not in ("", settings.embedder):
                query_embedder = make_embedder(settings.query_embedder, main_thread)
                if query_embedder.dimension != embedder.dimension:
                    raise RuntimeError(
                        f"query_embedder {query_embedder.model_name!r} makes vectors of"
                        f" {query_embedder.dimension} dimensions, the embedder"
                        f" {embedder.model_name!r} of {embedder.dimension}"
                    )
            # Warm up what loads lazily, so the first request does not pay for it (about 1 s).
            for loaded in (embedder, query_embedder):
                if loaded is not None:
                    loaded.embed(["warm-up"])
            token_counter(settings.conversation.encoding).count("warm-up")
            engine = ContextEngine(
                store,
                embedder,
                FaissIndexFiles(data.index_dir(embedder.model_name), embedder.dimension),
                token_counter,
                defaults=settings.conversation,
                limits=settings.limits,
                index_wait_seconds=settings.index_wait_seconds,
                clock=clock,
                models=settings.models,
                event_retention_seconds=settings.event_retention_seconds,
                max_loaded_conversations=settings.max_loaded_conversations,
                workspaces=Workspaces(settings.workspace_root, settings.workspace_allowed_roots),
                retention=settings.retention,
                query_embedder=query_embedder,
            )
            engine.caches["token_counts"] = ShortCountCache()
            engine.caches["paragraph_tokens"] = PARAGRAPH_TOKENS
            engine.caches["item_messages"] = ITEM_MESSAGES
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
            raise
        indexer = Indexer(
            engine,
            batch_size=settings.indexer_batch_size,
            save_interval=settings.index_save_seconds,
            embedder=batch_embedder,
            urgent_embed=(
                functools.partial(batch_embedder.embed, urgent=True) if batch_embedder else None
            ),
            busy_duty=settings.indexer_busy_duty,
            owner=replica_name(data),
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
        retention = Retention(engine)
        retention_task = None
        if settings.retention_interval_seconds > 0:
            retention_task = RetentionTask(
                retention,
                settings.retention_interval_seconds,
                store,
                None if listening.audit is None else listening.audit.retention_run,
            )
            retention_task.start()
        window = settings.context_window
        sessions = Sessions(engine)
        files = WorkspaceFiles(
            engine,
            sessions,
            ChunkCache(window.cache_bytes, TreeSitterDefinitions()),
            strategy=window.chunking_strategy,
            max_lines=window.max_lines_per_chunk,
            max_file_bytes=window.max_file_bytes,
            context_lines=window.context_lines_around_matches,
        )
        engine.caches["workspace_chunks"] = files.cache
        retriever = Retriever(engine)
        keys = Keys(store, clock)
        servicer = ContextServicer(
            engine,
            retriever,
            CategoryContexts(engine, retriever.ranking, retriever.reader),
            AgentLoop(engine),
            # The indexer's child embeds imports too: a bulk load yields the CPU to live
            # requests, and the server's own memory stays flat while it loads.
            Imports(engine.appends, engine.store, batch_embedder or embedder),
            retention,
            reembedder,
            files,
            ToolSessions(sessions, window.tools),
            Transfers(engine),
            keys,
            Erasure(
                engine,
                file_cache=files.cache,
                text_caches=[ShortCountCache(), PARAGRAPH_TOKENS, ITEM_MESSAGES],
            ),
        )
        guard = Guard(keys, required=settings.require_api_keys)
        key_streams = OpenStreams(guard)
        key_streams.start()
        quotas = KeyQuotas(
            settings.key_requests_per_second,
            settings.key_request_burst,
            settings.key_max_request_bytes,
        )
        listening.server.serve(servicer, engine.events, CallAccess(guard, key_streams, quotas))
        if listening.inspector is not None:
            listening.inspector.serve(keys, store, engine.counters)
        store_probe = None
        if settings.store:
            store_probe = StoreProbe(store, listening.server.set_ready)
            store_probe.start()
        if listening.metrics is not None:
            listening.metrics.watch(engine, indexer.stats)
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
            listening.metrics,
            retention_task,
            store_probe,
            key_streams,
            listening.audit,
            listening.inspector,
            listening.tracing,
        )

    def stop(self, grace: float | None = None) -> None:
        """Stops a re-embed after its batch in hand, drains calls in flight, stops the
        indexer, saves indexes, closes the store, closes the metrics port (last: the drain can
        be watched), and lets go of the data directory."""
        # First: a re-embed may run for long, and would hold the grace period to the end.
        self.reembedder.stop()
        if self.inspector is not None:
            self.inspector.stop()
        if self.store_probe is not None:
            self.store_probe.stop()
        self.server.stop(self.settings.grace_seconds if grace is None else grace)
        if self.key_streams is not None:
            self.key_streams.stop()
        if self.retention_task is not None:
            self.retention_task.stop()
        self.indexer.stop()
        if self.batch_embedder is not None:
            self.batch_embedder.close()
        self.store.close()
        if self.metrics is not None:
            self.metrics.stop()
        if self.audit is not None:
            self.audit.close()
        if self.tracing is not None:
            self.tracing.stop()  # after the drain: the last calls' spans go too
        self.lock.release()


@dataclass
class Listening:
    """A start half done: the data directory is locked and its store checked, and the server
    listens; health reports live but not ready, and ContextService calls are refused
    UNAVAILABLE until `load` has built the rest."""

    settings: ServerSettings
    data: DataDir
    store: Store
    lock: DataDirLock
    server: GrpcServer
    port: int
    metrics: Metrics | None = None
    audit: AuditLog | None = None
    inspector: InspectorListening | None = None
    tracing: Tracing | None = None

    def load(
        self,
        embedder: Embedder | None = None,
        clock: Callable[[], float] = time.time,
        *,
        main_thread: MainThread | None = None,
    ) -> Service:
        """Loads the model, opens the store, starts the indexer and the retention task, then
        reports ready.

        Args:
            embedder: an already loaded embedder to share (tests load the model once).
            clock: the wall clock.
            main_thread: the process's main thread, when it will serve the model's queries
                (`contextwm serve`); unused with an embedder given.
        """
        try:
            return Service._build(self, embedder, clock, main_thread)
        except BaseException:
            self.abandon()
            raise

    def abandon(self) -> None:
        """Stops listening, closes the store and lets go of the data directory, without
        serving."""
        if self.inspector is not None:
            self.inspector.stop()
        self.server.stop(0)
        if self.metrics is not None:
            self.metrics.stop()
        if self.tracing is not None:
            self.tracing.stop()
        self.store.close()
        self.lock.release()
