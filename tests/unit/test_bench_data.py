"""Tests for scripts/bench_data.py: the seeded benchmark conversation generator."""

from __future__ import annotations

import re
import string
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# scripts/ is not a package; benchmarks put it on sys.path the same way.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import bench_data
from bench_data import (
    BenchConversation,
    generate_conversation,
    generate_corpus,
    ingest_items,
)

_FAMILIES = {family.name: family for family in bench_data._FAMILIES}
# Words shorter than three letters are ignored anyway.
_STOP = {
    "the", "and", "for", "with", "what", "which", "who", "where", "how", "does", "did", "that",
    "this", "are", "was", "were", "you", "your", "can", "from", "what's", "i'm", "it's", "its",
    "our", "new", "now",
}  # fmt: skip


@pytest.fixture(scope="module")
def corpus() -> list[BenchConversation]:
    return generate_corpus(8, seed=3)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in _STOP and len(w) >= 3}


def _check_invariants(conv: BenchConversation, turns: int, questions: int) -> None:
    assert len(conv.turns) == turns
    assert len(conv.questions) == questions
    assert [t.role for t in conv.turns] == ["user", "assistant"] * (turns // 2) + ["user"] * (
        turns % 2
    )
    limit = turns * 0.4
    rare_words = [q.rare_word for q in conv.questions if q.rare_word is not None]
    assert len(set(rare_words)) == len(rare_words)
    for question in conv.questions:
        assert 0 <= question.answer_turn < limit
        if question.shares_rare_word:
            assert question.kind == "rare_word"
            assert question.rare_word is not None
            assert question.rare_word in question.text
            assert question.rare_word in conv.turns[question.answer_turn].content
            holders = [t for t in conv.turns if question.rare_word.lower() in t.content.lower()]
            assert len(holders) == 1
        else:
            assert question.kind == "paraphrase"
            assert question.rare_word is None


def test_same_seed_gives_identical_conversation() -> None:
    assert generate_conversation(11) == generate_conversation(11)
    assert generate_conversation(11) != generate_conversation(12)


def test_defaults_and_invariants(corpus: list[BenchConversation]) -> None:
    for conv in corpus:
        _check_invariants(conv, 600, 20)


@pytest.mark.parametrize(("turns", "questions"), [(500, 20), (501, 12), (1000, 45)])
def test_other_sizes(turns: int, questions: int) -> None:
    # 45 questions exceed the number of families, so some family repeats with another key.
    conv = generate_conversation(5, turns=turns, questions=questions)
    _check_invariants(conv, turns, questions)
    keys = Counter((q.family, q.text) for q in conv.questions)
    assert max(keys.values()) == 1


def test_timestamps_are_utc_non_decreasing_and_in_sessions(
    corpus: list[BenchConversation],
) -> None:
    for conv in corpus:
        times = [t.timestamp for t in conv.turns]
        assert all(t.tzinfo is not None and t.utcoffset() == timedelta(0) for t in times)
        assert times == sorted(times)
        sessions = [t.session for t in conv.turns]
        assert sessions == sorted(sessions)
        assert sessions[0] == 0
        assert set(sessions) == set(range(sessions[-1] + 1))
        assert 8 <= len(set(sessions)) <= 15
        for prev, cur in zip(conv.turns, conv.turns[1:], strict=False):
            gap = cur.timestamp - prev.timestamp
            if cur.session == prev.session:
                assert gap <= timedelta(minutes=10)
            else:
                assert gap >= timedelta(hours=2)
                assert cur.role == "user"
        assert times[-1] - times[0] >= timedelta(days=4)


def test_start_must_be_aware_and_is_converted_to_utc() -> None:
    with pytest.raises(ValueError):
        generate_conversation(1, start=datetime(2024, 5, 1, 9, 0))
    start = datetime(2024, 5, 1, 9, 0, tzinfo=timezone(timedelta(hours=2)))
    conv = generate_conversation(1, start=start)
    assert conv.turns[0].timestamp == start
    assert conv.turns[0].timestamp.tzinfo is UTC


def test_about_half_share_a_rare_word(corpus: list[BenchConversation]) -> None:
    for conv in corpus:
        share = sum(q.shares_rare_word for q in conv.questions) / len(conv.questions)
        assert 0.35 <= share <= 0.65


def test_paraphrase_questions_share_no_unique_word_with_the_answer(
    corpus: list[BenchConversation],
) -> None:
    # A word found only in the answer turn would be a rare token in disguise for BM25.
    for conv in corpus:
        frequency: Counter[str] = Counter()
        for turn in conv.turns:
            frequency.update(_words(turn.content))
        for question in conv.questions:
            if question.shares_rare_word:
                continue
            shared = _words(question.text) & _words(conv.turns[question.answer_turn].content)
            assert all(frequency[word] > 1 for word in shared), (question.text, shared)


def test_distractors_share_the_topic(corpus: list[BenchConversation]) -> None:
    for conv in corpus:
        for question in conv.questions:
            markers = [m.lower() for m in _FAMILIES[question.family].markers]
            answer = conv.turns[question.answer_turn].content.lower()
            assert any(m in answer for m in markers)
            assert question.distractor_turns
            for index in question.distractor_turns:
                assert index != question.answer_turn
                assert conv.turns[index].role == "user"
                assert any(m in conv.turns[index].content.lower() for m in markers)


def test_turn_lengths_fit_the_token_range(corpus: list[BenchConversation]) -> None:
    bpe = pytest.importorskip("bpe_openai")
    encoding = bpe.get_encoding("cl100k_base")
    counts = [len(encoding.encode(t.content)) for conv in corpus for t in conv.turns]
    assert min(counts) >= 15
    assert max(counts) <= 70
    assert sum(20 <= c <= 60 for c in counts) / len(counts) >= 0.98


def test_filler_is_diverse(corpus: list[BenchConversation]) -> None:
    contents = [t.content for conv in corpus for t in conv.turns]
    assert len(set(contents)) / len(contents) > 0.97


def test_family_templates() -> None:
    families = bench_data._FAMILIES
    assert len(families) >= 30
    assert len(_FAMILIES) == len(families)

    def fields(template: str) -> set[str]:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name}

    for family in families:
        paras = {para for _, para in family.keys}
        assert len(paras) >= 2, family.name  # distractors need a key with another paraphrase
        for template in family.facts + family.assistant_facts:
            assert {"rare", "key"} <= fields(template), template
        for template in family.rare_questions:
            assert "rare" in fields(template), template
        for template in family.paraphrase_questions:
            assert "key_p" in fields(template) and "rare" not in fields(template), template
        for template in family.replies + family.distractors:
            assert "rare" not in fields(template), template
        for template in family.facts + family.assistant_facts + family.distractors:
            assert "key" in fields(template), template


def test_ingest_items(corpus: list[BenchConversation]) -> None:
    conv = corpus[0]
    items = ingest_items(conv)
    assert len(items) == len(conv.turns)
    for index, (item, turn) in enumerate(zip(items, conv.turns, strict=True)):
        assert set(item) == {"role", "content", "timestamp", "metadata"}
        assert (item["role"], item["content"], item["timestamp"]) == (
            turn.role,
            turn.content,
            turn.timestamp,
        )
        assert item["metadata"] == {"turn": str(index), "session": str(turn.session)}


def test_corpus_is_deterministic_and_prefix_stable() -> None:
    small = generate_corpus(3, seed=9, turns=500, questions=10)
    large = generate_corpus(5, seed=9, turns=500, questions=10)
    assert small == large[:3]
    assert len({conv.conversation_id for conv in large}) == 5


def test_too_many_questions_is_rejected() -> None:
    with pytest.raises(ValueError):
        generate_conversation(0, turns=40, questions=20)


def test_generation_is_fast() -> None:
    began = time.perf_counter()
    generate_corpus(20, seed=1)
    assert time.perf_counter() - began < 2.0


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=0, max_value=2**31))
def test_invariants_hold_for_any_seed(seed: int) -> None:
    _check_invariants(generate_conversation(seed, turns=500), 500, 20)


def test_multi_hop_questions_join_two_facts_from_sessions_far_apart(
    corpus: list[BenchConversation],
) -> None:
    for conv in corpus:
        questions = bench_data.multi_hop_questions(conv, 5, seed=1)
        assert questions == bench_data.multi_hop_questions(conv, 5, seed=1)  # deterministic
        assert 1 <= len(questions) <= 5
        used: list[int] = []
        for q in questions:
            a, b = q.evidence
            assert q.kind == bench_data.MULTI_HOP and len(q.evidence) == 2
            assert b - a >= 100
            assert conv.turns[a].session != conv.turns[b].session
            parts = {p.answer_turn: p.text for p in conv.questions}
            assert q.text.startswith(parts[a])
            used += [a, b]
        assert len(used) == len(set(used))  # no fact in two multi-hop questions
