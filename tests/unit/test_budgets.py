"""Tests for contextwm.budgets.allocation: grants, borrowing, trimming and the report."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pytest
from contextwm.budgets.allocation import (
    LENDERS,
    MAX_BUDGET,
    Allocation,
    CategoryReport,
    Piece,
    allocate,
)
from contextwm.domain.categories import DEFAULT_BUDGETS, Category, CategoryBudget, check_budgets
from contextwm.domain.errors import ErrorCode, FailedPrecondition, InvalidArgument
from hypothesis import given, settings
from hypothesis import strategies as st

SYS, CTX, DLG, OUT = Category.SYSTEM, Category.CONTEXT, Category.DIALOG, Category.SYSTEM_OUTPUT
# The worked examples below were written for these minimums (10 % CONTEXT, 20 % DIALOG).
EXAMPLE_MINS = {
    Category.SYSTEM: CategoryBudget(0.10, 0.10, 0.10),
    Category.CONTEXT: CategoryBudget(0.35, 0.10, 0.70),
    Category.DIALOG: CategoryBudget(0.50, 0.20, 0.85),
    Category.SYSTEM_OUTPUT: CategoryBudget(0.05, 0.0, 0.25),
}
NO_MINS = {c: CategoryBudget(b.share, 0.0, b.max_share) for c, b in DEFAULT_BUDGETS.items()}


def pieces(prefix: str, *tokens: int) -> list[Piece]:
    """Pieces of the given sizes, the first with the highest priority."""
    return [Piece(f"{prefix}{i}", t, float(-i)) for i, t in enumerate(tokens)]


def by_category(allocation: Allocation) -> dict[Category, CategoryReport]:
    return {r.category: r for r in allocation.reports}


def grants(allocation: Allocation) -> dict[Category, tuple[int, int, int]]:
    """(granted, lent, borrowed) per category."""
    return {r.category: (r.granted, r.lent, r.borrowed) for r in allocation.reports}


def need(ps: Sequence[Piece], overhead: int = 0) -> int:
    return overhead + sum(p.tokens for p in ps) if ps else 0


def test_default_shares_are_granted_within_their_bounds() -> None:
    check_budgets(DEFAULT_BUDGETS)
    a = allocate(1000, {}, EXAMPLE_MINS)
    assert [(r.category, r.minimum, r.granted, r.maximum) for r in a.reports] == [
        (SYS, 100, 100, 100),
        (CTX, 100, 350, 700),
        (DLG, 200, 500, 850),
        (OUT, 0, 50, 250),
    ]
    assert all(r.used == r.lent == r.borrowed == 0 for r in a.reports)
    assert a.budget == 1000 and set(a.kept) == set(a.dropped) == set(Category)


def test_tokens_lost_to_flooring_go_to_the_largest_fractions() -> None:
    # 1009: 100.9, 353.15, 504.5, 50.45; SYSTEM is at its maximum, so DIALOG then SYSTEM_OUTPUT.
    a = allocate(1009, {}, EXAMPLE_MINS)
    assert [r.granted for r in a.reports] == [100, 353, 505, 51]
    # 0.29 * 100 is 28.999999999999996 in floats, but the grant and its bounds are 29.
    shares = {SYS: CategoryBudget(0.29, 0.29, 0.29), CTX: CategoryBudget(0.71)}
    shares |= {DLG: CategoryBudget(0.0), OUT: CategoryBudget(0.0)}
    a = allocate(100, {}, shares)
    assert [(r.minimum, r.granted, r.maximum) for r in a.reports][:2] == [
        (29, 29, 29),
        (0, 71, 100),
    ]


def test_context_borrows_from_dialog_first() -> None:
    # DIALOG leaves 500 - max(100, 200) = 300 above its minimum; CONTEXT lacks 150.
    a = allocate(1000, {CTX: pieces("c", 250, 250), DLG: pieces("d", 100)}, EXAMPLE_MINS)
    assert grants(a)[CTX] == (500, 0, 150)
    assert grants(a)[DLG] == (350, 150, 0)
    assert grants(a)[OUT] == (50, 0, 0)
    assert len(a.kept[CTX]) == 2 and not a.dropped[CTX]


def test_context_then_borrows_from_system_output() -> None:
    # DIALOG has 100 spare, SYSTEM_OUTPUT 50: CONTEXT lacks 160 and gets 150.
    a = allocate(1000, {CTX: pieces("c", 300, 200, 10), DLG: pieces("d", 400)}, EXAMPLE_MINS)
    assert grants(a)[CTX] == (500, 0, 150)
    assert grants(a)[DLG] == (400, 100, 0) and grants(a)[OUT] == (0, 50, 0)
    assert [p.key for p in a.kept[CTX]] == ["c0", "c1"] and [p.key for p in a.dropped[CTX]] == [
        "c2"
    ]


def test_dialog_borrows_from_context_first() -> None:
    # CONTEXT leaves 350 - max(50, 100) = 250; DIALOG lacks 200 and SYSTEM_OUTPUT keeps its 50.
    a = allocate(1000, {CTX: pieces("c", 50), DLG: pieces("d", 400, 300)}, EXAMPLE_MINS)
    assert grants(a)[DLG] == (700, 0, 200)
    assert grants(a)[CTX] == (150, 200, 0) and grants(a)[OUT] == (50, 0, 0)
    assert not a.dropped[DLG]


def test_a_lender_never_goes_below_its_minimum() -> None:
    # CONTEXT needs nothing but keeps its minimum of 100; DIALOG gets 250 + 50 and drops one.
    a = allocate(1000, {DLG: pieces("d", *[100] * 9)}, EXAMPLE_MINS)
    r = by_category(a)
    assert (r[CTX].granted, r[CTX].lent, r[CTX].minimum) == (100, 250, 100)
    assert (r[DLG].granted, r[DLG].used, r[DLG].borrowed) == (800, 800, 300)
    assert [p.key for p in a.dropped[DLG]] == ["d8"]


def test_the_maximum_caps_borrowing_and_only_used_tokens_are_borrowed() -> None:
    # With no minimums 400 are spare, but DIALOG may reach 850 and its 100-token pieces fill
    # 800 of that: it borrows 300, not 350, and the rest stays with the lenders.
    a = allocate(1000, {DLG: pieces("d", *[100] * 9)}, NO_MINS)
    r = by_category(a)
    assert (r[DLG].granted, r[DLG].used, r[DLG].borrowed, r[DLG].maximum) == (800, 800, 300, 850)
    assert (r[CTX].lent, r[OUT].lent) == (300, 0)


def test_system_output_goes_short_first_when_borrowers_compete() -> None:
    # CONTEXT has 250 spare; DIALOG, served before SYSTEM_OUTPUT, takes all of it.
    a = allocate(1000, {DLG: pieces("d", 750), OUT: pieces("o", 60)}, EXAMPLE_MINS)
    assert grants(a)[DLG] == (750, 0, 250)
    assert grants(a)[OUT] == (50, 0, 0)
    assert [p.key for p in a.dropped[OUT]] == ["o0"]
    # And CONTEXT, served before DIALOG, takes SYSTEM_OUTPUT's spare when both lack tokens.
    a = allocate(1000, {CTX: pieces("c", 400), DLG: pieces("d", 550)}, EXAMPLE_MINS)
    assert grants(a)[CTX] == (400, 0, 50) and grants(a)[DLG] == (500, 0, 0)
    assert [p.key for p in a.dropped[DLG]] == ["d0"]


def test_system_takes_from_system_output_then_dialog_then_context() -> None:
    full = {CTX: pieces("c", *[50] * 7), DLG: pieces("d", *[50] * 10), OUT: pieces("o", 25, 25)}
    a = allocate(1000, {SYS: pieces("s", 150), **full}, EXAMPLE_MINS)
    assert grants(a)[SYS] == (150, 0, 50)
    assert grants(a)[OUT] == (0, 50, 0) and grants(a)[DLG] == (500, 0, 0)
    assert len(a.dropped[OUT]) == 2 and not a.dropped[DLG] and not a.dropped[CTX]
    # 250 needs SYSTEM_OUTPUT's 50 and 100 of DIALOG, whose lowest priorities go.
    a = allocate(1000, {SYS: pieces("s", 250), **full}, EXAMPLE_MINS)
    assert grants(a)[DLG] == (400, 100, 0) and grants(a)[CTX] == (350, 0, 0)
    assert [p.key for p in a.dropped[DLG]] == ["d8", "d9"]


def test_system_goes_below_minimums_only_as_a_last_resort() -> None:
    full = {CTX: pieces("c", 350), DLG: pieces("d", 500), OUT: pieces("o", 50)}
    # Down to the minimums first: 50 + 300 + 250 = 600 of the 850 lacking.
    a = allocate(1000, {SYS: pieces("s", 700), **full}, EXAMPLE_MINS)
    assert [r.granted for r in a.reports] == [700, 100, 200, 0]
    # Then below them, in the same order.
    a = allocate(1000, {SYS: pieces("s", 950), **full}, EXAMPLE_MINS)
    assert [r.granted for r in a.reports] == [950, 50, 0, 0]
    assert [r.lent for r in a.reports] == [0, 300, 500, 50]
    assert a.kept[SYS] and not a.dropped[SYS]


def test_system_over_the_budget_fails() -> None:
    with pytest.raises(FailedPrecondition) as err:
        allocate(1000, {SYS: pieces("s", 600, 401)}, EXAMPLE_MINS)
    assert err.value.code is ErrorCode.FAILED_PRECONDITION
    assert "1001" in err.value.message and "1000" in err.value.message
    # The whole budget is fine: everyone else drops everything.
    a = allocate(1000, {SYS: pieces("s", 600, 400), DLG: pieces("d", 1)}, EXAMPLE_MINS)
    assert by_category(a)[SYS].used == 1000 and a.dropped[DLG]


def test_system_over_the_assigned_shares_fails_and_nobody_uses_the_rest() -> None:
    half = {SYS: CategoryBudget(0.1), CTX: CategoryBudget(0.1), DLG: CategoryBudget(0.3, 0, 1)}
    half[OUT] = CategoryBudget(0.0)
    with pytest.raises(FailedPrecondition, match="the 500 tokens the shares assign"):
        allocate(1000, {SYS: pieces("s", 501)}, half)
    # DIALOG may reach the whole budget but only CONTEXT's 100 are there to borrow.
    a = allocate(1000, {DLG: pieces("d", 300, 100, 200)}, half)
    assert grants(a)[DLG] == (400, 0, 100) and [p.key for p in a.dropped[DLG]] == ["d2"]


def test_a_piece_that_does_not_fit_is_skipped_and_a_smaller_one_kept() -> None:
    full = {DLG: pieces("d", 500), OUT: pieces("o", 50)}
    a = allocate(1000, {CTX: pieces("c", 300, 100, 50), **full}, EXAMPLE_MINS)
    assert [p.key for p in a.kept[CTX]] == ["c0", "c2"]
    assert [p.key for p in a.dropped[CTX]] == ["c1"]
    assert by_category(a)[CTX].used == 350


def test_priority_order_with_ties_in_input_order() -> None:
    ps = [
        Piece("old", 200, 0.1),
        Piece("a", 200, 0.5),
        Piece("b", 200, 0.5),
        Piece("new", 200, 0.9),
    ]
    a = allocate(1000, {DLG: ps, CTX: pieces("c", 350), OUT: pieces("o", 50)}, EXAMPLE_MINS)
    assert [p.key for p in a.kept[DLG]] == ["new", "a"]
    assert [p.key for p in a.dropped[DLG]] == ["b", "old"]


def test_overhead_is_charged_once_and_only_when_something_is_kept() -> None:
    overhead = {CTX: 10, OUT: 20}
    a = allocate(1000, {CTX: pieces("c", 100, 100), OUT: pieces("o", 40)}, overhead=overhead)
    assert by_category(a)[CTX].used == 210 and by_category(a)[OUT].used == 60
    assert grants(a)[OUT] == (60, 0, 10)  # the heading counts in the need, so it borrows
    full = {CTX: pieces("c", 350), DLG: pieces("d", 500)}
    a = allocate(1000, {OUT: pieces("o", 40), **full}, overhead=overhead)
    assert by_category(a)[OUT].used == 0 and a.dropped[OUT]  # 40 fits, 40 + 20 does not


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({CTX: CategoryBudget(1.5, 0, 1)}, r"budgets\[context\]\.share must be between 0 and 1"),
        ({DLG: CategoryBudget(0.5, 0.6, 1)}, r"budgets\[dialog\]\.min_share \(0\.6\)"),
        ({OUT: CategoryBudget(0.05, 0, 0.01)}, r"budgets\[system_output\]\.max_share \(0\.01\)"),
        ({SYS: CategoryBudget(0.1, 0, math.nan)}, r"budgets\[system\]\.max_share must be"),
        ({SYS: CategoryBudget(0.2, 0.2, 0.2)}, "the shares sum to 1.1, more than 1"),
    ],
)
def test_check_budgets_names_the_category_and_field(
    change: Mapping[Category, CategoryBudget], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        check_budgets({**DEFAULT_BUDGETS, **change})
    with pytest.raises(InvalidArgument, match=message):
        allocate(100, {}, {**DEFAULT_BUDGETS, **change})


def test_check_budgets_wants_every_category() -> None:
    with pytest.raises(InvalidArgument, match="missing categories dialog, system_output"):
        check_budgets({SYS: CategoryBudget(0.5), CTX: CategoryBudget(0.5)})


def test_allocate_rejects_bad_numbers() -> None:
    with pytest.raises(InvalidArgument, match="budget must be between 0 and 100000000"):
        allocate(-1, {})
    with pytest.raises(InvalidArgument, match="budget"):
        allocate(MAX_BUDGET + 1, {})
    with pytest.raises(InvalidArgument, match="tokens of dialog piece 'd'"):
        allocate(100, {DLG: [Piece("d", -1, 0.0)]}, EXAMPLE_MINS)
    with pytest.raises(InvalidArgument, match="priority of context piece 'c'"):
        allocate(100, {CTX: [Piece("c", 1, math.nan)]}, EXAMPLE_MINS)
    with pytest.raises(InvalidArgument, match=r"overhead\[system_output\]"):
        allocate(100, {}, overhead={OUT: -3})


# Properties ---------------------------------------------------------------------------------


@st.composite
def configs(draw: st.DrawFn) -> dict[Category, CategoryBudget]:
    """Valid configurations: shares summing to 1 or less, mins and maxes around them."""
    weights = [draw(st.integers(0, 10)) for _ in Category]
    total = draw(st.sampled_from([1.0, 1.0, 0.9, 0.5]))
    out = {}
    for c, w in zip(Category, weights, strict=True):
        share = total * w / (sum(weights) or 1)
        low = share * draw(st.sampled_from([0.0, 0.0, 0.5, 1.0]))
        high = min(1.0, share + (1.0 - share) * draw(st.sampled_from([0.0, 0.3, 1.0])))
        out[c] = CategoryBudget(share, low, high)
    return out


def piece_lists(max_tokens: int) -> st.SearchStrategy[dict[Category, list[Piece]]]:
    piece = st.tuples(st.integers(0, max_tokens), st.integers(0, 3))
    return st.fixed_dictionaries(
        {c: st.lists(piece, max_size=3 if c is SYS else 8) for c in Category},
    ).map(
        lambda d: {
            c: [Piece(f"{c}:{i}", t, float(p)) for i, (t, p) in enumerate(ps)]
            for c, ps in d.items()
        }
    )


overheads = st.fixed_dictionaries({c: st.integers(0, 20) for c in Category})


def check_invariants(
    a: Allocation,
    given_pieces: Mapping[Category, Sequence[Piece]],
    overhead: Mapping[Category, int],
) -> None:
    r = by_category(a)
    needs = {c: need(given_pieces[c], overhead[c]) for c in Category}
    assert sum(x.used for x in a.reports) <= sum(x.granted for x in a.reports) <= a.budget
    assert sum(x.lent for x in a.reports) == sum(x.borrowed for x in a.reports)
    assert not a.dropped[SYS]
    # SYSTEM lends only above its minimum and what it needs.
    assert r[SYS].lent == 0 or r[SYS].granted >= max(needs[SYS], r[SYS].minimum)
    spare = {c: max(0, r[c].granted - max(needs[c], r[c].minimum)) for c in Category}
    # A lender went below its minimum only because SYSTEM needed more than all minimums leave.
    others_min = sum(r[c].minimum for c in Category if c is not SYS)
    squeezed = needs[SYS] + others_min > sum(x.granted for x in a.reports)
    for c, x in r.items():
        kept, dropped = a.kept[c], a.dropped[c]
        assert sorted(kept + dropped, key=lambda p: p.key) == sorted(
            given_pieces[c], key=lambda p: p.key
        )
        order = {p.key: i for i, p in enumerate(given_pieces[c])}
        for part in (kept, dropped):  # by priority, ties in input order
            ranks = [(-p.priority, order[p.key]) for p in part]
            assert ranks == sorted(ranks)
        assert x.used == need(kept, overhead[c]) and x.used <= x.granted
        assert x.granted <= x.maximum + x.borrowed
        assert c is SYS or x.granted <= x.maximum
        assert x.lent == 0 or x.borrowed == 0
        assert x.borrowed == 0 or x.used == x.granted  # borrowed only what it uses
        assert x.granted >= x.minimum or (squeezed and r[SYS].borrowed > 0)
        # Nothing dropped could have fit, even with the lenders' spare up to the maximum.
        room = min(x.maximum, x.granted + sum(spare[o] for o in LENDERS[c]))
        for p in dropped:
            assert p.tokens + (0 if kept else overhead[c]) > room - x.used


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 3000),
    configs(),
    piece_lists(300),
    overheads,
)
def test_invariants_hold_for_any_mix(
    budget: int,
    budgets: dict[Category, CategoryBudget],
    given_pieces: dict[Category, list[Piece]],
    overhead: dict[Category, int],
) -> None:
    try:
        a = allocate(budget, given_pieces, budgets, overhead=overhead)
    except FailedPrecondition:
        # Only when SYSTEM needs more than the shares assign (flooring loses under 4 tokens).
        assigned = math.fsum(b.share for b in budgets.values()) * budget
        assert need(given_pieces[SYS], overhead[SYS]) > min(budget, assigned) - 4
        return
    check_invariants(a, given_pieces, overhead)
    # Deterministic, and blind to the order of the mapping's keys.
    shuffled = dict(reversed(list(given_pieces.items())))
    assert allocate(budget, shuffled, dict(reversed(list(budgets.items()))), overhead=overhead) == a


@settings(max_examples=100, deadline=None)
@given(st.integers(2, MAX_BUDGET), piece_lists(200), overheads)
def test_defaults_assign_the_whole_budget_and_system_fails_only_past_it(
    budget: int, given_pieces: dict[Category, list[Piece]], overhead: dict[Category, int]
) -> None:
    system = need(given_pieces[SYS], overhead[SYS])
    if system > budget:
        with pytest.raises(FailedPrecondition):
            allocate(budget, given_pieces, overhead=overhead)
        return
    a = allocate(budget, given_pieces, overhead=overhead)
    assert sum(r.granted for r in a.reports) == budget
    check_invariants(a, given_pieces, overhead)


@settings(max_examples=150, deadline=None)
@given(st.integers(500, 4000), configs(), piece_lists(60), overheads)
def test_nothing_is_dropped_when_everything_fits(
    budget: int,
    budgets: dict[Category, CategoryBudget],
    given_pieces: dict[Category, list[Piece]],
    overhead: dict[Category, int],
) -> None:
    a = allocate(budget, given_pieces, budgets, overhead=overhead)
    r = by_category(a)
    needs = {c: need(given_pieces[c], overhead[c]) for c in Category}
    # What must stay put: each category's need or minimum.
    held = sum(max(needs[c], r[c].minimum) for c in Category)
    fits = held <= sum(x.granted for x in a.reports)
    if fits and all(needs[c] <= r[c].maximum for c in Category if c is not SYS):
        assert not any(a.dropped.values())
        assert all(x.used == needs[x.category] for x in a.reports)
