"""Assembly by category keeps its budget: no generated mix of window items, contributors and
budgets yields a response over its budget, or a category over its maximum without a matching
loan.

Runs assemble_by_category with the real BPE counter (exact counts of the rendered text) on
generated items of every role, contributor pieces of every type, queries and budgets."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pytest
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.budgets.assembly import assemble_by_category, retrieval_piece
from contextwm.budgets.contributors import Contribution
from contextwm.domain.categories import (
    DEFAULT_BUDGETS,
    Category,
    CategoryBudget,
    ContributorType,
    category_of_role,
)
from contextwm.domain.errors import FailedPrecondition, InvalidArgument
from contextwm.domain.items import Flag, Item, ItemState, ScoredItem, ScoreParts
from contextwm.retrieval.pipeline import LineCosts
from hypothesis import given, settings
from hypothesis import strategies as st

COUNTER = token_counter("cl100k_base")
WORDS = ["invoice", "total", "rounding", "def", "f():", "\n", "東京", "🙂", "error", "the", "#"]
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(" ".join)


def _item(seq: int, role: str, content: str, pinned: bool) -> Item:
    return Item(
        "c",
        seq,
        role,
        content,
        1_700_000_000.0 + seq,
        COUNTER.count(content),
        Flag.PINNED if pinned else Flag.NONE,
        {},
        None,
        ItemState.WINDOW,
    )


@st.composite
def windows(draw: st.DrawFn) -> list[ScoredItem]:
    rows = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["system", "user", "assistant", "tool", "file", "error"]),
                texts,
                st.booleans(),
                st.floats(0, 1),
            ),
            max_size=25,
        )
    )
    n = len(rows)
    return [
        ScoredItem(
            _item(i + 1, role, content, pinned),
            0.0,
            ScoreParts(recency=(i + 1) / n, similarity=similarity),
        )
        for i, (role, content, pinned, similarity) in enumerate(rows)
    ]


@st.composite
def contributions(draw: st.DrawFn) -> list[Contribution]:
    out: list[Contribution] = []
    for n in range(draw(st.integers(0, 8))):
        t = draw(st.sampled_from(list(ContributorType)))
        weight, salience = draw(st.floats(0, 1)), draw(st.floats(0, 1))
        if t is ContributorType.RETRIEVAL:
            hit = ScoredItem(_item(1000 + n, "user", draw(texts), False), 0.0, ScoreParts())
            out.append(
                Contribution(
                    t,
                    f"#{hit.item.seq}",
                    *retrieval_piece(LineCosts(COUNTER), [hit]),
                    weight,
                    salience,
                    items=(hit,),
                )
            )
        elif draw(st.integers(0, 5)) == 0:  # unreadable: reported, never offered
            out.append(Contribution(t, f"f{n}", "", 0, weight, 0.0, reason="NOT_FOUND: gone"))
        else:
            text = f"## Working file: f{n}.py (content)\n```\n{draw(texts)}\n```"
            out.append(Contribution(t, f"f{n}.py", text, COUNTER.count(text) + 1, weight, salience))
    return out


@st.composite
def budget_sets(draw: st.DrawFn) -> Mapping[Category, CategoryBudget]:
    """Valid shares: min <= share <= max, shares summing to at most 1."""
    raw = [draw(st.floats(0.01, 1)) for _ in Category]
    scale = draw(st.floats(0.5, 1)) / sum(raw)
    out: dict[Category, CategoryBudget] = {}
    for c, r in zip(Category, raw, strict=True):
        share = math.floor(r * scale * 10_000) / 10_000  # never summing past 1
        out[c] = CategoryBudget(
            share,
            math.floor(share * draw(st.floats(0, 1)) * 10_000) / 10_000,
            draw(st.floats(share, 1)),
        )
    return out


@settings(max_examples=300, deadline=None)
@given(
    windows(),
    contributions(),
    budget_sets(),
    st.integers(1, 600),
    st.one_of(st.none(), texts),
)
def test_no_response_over_budget_and_no_category_over_its_maximum_without_a_loan(
    window: list[ScoredItem],
    contribs: list[Contribution],
    budgets: Mapping[Category, CategoryBudget],
    budget: int,
    query: str | None,
) -> None:
    try:
        a = assemble_by_category(
            window, contribs, query=query, budget=budget, budgets=budgets, counter=COUNTER
        )
    except InvalidArgument as e:  # only when the query alone is over the budget
        assert query is not None and "cannot hold the query" in e.message
        assert COUNTER.count(f"# Current Query\n\n{query}") > budget
        return
    except FailedPrecondition as e:  # only when the system items alone are too many
        assert "SYSTEM" in e.message
        system = [s for s in window if s.item.role == "system"]
        assert system
        return
    assert COUNTER.count(a.text) == a.tokens.total <= budget
    reports = {r.category: r for r in a.report.categories}
    assert sum(r.lent for r in reports.values()) == sum(r.borrowed for r in reports.values())
    assert sum(r.granted for r in reports.values()) <= a.report.allocated
    for c, r in reports.items():
        assert r.used <= r.granted
        if c is not Category.SYSTEM:  # SYSTEM is never trimmed: it may pass its maximum
            assert r.granted <= r.maximum
        # Over the starting share only by what was borrowed.
        assert r.granted <= int(budgets[c].share * a.report.allocated + 1e-6) + 1 + r.borrowed
    # Every system item is kept (SYSTEM is never trimmed), and nothing appears twice.
    kept = [s.item.seq for s in a.recent]
    assert all(s.item.seq in kept for s in window if s.item.role == "system")
    assert len(kept) == len(set(kept))
    # Chosen contributors are in the text; those with a reason are reported, never chosen.
    for o in a.report.contributors:
        assert not (o.chosen and o.contribution.reason)
        if o.chosen:
            assert o.contribution.text in a.text or o.contribution.type is ContributorType.RETRIEVAL


@pytest.mark.parametrize("budget", [200, 1000])
def test_dialog_is_trimmed_oldest_and_least_relevant_first(budget: int) -> None:
    window = [
        ScoredItem(
            _item(i, "user" if i % 2 else "assistant", f"turn {i} " + "word " * 30, False),
            0.0,
            ScoreParts(recency=i / 40, similarity=0.9 if i == 3 else 0.0),
        )
        for i in range(1, 41)
    ]
    a = assemble_by_category(
        window, [], query=None, budget=budget, budgets=DEFAULT_BUDGETS, counter=COUNTER
    )
    kept = {s.item.seq for s in a.recent}
    assert kept and len(kept) < 40
    # The relevant old turn 3 outranks turns of similar age; the newest are kept.
    assert 40 in kept and 3 in kept and 4 not in kept
    dropped = set(range(1, 41)) - kept - {3}
    # Older turns went first; a turn that did not fit may leave room for a smaller older one
    # ("assistant: " costs more than "user: "), never for more than one.
    assert len([d for d in dropped if d > min(kept - {3})]) <= 1


def test_system_output_goes_before_dialog() -> None:
    window = [
        ScoredItem(_item(i, role, f"{role} {i} " + "word " * 40, False), 0.0, ScoreParts(1.0))
        for i, role in enumerate(["user", "tool", "assistant", "tool", *["user"] * 5], start=1)
    ]
    pieces = {category_of_role(s.item.role) for s in window}
    assert pieces == {Category.DIALOG, Category.SYSTEM_OUTPUT}
    a = assemble_by_category(
        window, [], query=None, budget=200, budgets=DEFAULT_BUDGETS, counter=COUNTER
    )
    # DIALOG needs more than its maximum: it borrows all CONTEXT can spare, and the tool
    # output (5% of 200 = 10 tokens) is what goes.
    roles = {s.item.role for s in a.recent}
    assert roles == {"user", "assistant"}
    reports = {r.category: r for r in a.report.categories}
    assert reports[Category.DIALOG].borrowed > 0 and reports[Category.SYSTEM_OUTPUT].used == 0
