"""Tests for contextwm.llm_context.truncation_ranges: Cline's strategies, valid for LLM APIs."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from contextwm.llm_context.truncation_ranges import (
    TruncationStrategy,
    truncation_notice,
    truncation_range,
)
from hypothesis import given
from hypothesis import strategies as st

S = TruncationStrategy
U, A, T = "user", "assistant", "tool"
PAIRS = [U, A] * 5  # the pair, then rest = 8 rows
# The pair's assistant called a tool: its output at 2 stays with it, so rest = 7 rows.
AGENT_LOOP = [U, A, T, A, T, A, T, A, U, A]


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (S.NONE, range(2, 10)),  # count 8: everything after the pair
        (S.LAST_TWO, range(2, 8)),  # count 6
        (S.HALF, range(2, 6)),  # count 8 // 4 * 2 = 4
        (S.QUARTER, range(2, 8)),  # count (24 // 4) // 2 * 2 = 6
    ],
)
def test_strategies_on_alternating_pairs(strategy: S, expected: range) -> None:
    assert truncation_range(PAIRS, strategy) == expected


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (S.NONE, range(3, 10)),
        (S.LAST_TWO, range(3, 8)),  # ends on an assistant, a user is kept next
        (S.HALF, range(3, 5)),  # count 7 // 4 * 2 = 2: the tool at 4 goes with its caller
        (S.QUARTER, range(3, 7)),  # count (21 // 4) // 2 * 2 = 4
    ],
)
def test_strategies_on_an_agent_loop(strategy: S, expected: range) -> None:
    assert truncation_range(AGENT_LOOP, strategy) == expected


def test_a_user_row_is_never_removed_without_its_answer() -> None:
    # none would remove [user, assistant, user]; a range may not end on the user.
    assert truncation_range([U, A, U, A, U], S.NONE) == range(2, 4)
    # Nothing well formed is left to remove: the only candidate is the user.
    assert truncation_range([U, A, U], S.NONE) == range(0)


def test_no_first_pair_means_nothing_to_remove() -> None:
    for roles in ([], [U], [A, U], [U, U, T], [A, A, U, T, T]):
        for strategy in S:
            assert truncation_range(roles, strategy) == range(0)


def test_the_pair_is_the_first_user_and_the_first_assistant_after_it() -> None:
    # A system row and an assistant before the first user do not count.
    roles = ["system", A, U, T, A, U, A, U, A]
    assert truncation_range(roles, S.NONE) == range(5, 9)


def test_a_compaction_marker_first_is_the_pairs_user() -> None:
    marker_first = [U, A, T, A, U, A]  # index 0: the marker (role "user")
    assert truncation_range(marker_first, S.LAST_TWO) == range(3, 4)


def test_the_pairs_tool_outputs_stay_with_it() -> None:
    # An API rejects the pair's tool call without its output: both tools stay.
    assert truncation_range([U, A, T, T, U, A, U, A], S.NONE) == range(4, 8)


def test_quarter_can_remove_more_than_last_two() -> None:
    # rest = 3: last_two removes 1, quarter removes (9 // 4) // 2 * 2 = 2.
    roles = [U, A, U, A, U]
    assert truncation_range(roles, S.LAST_TWO) == range(0)  # [user] alone is not allowed
    assert truncation_range(roles, S.QUARTER) == range(2, 4)


def test_truncation_notice_says_what_was_removed_and_what_was_kept() -> None:
    text = truncation_notice(37, 12345)
    assert text == (
        "[contextwm: 37 earlier items (12,345 tokens) were removed here to keep the context "
        "within its limit; they are archived and searchable. The first request and the latest "
        "items are kept.]"
    )
    assert truncation_notice(1, 5).startswith("[contextwm: 1 earlier item (5 tokens) was removed")


# ------------------------------------------------------------ properties

roles_lists = st.lists(st.sampled_from([U, A, T, "system", "file", "error"]), max_size=40)


def after_pair(roles: Sequence[str]) -> int | None:
    """The reference: a plain scan for the first user, then the first assistant after it,
    then past the tool outputs that follow it."""
    users = [i for i, r in enumerate(roles) if r == U]
    if not users:
        return None
    answers = [i for i, r in enumerate(roles) if r == A and i > users[0]]
    if not answers:
        return None
    end = answers[0] + 1
    while end < len(roles) and roles[end] == T:
        end += 1
    return end


def formula_count(rest: int, strategy: S) -> int:
    return {
        S.NONE: rest,
        S.LAST_TWO: max(rest - 2, 0),
        S.HALF: (rest // 4) * 2,
        S.QUARTER: ((rest * 3) // 4 // 2) * 2,
    }[strategy]


def well_formed(roles: Sequence[str], start: int, end: int) -> bool:
    return end == start or (roles[end - 1] != U and (end == len(roles) or roles[end] != T))


@given(roles_lists, st.sampled_from(list(S)))
def test_the_range_is_well_formed_and_the_largest_within_the_formula(
    roles: list[str], strategy: S
) -> None:
    removed = truncation_range(roles, strategy)
    start = after_pair(roles)
    if not removed:
        assert removed == range(0)
    else:
        assert start is not None and removed.start == start  # the pair is before the range
        assert removed.step == 1 and removed.stop <= len(roles)  # contiguous, in bounds
        assert roles[removed.stop - 1] != U
        assert removed.stop == len(roles) or roles[removed.stop] != T
    if start is not None:
        # No acceptable end lies between the one chosen and the formula's.
        limit = start + formula_count(len(roles) - start, strategy)
        chosen = removed.stop if removed else start
        assert chosen <= limit
        assert not any(well_formed(roles, start, e) for e in range(chosen + 1, limit + 1))


@given(roles_lists)
def test_strategies_remove_in_order(roles: list[str]) -> None:
    stop = {s: truncation_range(roles, s).stop for s in S}  # same start; range(0) stops at 0
    assert stop[S.NONE] >= stop[S.LAST_TWO] >= stop[S.HALF]
    assert stop[S.NONE] >= stop[S.QUARTER] >= stop[S.HALF]
    # last_two and quarter are ordered except when 3 rows follow the pair (see above).
    start = after_pair(roles)
    if start is not None and len(roles) - start != 3:
        assert stop[S.LAST_TWO] >= stop[S.QUARTER]
