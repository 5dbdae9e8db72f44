"""The service's state read at scrape time: window fill, archive, indexes, embedding and
caches, from the plain counters the engine and the indexer keep."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.totals import LoadedTotals
from contextwm.domain.scope import Scope
from contextwm.domain.stats import StoreStats
from contextwm.indexing.stats import EmbeddingStats, EmbeddingTotals
from contextwm.ports.caches import BoundedCache
from contextwm.ports.stats_store import StatsStore

# Batch sizes are small integers (indexer_batch_size, 32 by default), kept exactly by the
# indexer: these bounds only group them for the histogram.
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
# The store's figures are counted over every item: at most once per this many seconds,
# however often the scrapes come.
STORE_FIGURES_SECONDS = 5.0
# Index vectors are float32.
BYTES_PER_DIMENSION = 4

CACHES_HELP = (
    "by cache: conversations (found in memory, else loaded from the store), token_counts"
    " (token counts of short texts, shared by the process), paragraph_tokens (token counts of"
    " the paragraphs of contexts, shared by the process), item_messages (items as response"
    " messages, shared by the process), contributor_embeddings (vectors"
    " of workspace files and docs), contributor_pieces (contributors rendered and trimmed)."
)


class ServiceCollector(Collector):
    """Reads the engine's and the indexer's counters at each scrape; costs nothing between."""

    def __init__(self, engine: ContextEngine, embedding: EmbeddingStats) -> None:
        self._engine = engine
        self._store: StatsStore = engine.store
        self._embedding = embedding
        self._stored: tuple[float, StoreStats] | None = None
        self._stored_lock = threading.Lock()

    def stored(self) -> StoreStats:
        """What the whole store holds, counted at most every STORE_FIGURES_SECONDS (most
        conversations are not in memory, so the loaded ones cannot say)."""
        with self._stored_lock:
            now = time.monotonic()
            if self._stored is None or now - self._stored[0] >= STORE_FIGURES_SECONDS:
                model = self._engine.embedder.model_name
                total = self._store.stats(Scope(), model, ("", ""), 0)
                self._stored = (now, total.total)
            return self._stored[1]

    def gauges(self, loaded: LoadedTotals, stored: StoreStats) -> list[tuple[str, str, float]]:
        """(name, help, value) of every gauge."""
        index_bytes = loaded.index_vectors * self._engine.embedder.dimension * BYTES_PER_DIMENSION
        return [
            (
                "contextwm_loaded_conversations",
                "Conversations held in memory (each loads on first use after a start); the"
                " window, index and queue figures sum over these.",
                loaded.conversations,
            ),
            ("contextwm_window_items", "Items in the windows.", loaded.window_items),
            (
                "contextwm_window_limit_items",
                "The windows' item limits, summed: window_items over this is the fill by items.",
                loaded.window_item_limit,
            ),
            ("contextwm_window_tokens", "Tokens in the windows.", loaded.window_tokens),
            (
                "contextwm_window_limit_tokens",
                "The windows' current token limits, summed: window_tokens over this is the"
                " fill by tokens.",
                loaded.window_token_limit,
            ),
            (
                "contextwm_archived_items",
                "Items in the archives of every conversation in the store, archived or"
                " compacted: out of their window, still searchable (counted at most every"
                f" {STORE_FIGURES_SECONDS:g} s).",
                stored.archived.items + stored.compacted.items,
            ),
            (
                "contextwm_index_vectors",
                "Vectors in the archive indexes loaded in memory (an index loads at its"
                " conversation's first search).",
                loaded.index_vectors,
            ),
            (
                "contextwm_index_bytes",
                "Bytes the vectors of the loaded indexes take (4 per dimension).",
                index_bytes,
            ),
            (
                "contextwm_embedding_queue_items",
                "Items waiting for their vector: appended, not embedded yet.",
                loaded.pending_vectors,
            ),
        ]

    def counters(self, embedded: EmbeddingTotals) -> list[tuple[str, str, float]]:
        """(name without _total, help, value) of every counter the core keeps; a new one is
        one more line here."""
        engine = self._engine
        return [
            (
                "contextwm_evicted_items",
                "Items evicted from a window into the archive.",
                engine.appends.evicted.value,
            ),
            (
                "contextwm_retention_removed_items",
                "Archived items removed by the retention policies.",
                engine.retention_counters.items_removed,
            ),
            (
                "contextwm_retention_removed_conversations",
                "Conversations removed whole by the retention policies (inactivity).",
                engine.retention_counters.conversations_removed,
            ),
            ("contextwm_embedded_items", "Items the indexer embedded.", embedded.items),
            (
                "contextwm_embedding_seconds",
                "Seconds the indexer spent embedding; rate(contextwm_embedded_items_total)"
                " over rate(contextwm_embedding_seconds_total) is its items per second.",
                embedded.seconds,
            ),
        ]

    def collect(self) -> Iterator[Metric]:
        embedded = self._embedding.totals()
        for name, text, value in self.gauges(self._engine.totals(), self.stored()):
            yield GaugeMetricFamily(name, text, value=value)
        for name, text, value in self.counters(embedded):
            yield CounterMetricFamily(name, text, value=value)
        yield _batch_histogram(embedded)
        hits = CounterMetricFamily(
            "contextwm_cache_hits",
            "Cache lookups that found their value, " + CACHES_HELP,
            labels=["cache"],
        )
        misses = CounterMetricFamily(
            "contextwm_cache_misses",
            "Cache lookups that had to compute or load their value, " + CACHES_HELP,
            labels=["cache"],
        )
        size = GaugeMetricFamily(
            "contextwm_cache_bytes", "Memory a cache bounded in bytes holds.", labels=["cache"]
        )
        entries = GaugeMetricFamily(
            "contextwm_cache_entries", "Entries a cache bounded in bytes holds.", labels=["cache"]
        )
        evictions = CounterMetricFamily(
            "contextwm_cache_evictions",
            "Entries a cache bounded in bytes dropped to stay within its bound.",
            labels=["cache"],
        )
        for name, cache in sorted(self._engine.caches.items()):
            hits.add_metric([name], cache.hits)
            misses.add_metric([name], cache.misses)
            if isinstance(cache, BoundedCache):
                size.add_metric([name], cache.bytes)
                entries.add_metric([name], cache.entries)
                evictions.add_metric([name], cache.evictions)
        yield from (hits, misses, size, entries, evictions)


def _batch_histogram(embedded: EmbeddingTotals) -> HistogramMetricFamily:
    buckets = [
        (str(float(bound)), sum(n for size, n in embedded.batches.items() if size <= bound))
        for bound in BATCH_BUCKETS
    ]
    buckets.append(("+Inf", sum(embedded.batches.values())))
    return HistogramMetricFamily(
        "contextwm_embedding_batch_items",
        "Items per batch the indexer embedded.",
        buckets=buckets,
        sum_value=embedded.items,
    )
