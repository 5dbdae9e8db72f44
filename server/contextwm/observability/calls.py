"""Per-method call counts and latencies of ContextService, fed by the transport's interceptor."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

# From a cached GetConversation (about a millisecond) to a GetContext waiting for vectors
# (seconds); Watch streams last as long as their watcher, so the top buckets are wide.
DURATION_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip


class CallMetrics:
    """contextwm_requests_total and contextwm_request_duration_seconds in one registry."""

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

    def observe(self, method: str, code: str, seconds: float) -> None:
        """One finished call: the method's name ("Append"), its status ("OK", "NOT_FOUND")."""
        self._requests.labels(method, code).inc()
        self._duration.labels(method).observe(seconds)
