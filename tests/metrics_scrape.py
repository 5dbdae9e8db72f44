"""Scrapes a server's /metrics over HTTP and parses it as Prometheus does."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

# Sample names a family of each type exports besides its own name (histograms lose theirs).
SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "gauge": ("",),
}


class Scrape:
    """One scrape: every sample, and the names Prometheus would store."""

    def __init__(self, port: int) -> None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            text = reply.read().decode()
        families = list(text_string_to_metric_families(text))
        self.families = {f.name for f in families}
        self.samples: list[Sample] = [s for f in families for s in f.samples]
        # From the families, not the samples: a labelled metric with no calls yet has none.
        self.names = {f.name + suffix for f in families for suffix in SUFFIXES.get(f.type, ("",))}

    def value(self, name: str, **labels: str) -> float:
        """The one sample of name with exactly these labels; KeyError if there is none."""
        found = [s.value for s in self.samples if s.name == name and s.labels == labels]
        if len(found) != 1:
            raise KeyError(f"{name}{labels}: {len(found)} samples")
        return found[0]

    def of(self, name: str) -> list[Sample]:
        """Every sample of name, whatever its labels."""
        return [s for s in self.samples if s.name == name]
