"""The metrics' documents: the Grafana dashboard imports with any Prometheus data source and
reads only metrics a server exports, and docs/operations.md lists every metric (the names come
from a real scrape)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contextwm.app import Service
from contextwm.settings import ServerSettings
from metrics_scrape import Scrape

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "contextwm-dashboard.json"
DATASOURCE = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
# A metric in a query: a name followed by its label matchers (every query filters by instance).
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{")
OURS = re.compile(r"\b(?:contextwm|process)_[a-z0-9_]+")


@pytest.fixture(scope="module")
def scrape(tmp_path_factory: pytest.TempPathFactory) -> Scrape:
    """A scrape of a fresh server (the hashing embedder: no model to load)."""
    settings = ServerSettings(
        port=0,
        data_dir=tmp_path_factory.mktemp("data"),
        embedder="hashing",
        indexer_process=False,
        metrics_port=0,
        grace_seconds=0.0,
    )
    service = Service.start(settings)
    try:
        assert service.metrics_port is not None
        return Scrape(service.metrics_port)
    finally:
        service.stop(grace=0)


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def queries(board: dict[str, Any]) -> Iterator[str]:
    for panel in board["panels"]:
        for target in panel["targets"]:
            yield target["expr"]
    for variable in board["templating"]["list"]:
        yield variable["definition"]


def test_the_dashboard_imports_with_a_chosen_prometheus() -> None:
    board = dashboard()
    assert [i["name"] for i in board["__inputs"]] == ["DS_PROMETHEUS"]
    assert board["__inputs"][0]["pluginId"] == "prometheus"
    panels = board["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    for panel in panels:
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"] and all(t["datasource"] == DATASOURCE for t in panel["targets"])
    assert all(v["datasource"] == DATASOURCE for v in board["templating"]["list"])


def test_every_metric_the_dashboard_reads_is_exported(scrape: Scrape) -> None:
    used: set[str] = set()
    for query in queries(dashboard()):
        names = set(OURS.findall(query))
        assert names, query
        if not query.startswith("label_values("):
            # Each metric is selected with the instance filter, so the regex sees them all.
            assert names == set(SELECTOR.findall(query)), query
            assert '{instance=~"$instance"' in query, query
        used |= names
    assert sorted(used - scrape.names) == []
    # The guard itself: the scrape held the families a dashboard reads.
    assert {"contextwm_requests_total", "contextwm_request_duration_seconds_bucket"} <= scrape.names


def test_the_operations_page_lists_every_metric(scrape: Scrape) -> None:
    page = (ROOT / "docs" / "operations.md").read_text()
    section = page[page.index("## Metrics") : page.index("## What the store holds")]
    listed = set(re.findall(r"`(contextwm_[a-z_]+)", section))
    exported = {n for n in scrape.names | scrape.families if n.startswith("contextwm_")}
    assert listed <= exported
    # Each family once, under the name a query uses (counters with _total, histograms bare).
    ours = {f for f in scrape.families if f.startswith("contextwm_")}
    assert {n.removesuffix("_total") for n in listed} == ours
