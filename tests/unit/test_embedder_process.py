"""Tests for the indexer's child-process embedder: same vectors as in-process, survives a kill."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import numpy as np
import pytest
from contextwm.adapters.embedder_process import ProcessEmbedder
from contextwm.adapters.embedder_st import SentenceTransformerEmbedder

TEXTS = [f"note {n}: the billing service listens on port {8000 + n}" for n in range(40)]


@pytest.fixture(scope="module")
def child() -> Iterator[ProcessEmbedder]:
    embedder = ProcessEmbedder()
    yield embedder
    embedder.close()


def test_same_model_and_vectors_as_in_process(
    child: ProcessEmbedder, embedder: SentenceTransformerEmbedder
) -> None:
    assert (child.model_name, child.dimension) == (embedder.model_name, embedder.dimension)
    vectors = child.embed(TEXTS)
    assert vectors.shape == (40, embedder.dimension) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, embedder.embed(TEXTS), atol=1e-5)


def test_runs_at_lower_priority(child: ProcessEmbedder) -> None:
    pid = child._process.pid
    assert os.getpriority(os.PRIO_PROCESS, pid) > os.getpriority(os.PRIO_PROCESS, 0)


def test_a_killed_child_fails_one_call_and_is_started_again(child: ProcessEmbedder) -> None:
    old = child._process.pid
    os.kill(old, signal.SIGKILL)
    child._process.join(10)
    first = None
    try:
        first = child.embed(TEXTS[:2])
    except RuntimeError as exc:
        assert "embedding process" in str(exc)
    vectors = child.embed(TEXTS[:2]) if first is None else first
    assert vectors.shape == (2, child.dimension)
    assert child._process.pid != old
