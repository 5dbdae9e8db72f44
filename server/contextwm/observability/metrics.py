"""One Service's metrics: a registry of its own (tests run many servers in one process, so
never the process-wide default) and the HTTP server that exposes it."""

from __future__ import annotations

import logging
import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server

from contextwm.conversations.engine import ContextEngine
from contextwm.indexing.stats import EmbeddingStats
from contextwm.observability.calls import CallMetrics
from contextwm.observability.collector import ServiceCollector

log = logging.getLogger(__name__)


class Metrics:
    """Serves /metrics from `start` on; the service's state is added by `watch` once the
    engine is built, so that call counts are there while the model still loads."""

    def __init__(
        self, registry: CollectorRegistry, httpd: WSGIServer, thread: threading.Thread
    ) -> None:
        self.registry = registry
        self._calls = CallMetrics(registry)
        self._httpd = httpd
        self._thread = thread

    @classmethod
    def start(cls, host: str, port: int) -> Metrics:
        """Binds host:port (0 picks a free port) and serves the metrics from a thread.

        Raises:
            OSError: the address cannot be bound.
        """
        registry = CollectorRegistry()
        # Memory, CPU and open files of the process: what a sidecar running for weeks leaks.
        ProcessCollector(registry=registry)
        try:
            httpd, thread = start_http_server(port, host, registry)
        except OSError as exc:
            raise OSError(f"metrics cannot listen on {host}:{port}: {exc.strerror}") from None
        metrics = cls(registry, httpd, thread)
        log.info("contextwm metrics on http://%s:%d/metrics", host, metrics.port)
        return metrics

    @property
    def port(self) -> int:
        return int(self._httpd.server_port)

    def observe_call(self, method: str, code: str, seconds: float, key_id: str | None) -> None:
        """One finished ContextService call (the transport's CallObserver)."""
        self._calls.observe(method, code, seconds, key_id)

    def watch(self, engine: ContextEngine, embedding: EmbeddingStats) -> None:
        """Adds the engine's and the indexer's figures, read at each scrape."""
        self.registry.register(ServiceCollector(engine, embedding))

    def stop(self) -> None:
        """Closes the port; a scrape in progress may still finish."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
