"""Tests for the benchmark's simple selectors and haystack handling (scripts/)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from bench_longmemeval import Haystack, Question, stored, trim
from bench_selectors import Bm25, Turn, fill, order_by, rrf, selectors
from contextwm_client import Role


def turn(content: str, cost: int = 10, role: Role = "user") -> Turn:
    return Turn(role, content, cost)


def test_bm25_ranks_the_rare_term_first_and_ignores_stopwords() -> None:
    docs = ["the deploy failed", "the deploy worked", "kestrel is the host", "the the the"]
    scores = Bm25(docs).scores("what is the kestrel deploy?")
    assert order_by(scores)[0] == 2
    assert scores[3] == 0.0


def test_rrf_rewards_agreement_and_fill_skips_what_does_not_fit() -> None:
    assert rrf([3, 1], [1, 3], [1])[0] == 1
    turns = [turn("a", 50), turn("b", 200), turn("c", 40)]
    assert fill([1, 0, 2], turns, 100) == {0, 2}


def test_selectors_rank_every_turn() -> None:
    turns = [turn("alpha"), turn("beta"), turn("gamma")]
    vectors = np.eye(3, dtype=np.float32)
    ranks = selectors(turns, vectors)
    assert ranks["recency"]("q", vectors[0]) == [2, 1, 0]
    assert ranks["dense"]("q", vectors[1])[0] == 1
    assert ranks["BM25"]("gamma", vectors[0])[0] == 2
    assert sorted(ranks["BM25+dense RRF"]("beta", vectors[1])) == [0, 1, 2]


def _haystack() -> Haystack:
    sessions = (0, 0, 1, 1, 2, 2, 3, 3)
    turns = tuple(turn(f"turn {i}" if i != 5 else " ", 100) for i in range(8))
    times = tuple(datetime(2024, 1, 1 + s, tzinfo=UTC) for s in sessions)
    question = Question("q1", "multi-session", "?", datetime(2024, 2, 1, tzinfo=UTC), (2, 7))
    return Haystack(question, turns, times, sessions)


def test_trim_keeps_the_evidence_sessions_and_their_order() -> None:
    h = _haystack()
    cut = trim(h, 400)
    assert len(cut.turns) == 4  # the two evidence sessions fill the 400 tokens
    assert [cut.turns[i].content for i in cut.question.evidence] == ["turn 2", "turn 7"]
    assert list(cut.sessions) == [1, 1, 3, 3]
    assert trim(h, 10_000) == h


def test_stored_leaves_out_empty_turns() -> None:
    assert stored(_haystack()) == [0, 1, 2, 3, 4, 6, 7]
