"""Tests for contextwm.window.conversation_state: state detection and adaptive window bounds."""

from __future__ import annotations

from itertools import pairwise

import pytest
from contextwm.domain.conversations import ConversationState
from contextwm.window.conversation_state import adapt_window, complexity, detect_state
from hypothesis import given, settings
from hypothesis import strategies as st

G, C, D, R = (
    ConversationState.GENERAL,
    ConversationState.CODING,
    ConversationState.DEBUGGING,
    ConversationState.RESEARCH,
)

CALM = ["hello there", "nice weather", "see you"]
HEAVY = ["```py\nx = 1\n``` error in the algorithm? " + "x" * 600] * 10


@pytest.mark.parametrize(
    ("texts", "state"),
    [
        ([], G),
        (["hello", "how are you"], G),
        (["I get a Traceback and the test fails"], D),
        (["let's implement the function and refactor the module"], C),
        (["please research papers and compare the sources"], R),
    ],
)
def test_detect_state(texts: list[str], state: ConversationState) -> None:
    assert detect_state(texts) is state


def test_one_stray_old_word_does_not_flip_the_state() -> None:
    # "bug" five items back weighs 1/(1+0.25*4) = 0.5 < 1.0.
    assert detect_state(["there is a bug", "ok", "ok", "ok", "ok"]) is G
    assert detect_state(["ok", "ok", "ok", "ok", "there is a bug"]) is D


def test_newer_items_vote_louder() -> None:
    texts = ["we need to debug this crash", "the traceback again", "now implement the class"]
    # debugging: 1/(1+.5) + 1/(1+.25) = 1.47; coding: 1.0
    assert detect_state(texts) is D
    texts = ["we need to debug this crash", *["implement the api function"] * 3]
    assert detect_state(texts) is C


def test_only_the_last_ten_items_count() -> None:
    texts = ["research the sources"] * 5 + ["hello"] * 10
    assert detect_state(texts) is G


def test_complexity_bounds() -> None:
    assert complexity([]) == 0.0
    assert complexity(CALM) == 0.0
    assert complexity(HEAVY) == 1.0


def test_adapt_window_moves_by_at_most_a_quarter_and_converges() -> None:
    base = 8000
    limit = base
    seen = [limit]
    for _ in range(30):
        limit = adapt_window(base, limit, HEAVY, D)
        seen.append(limit)
    assert all(abs(b - a) <= base // 4 for a, b in pairwise(seen))
    assert limit == 4 * base  # 2.0 x 3.0 capped at 4 x base
    for _ in range(30):
        limit = adapt_window(base, limit, CALM, G)
    assert limit == base // 2  # complexity 0: half the base


def test_adapt_window_reaches_a_near_target_in_one_step() -> None:
    # One indicator ("?") per item: complexity 10 / 20 = 0.5, so GENERAL wants
    # base x (0.5 + 2.5 x 0.5) = 1.75 x base, 50 away from current: within one step.
    texts = ["what?"] * 10
    assert complexity(texts) == 0.5
    assert adapt_window(1000, 1700, texts, G) == 1750


@settings(max_examples=300, deadline=None)
@given(
    st.integers(2, 1_000_000),
    st.floats(0.5, 4.0),
    st.lists(
        st.sampled_from(["hi", "error?", "```x```", "the api database " * 50, "research"]),
        max_size=12,
    ),
    st.sampled_from([G, C, D, R]),
)
def test_adapt_window_bounds(
    base: int, where: float, texts: list[str], state: ConversationState
) -> None:
    current = max(base // 2, min(int(base * where), 4 * base))
    out = adapt_window(base, current, texts, state)
    assert base // 2 <= out <= 4 * base
    assert abs(out - current) <= max(1, base // 4)
    # It moves towards the target and never overshoots it.
    target = adapt_window(base, out, texts, state)
    for _ in range(20):
        target = adapt_window(base, target, texts, state)
    assert min(current, target) <= out <= max(current, target)


def test_adapt_window_never_returns_zero() -> None:
    # window_max_tokens=1 is valid (apply_patch allows 1..); a limit of 0 makes every item
    # oversized, so the whole window would be evicted on each append.
    assert adapt_window(1, 1, [], G) >= 1
