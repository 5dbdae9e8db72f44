"""Per-method call counts and latencies of ContextService, fed by the transport's interceptor."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

# From a cached GetConversation (about a millisecond) to a GetContext waiting for vectors
# (seconds); Watch streams last as long as their watcher, so the top buckets are wide.
DURATION_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip


class CallMetrics:
    """contextwm_requests_total, contextwm_request_duration_seconds and, for calls made with
    an API key, contextwm_key_requests_total in one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._requests = Counter(
            "contextwm_requests",
            "ContextService calls answered, by method and gRPC status code"
            " (a stream counts when it ends).",
            ["method", "code"],
            registry=registry,
        )
        self._duration = Histogram(
            "contextwm_request_duration_seconds",
            "Seconds from a ContextService call's start to its answer, by method"
            " (for a stream, its whole life).",
            ["method"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        # By key id, which is safe to show: one series per key and outcome, not per method,
        # so that many keys stay few series.
        self._key_requests = Counter(
            "contextwm_key_requests",
            "ContextService calls made with an API key, by the key's id and gRPC status code"
            " (RESOURCE_EXHAUSTED: over a quota).",
            ["key_id", "code"],
            registry=registry,
        )

    def observe(self, method: str, code: str, seconds: float, key_id: str | None) -> None:
        """One finished call: the method's name ("Append"), its status ("OK", "NOT_FOUND"),
        and the caller's key id (None: no key)."""
        self._requests.labels(method, code).inc()
        self._duration.labels(method).observe(seconds)
        if key_id is not None:
            self._key_requests.labels(key_id, code).inc()
