"""Tests for contextwm.retrieval.pipeline.LineCosts with the real BPE counters: a line is
priced as the encoder counts it once rendered, so packing wastes no token per item."""

from __future__ import annotations

import pytest
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.domain.items import Flag, Item, ItemState, ScoredItem, ScoreParts
from contextwm.retrieval.pipeline import SEAM_CHARS, LineCosts

LINES = [
    "Caroline: I went to the LGBTQ support group yesterday.",
    "The billing service listens on port 8443.",
    "5432 is the port.",
    "(see the runbook) then restart",
    '"quoted" words first',
    "it's done",
    "東京 is where the office is",
    "🙂 sounds good",
    "-v turns on verbose output",
    "Yes!",
    "def f():\n    return 1",
]


def priced(costs: LineCosts, role: str, content: str) -> int:
    item = Item(
        "c", 1, role, content, 0.0, costs.counter.count(content), Flag.NONE, {}, None,
        ItemState.ARCHIVED,
    )  # fmt: skip
    return costs.line(ScoredItem(item, 0.0, ScoreParts())) - 1  # less its separator


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("role", ["user", "assistant", "tool"])
def test_a_line_costs_what_the_encoder_counts_once_rendered(encoding: str, role: str) -> None:
    costs = LineCosts(token_counter(encoding))
    for content in LINES:
        assert priced(costs, role, content) == costs.counter.count(f"{role}: {content}"), content


@pytest.mark.parametrize("content", ["  indented", "\nnew line", "x" * (SEAM_CHARS + 10) + " y"])
def test_a_line_whose_first_word_is_not_read_is_priced_at_most_one_token_over(
    content: str,
) -> None:
    costs = LineCosts(token_counter("cl100k_base"))
    exact = costs.counter.count(f"user: {content}")
    assert exact <= priced(costs, "user", content) <= exact + 1
