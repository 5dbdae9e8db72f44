"""Tests for contextwm.window.scoring: recency half-lives and the default relevance weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from contextwm.domain.conversations import (
    ConversationSettings,
    ScoringWeights,
    SettingsPatch,
    WeightsPatch,
    apply_patch,
)
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.items import Flag, parse_flags
from contextwm.settings import load_settings
from contextwm.window.scoring import Clock, recency, recency_many, relevance
from hypothesis import given, settings
from hypothesis import strategies as st

NOW = 1_700_000_000.0
DAY = 86400.0


def rel(
    cs: ConversationSettings,
    *,
    role: str = "tool",
    flags: Flag = Flag.NONE,
    similarity: float = 0.0,
    age: float = 0.0,
    behind: int = 0,
) -> float:
    score, _ = relevance(
        cs,
        Clock(NOW, 100),
        timestamp=NOW - age,
        seq=100 - behind,
        role=role,
        flags=flags,
        similarity=similarity,
    )
    return score


# ---------------------------------------------------------------- recency


def test_recency_is_one_for_the_newest_item() -> None:
    assert recency(ConversationSettings(), Clock(NOW, 7), NOW, 7) == 1.0


def test_recency_halves_at_the_time_half_life() -> None:
    cs = ConversationSettings(recency_half_life_seconds=3600.0, recency_half_life_items=0.0)
    clock = Clock(NOW, 10)
    assert recency(cs, clock, NOW - 3600.0, 10) == pytest.approx(0.5)
    assert recency(cs, clock, NOW - 7200.0, 10) == pytest.approx(0.25)
    assert recency(cs, clock, NOW - 1800.0, 10) == pytest.approx(2**-0.5)


def test_recency_halves_at_the_item_half_life() -> None:
    cs = ConversationSettings(recency_half_life_items=20.0)
    clock = Clock(NOW, 100)
    assert recency(cs, clock, NOW, 80) == pytest.approx(0.5)
    assert recency(cs, clock, NOW, 60) == pytest.approx(0.25)


def test_time_and_item_decay_multiply() -> None:
    cs = ConversationSettings(recency_half_life_seconds=60.0, recency_half_life_items=5.0)
    assert recency(cs, Clock(NOW, 10), NOW - 60.0, 5) == pytest.approx(0.25)


def test_item_half_life_zero_disables_item_decay() -> None:
    cs = ConversationSettings(recency_half_life_items=0.0)
    assert recency(cs, Clock(NOW, 1000), NOW, 1) == 1.0


def test_future_timestamps_count_as_now() -> None:
    # A clock measured on the conversation's own timeline: never above 1.
    assert recency(ConversationSettings(), Clock(NOW, 3), NOW + DAY, 3) == 1.0


def test_default_half_lives() -> None:
    cs = ConversationSettings()
    assert cs.recency_half_life_seconds == DAY
    assert recency(cs, Clock(NOW, 50), NOW - DAY, 50) == pytest.approx(0.5)
    assert recency(cs, Clock(NOW, 50), NOW, 0) == pytest.approx(0.5)  # 50 items behind


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0, 1e7),
    st.floats(0, 1e7),
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.floats(1, 1e6),
    st.floats(0, 1e4),
)
def test_recency_is_monotone_and_bounded(
    age1: float, age2: float, behind1: int, behind2: int, hl_s: float, hl_i: float
) -> None:
    cs = ConversationSettings(recency_half_life_seconds=hl_s, recency_half_life_items=hl_i)
    clock = Clock(NOW + 1e7, 20_000)
    r1 = recency(cs, clock, clock.now - age1, clock.last_seq - behind1)
    r2 = recency(cs, clock, clock.now - age2, clock.last_seq - behind2)
    assert 0.0 <= r1 <= 1.0 and 0.0 <= r2 <= 1.0
    if age1 <= age2 and behind1 <= behind2:
        assert r1 >= r2


@settings(max_examples=300)
@given(
    st.floats(-1e3, 1e9),
    st.integers(-10, 10_000),
    st.floats(1e-3, 1e6),
    st.floats(0, 1e4),
)
def test_scalar_recency_agrees_with_the_array_version(
    age: float, behind: int, hl_s: float, hl_i: float
) -> None:
    """Ranking scores candidates one at a time, eviction the whole window as an array: both
    must give one answer, including underflow to 0 for tiny half-lives."""
    cs = ConversationSettings(recency_half_life_seconds=hl_s, recency_half_life_items=hl_i)
    clock = Clock(NOW, 5_000)
    ts, seq = clock.now - age, clock.last_seq - behind
    many = recency_many(cs, clock, np.array([ts]), np.array([float(seq)]))[0]
    assert recency(cs, clock, ts, seq) == pytest.approx(float(many), rel=1e-12, abs=1e-300)


# ---------------------------------------------------------------- weights


def test_default_weights() -> None:
    w = ScoringWeights()
    assert (w.recency, w.similarity) == (0.3, 0.4)
    assert dict(w.importance) == {
        "pinned": 0.8,
        "error": 0.6,
        "code": 0.4,
        "question": 0.5,
        "solution": 0.7,
    }
    for role, bias in {
        "user": 0.3,
        "assistant": 0.2,
        "error": 0.4,
        "file": 0.1,
        "system": 0.1,
    }.items():
        assert w.role[role] == bias


@pytest.mark.parametrize(
    ("flag", "weight"),
    [("pinned", 0.8), ("error", 0.6), ("code", 0.4), ("question", 0.5), ("solution", 0.7)],
)
def test_each_importance_flag_adds_its_weight(flag: str, weight: float) -> None:
    cs = ConversationSettings()
    flags = parse_flags([flag])
    assert rel(cs, flags=flags) - rel(cs) == pytest.approx(weight)


@pytest.mark.parametrize(
    ("role", "bias"),
    [("user", 0.3), ("assistant", 0.2), ("error", 0.4), ("file", 0.1), ("system", 0.1)],
)
def test_each_role_adds_its_bias(role: str, bias: float) -> None:
    cs = ConversationSettings()
    assert rel(cs, role=role) - rel(cs, role="tool") == pytest.approx(bias)


def test_relevance_is_the_weighted_sum_of_its_parts() -> None:
    cs = ConversationSettings(recency_half_life_seconds=DAY, recency_half_life_items=0.0)
    score, parts = relevance(
        cs,
        Clock(NOW, 9),
        timestamp=NOW - DAY,
        seq=3,
        role="user",
        flags=Flag.ERROR | Flag.CODE,
        similarity=0.5,
    )
    assert (parts.recency, parts.importance, parts.similarity, parts.role) == pytest.approx(
        (0.5, 1.0, 0.5, 0.3)
    )
    assert score == pytest.approx(0.3 * 0.5 + 1.0 + 0.4 * 0.5 + 0.3)


def test_importance_is_not_capped() -> None:
    # Every flag at once sums past 1.0: a cap would make all important items tie.
    cs = ConversationSettings()
    all_flags = Flag.PINNED | Flag.ERROR | Flag.CODE | Flag.QUESTION | Flag.SOLUTION
    assert rel(cs, flags=all_flags) - rel(cs) == pytest.approx(0.8 + 0.6 + 0.4 + 0.5 + 0.7)
    assert rel(cs, flags=all_flags) > rel(cs, flags=all_flags & ~Flag.CODE)


def test_user_starred_is_pinned() -> None:
    assert parse_flags(["user_starred"]) == Flag.PINNED
    with pytest.raises(InvalidArgument, match="unknown importance flag"):
        parse_flags(["urgent"])


def test_patched_weights_are_used() -> None:
    cs = apply_patch(
        ConversationSettings(),
        SettingsPatch(
            weights=WeightsPatch(
                recency=1.0,
                similarity=2.0,
                importance={"user_starred": 3.0},
                role={"tool": 0.25},
            )
        ),
    )
    assert cs.weights.importance["pinned"] == 3.0
    assert cs.weights.importance["error"] == 0.6  # untouched keys keep their default
    base = rel(cs)
    assert base == pytest.approx(1.0 * 1.0 + 0.25)
    assert rel(cs, similarity=0.5) - base == pytest.approx(1.0)
    assert rel(cs, flags=Flag.PINNED) - base == pytest.approx(3.0)
    assert rel(cs, role="user") - base == pytest.approx(0.3 - 0.25)


def test_weights_from_the_settings_file_reach_the_score(tmp_path: Path) -> None:
    config = tmp_path / "contextwm.toml"
    config.write_text(
        "[conversation]\nrecency_half_life_items = 0\n"
        "[conversation.weights]\nrecency = 0.0\nsimilarity = 1.0\n"
        "[conversation.weights.importance]\nerror = 2.5\n"
        "[conversation.weights.role]\nuser = 0.05\n"
    )
    cs = load_settings(config).conversation
    assert rel(cs) == pytest.approx(0.0)  # recency weight 0, tool role 0
    assert rel(cs, similarity=0.7) == pytest.approx(0.7)
    assert rel(cs, flags=Flag.ERROR) == pytest.approx(2.5)
    assert rel(cs, role="user") == pytest.approx(0.05)
    assert rel(cs, flags=Flag.SOLUTION) == pytest.approx(0.7)  # default kept
