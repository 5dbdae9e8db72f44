"""Tests for the simple selectors and the conversation benchmarks' data set loaders."""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import bench_locomo
import bench_longmemeval
from bench_conversations import labels, stored
from contextwm.cli.evaluation.selectors import (
    TURN_OVERHEAD,
    Bm25,
    Turn,
    fill,
    order_by,
    rankings,
    rrf,
)
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
    docs = ["alpha", "beta", "gamma"]
    ranks = rankings(Bm25(docs), "gamma", [0.1, 0.9, 0.2])
    assert ranks["recency"] == [2, 1, 0]
    assert ranks["dense"][0] == 1
    assert ranks["BM25"][0] == 2
    assert sorted(ranks["BM25+dense RRF"]) == [0, 1, 2]


class _Words:
    """Counts words: enough for the loaders' turn costs."""

    @staticmethod
    def count(text: str) -> int:
        return len(text.split())


def _write(directory: Path, name: str, rows: Sequence[Mapping[str, object]]) -> None:
    with gzip.open(directory / name, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


def _longmemeval(directory: Path) -> Path:
    turns = [
        {
            "question_id": "q1",
            "session_index": i // 2,
            "turn_index": i % 2,
            "session_date": f"2024/01/0{1 + i // 2} (Mon) 10:00",
            "order": i,
            "role": "user" if i % 2 == 0 else "assistant",
            "content": " ".join([f"turn{i}"] * 98) if i != 5 else " ",
        }
        for i in range(8)
    ]
    question = {
        "question_id": "q1",
        "question_type": "multi-session",
        "question": "?",
        "question_date": "2024/02/01 (Thu) 10:00",
        "evidence": [[1, 0], [3, 1]],
    }
    _write(directory, "turns.jsonl.gz", turns)
    _write(directory, "questions.jsonl.gz", [question])
    return directory


def test_trim_keeps_the_evidence_sessions_and_their_order(tmp_path: Path) -> None:
    data = _longmemeval(tmp_path)
    whole = bench_longmemeval.load(data, _Words())
    cut = bench_longmemeval.load(data, _Words(), haystack_tokens=400)
    (c,), (q,) = cut.conversations, cut.questions
    assert len(c.turns) == 4  # the two evidence sessions fill the 400 tokens
    assert [c.turns[i].content.split()[0] for i in q.evidence] == ["turn2", "turn7"]
    assert [t.day for t in c.times] == [2, 2, 4, 4]
    assert bench_longmemeval.load(data, _Words(), haystack_tokens=10_000) == whole


def test_stored_leaves_out_empty_turns(tmp_path: Path) -> None:
    data = bench_longmemeval.load(_longmemeval(tmp_path), _Words())
    (c,) = data.conversations
    assert stored(c) == [0, 1, 2, 3, 4, 6, 7]
    # Evidence at positions 2 and 7 is the 3rd and the 7th item stored (position 5 is not).
    (label,) = labels(data.questions, {c.cid: c})
    assert (label.conversation, label.expected, label.kind) == (c.cid, (3, 7), "multi-session")


def test_locomo_turns_carry_their_speaker_and_questions_find_their_evidence(
    tmp_path: Path,
) -> None:
    speakers = ["Ana", "Ben", "Ana"]
    turns = [
        {
            "conversation_id": "conv-1",
            "session": 1,
            "dia_id": f"D1:{i + 1}",
            "speaker": who,
            "text": f"line {i}",
            "timestamp": f"2023-05-0{i + 1}T13:56:00",
            "order": 2 - i,  # replay order, not file order
        }
        for i, who in enumerate(speakers)
    ]
    question = {
        "conversation_id": "conv-1",
        "qa_index": 0,
        "question": "?",
        "category_name": "multi-hop",
        "evidence": ["D1:1", "D1:3"],
    }
    _write(tmp_path, "turns.jsonl.gz", turns)
    _write(tmp_path, "questions.jsonl.gz", [question])
    data = bench_locomo.load(tmp_path, _Words())
    (c,), (q,) = data.conversations, data.questions
    assert [(t.role, t.content, t.cost) for t in c.turns] == [
        ("user", "Ana: line 2", 3 + TURN_OVERHEAD),
        ("assistant", "Ben: line 1", 3 + TURN_OVERHEAD),
        ("user", "Ana: line 0", 3 + TURN_OVERHEAD),
    ]
    assert q.evidence == (0, 2)
    assert q.asked == c.times[-1] == datetime(2023, 5, 1, 13, 56, tzinfo=UTC)
