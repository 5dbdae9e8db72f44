"""Tests for contextwm.retrieval.feedback: which words of the first hits are searched too, and
how their BM25 joins the query's."""

from __future__ import annotations

import pytest
from contextwm.retrieval.feedback import (
    FEEDBACK_SHARE,
    FEEDBACK_TERMS,
    MAX_CANDIDATES,
    candidate_terms,
    feedback_terms,
    widened,
)


def test_candidates_leave_out_what_was_asked_numbers_and_stop_words() -> None:
    held = candidate_terms(
        [
            ("Nate: I made coconut milk ice cream in 2022, it was so good!", 1.0),
            ("Nate: coconut milk is my favourite, and a dairy-free chocolate cake.", 0.5),
        ],
        asked={"nate", "favourite"},
    )
    assert held["coconut"] == 1.5 and held["chocolate"] == 0.5 and held["ice"] == 1.0
    assert "2022" not in held and "nate" not in held and "favourite" not in held
    assert "it" not in held and "was" not in held
    # Words the heaviest hits share come first.
    assert list(held)[:2] == ["coconut", "milk"]


def test_candidates_are_capped() -> None:
    words = [f"word{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(150)]
    texts = [(" ".join(words[i : i + 30]), 1.0) for i in range(0, 150, 30)]
    assert len(candidate_terms(texts, asked=())) == MAX_CANDIDATES


def test_feedback_terms_weigh_the_hits_holding_a_word_by_its_rarity() -> None:
    held = {
        "caroline": 3.0,
        "counseling": 1.5,
        "psychology": 1.0,
        "really": 2.0,
        "split": 1.0,
        "called": 1.0,
    }
    counts = {"caroline": 400, "counseling": 6, "psychology": 3, "really": 150, "called": 1}
    chosen = feedback_terms(held, counts, items=800)
    # A name on half the turns weighs less than a rare word two hits share; a word the
    # index does not hold, or that one item alone holds, is left out (it finds nothing new).
    assert chosen[:2] == ["counseling", "psychology"]
    assert "split" not in chosen and "called" not in chosen
    many = {f"w{i}": 1.0 for i in range(40)}
    assert len(feedback_terms(many, dict.fromkeys(many, 2), items=100)) == FEEDBACK_TERMS


def test_widened_adds_the_feedback_at_its_share_of_the_best() -> None:
    lexical = {1: 4.0, 2: 2.0}
    extra = {2: 10.0, 3: 5.0}
    out = widened(lexical, extra)
    assert out[1] == 4.0
    assert out[2] == pytest.approx(2.0 + FEEDBACK_SHARE * 4.0)
    assert out[3] == pytest.approx(FEEDBACK_SHARE * 4.0 * 0.5)
    assert widened(lexical, {}) == lexical
