"""Prometheus metrics: each Service's own registry, served over HTTP on a port of its own.
An adapter: it reads the plain counters the core keeps; nothing else imports
prometheus_client. Its tracing module sets up OpenTelemetry's SDK, imported only when
tracing is on (so not from here)."""

from contextwm.observability.metrics import Metrics

__all__ = ["Metrics"]
