"""Retention's pure logic: policies resolved field by field, what they keep, and what the item
limits and inactivity remove."""

from __future__ import annotations

import math

import pytest
from contextwm.conversations.validation import scope_of
from contextwm.domain.conversations import ConversationSettings, SettingsPatch, apply_patch
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.history import Checkpoint, StateRun
from contextwm.domain.items import ItemState
from contextwm.domain.retention import RetentionPolicies, RetentionPolicy, check_policy
from contextwm.domain.scope import Scope
from contextwm.ports.retention_store import ArchivedRow
from contextwm.retention.outcomes import SEQS_SHOWN, ConversationOutcome
from contextwm.retention.plan import ItemPlan, Kept, inactive, kept_for, plan_items

NOW = 1_000_000.0
DAY = 86400.0
NOTHING_KEPT = Kept(active_start=10**9)


def row(seq: int, age_days: float, *, pinned: bool = False, embedded: bool = True) -> ArchivedRow:
    return ArchivedRow(seq, NOW - age_days * DAY, pinned, embedded)


def policy(**fields: object) -> RetentionPolicy:
    return RetentionPolicy(**fields).resolved()  # type: ignore[arg-type]


def checkpoint(last_seq: int, active_start: int, *window: tuple[int, int]) -> Checkpoint:
    runs = tuple(StateRun(first, last, ItemState.WINDOW) for first, last in window)
    return Checkpoint("c", 0.0, last_seq, 0, 0, 0, active_start, 8000, "general", runs)


# ---------------------------------------------------------------- policies


def test_a_conversation_overrides_its_namespace_field_by_field() -> None:
    policies = RetentionPolicies(
        default=RetentionPolicy(max_age_seconds=30 * DAY, inactive_seconds=90 * DAY),
        namespaces={"team-a": RetentionPolicy(max_archived_items=500, inactive_seconds=0)},
    )
    assert policies.for_namespace("team-a") == RetentionPolicy(
        max_age_seconds=30 * DAY, max_archived_items=500, inactive_seconds=0
    )
    assert policies.for_namespace("other") == policies.default
    own = RetentionPolicy(max_age_seconds=DAY, remove_pinned=True)
    assert policies.for_conversation("team-a", own) == RetentionPolicy(
        max_age_seconds=DAY, max_archived_items=500, inactive_seconds=0.0, remove_pinned=True
    )
    # Nothing set anywhere: every limit off, pinned items kept.
    off = RetentionPolicies().for_conversation("x", RetentionPolicy())
    assert off == RetentionPolicy(0.0, 0, 0.0, False) and off.is_off


def test_settings_patches_merge_retention_fields_and_keep_unset_ones() -> None:
    first = apply_patch(
        ConversationSettings(),
        SettingsPatch(retention=RetentionPolicy(max_age_seconds=DAY, max_archived_items=10)),
    )
    second = apply_patch(first, SettingsPatch(retention=RetentionPolicy(max_archived_items=0)))
    assert second.retention == RetentionPolicy(max_age_seconds=DAY, max_archived_items=0)
    assert apply_patch(second, SettingsPatch(window_max_items=5)).retention == second.retention


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (RetentionPolicy(max_age_seconds=-1), r"retention\.max_age_seconds must be between 0"),
        (RetentionPolicy(max_age_seconds=math.nan), r"retention\.max_age_seconds"),
        (RetentionPolicy(inactive_seconds=math.inf), r"retention\.inactive_seconds"),
        (RetentionPolicy(max_archived_items=-5), r"retention\.max_archived_items must be"),
    ],
)
def test_bad_policies_are_refused_naming_the_field(bad: RetentionPolicy, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        check_policy(bad, "retention")
    with pytest.raises(InvalidArgument, match=message):
        apply_patch(ConversationSettings(), SettingsPatch(retention=bad))


# ---------------------------------------------------------------- what stays


def test_kept_holds_the_active_context_and_what_checkpoints_restore() -> None:
    kept = kept_for(
        50,
        [
            checkpoint(30, 20, (26, 30)),  # its active context 20..30
            checkpoint(12, 8, (10, 12), (3, 4)),  # its active context 8..12; windows 3..4
            checkpoint(19, 13),  # 13..19: touches 8..12 and 20..30, so the three merge
        ],
    )
    assert kept.ranges == ((3, 4), (8, 30))
    inside = {s for s in range(1, 60) if s in kept}
    assert inside == {3, 4, *range(8, 31), *range(50, 60)}


def test_a_conversation_that_never_compacted_keeps_only_windows() -> None:
    kept = kept_for(0, [])
    assert not any(s in kept for s in (1, 2, 1000))
    # A checkpoint taken before any compaction: its window comes back, its unbounded active
    # context is not kept.
    kept = kept_for(40, [checkpoint(25, 0, (22, 25))])
    assert kept.ranges == ((22, 25),)
    assert {s for s in range(1, 45) if s in kept} == {22, 23, 24, 25, *range(40, 45)}


# ---------------------------------------------------------------- item limits


def test_by_age_removes_items_older_than_the_limit() -> None:
    rows = [row(1, 40), row(2, 31), row(3, 29), row(4, 1)]
    plan = plan_items(rows, policy(max_age_seconds=30 * DAY), NOTHING_KEPT, NOW)
    assert (plan.by_age, plan.by_count) == ((1, 2), ())


def test_by_count_removes_the_oldest_by_timestamp_beyond_the_limit() -> None:
    # Seq 3 is the oldest by its timestamp (an imported item), so it goes before 1 and 2.
    rows = [row(1, 5), row(2, 4), row(3, 9), row(4, 3), row(5, 2)]
    plan = plan_items(rows, policy(max_archived_items=3), NOTHING_KEPT, NOW)
    assert plan.by_count == (3, 1)


def test_age_removals_count_towards_the_limit() -> None:
    rows = [row(1, 50), row(2, 40), row(3, 5), row(4, 4), row(5, 3)]
    both = policy(max_age_seconds=30 * DAY, max_archived_items=2)
    plan = plan_items(rows, both, NOTHING_KEPT, NOW)
    assert (plan.by_age, plan.by_count) == ((1, 2), (3,))


def test_pinned_items_are_kept_unless_the_policy_allows_them() -> None:
    rows = [row(1, 50, pinned=True), row(2, 50), row(3, 50, pinned=True)]
    assert plan_items(rows, policy(max_age_seconds=DAY), NOTHING_KEPT, NOW).by_age == (2,)
    allowing = policy(max_age_seconds=DAY, remove_pinned=True)
    assert plan_items(rows, allowing, NOTHING_KEPT, NOW).by_age == (1, 2, 3)


def test_kept_and_unembedded_items_stay_but_still_count() -> None:
    rows = [row(1, 9), row(2, 8, embedded=False), row(3, 7), row(4, 6), row(5, 5)]
    kept = Kept(active_start=5, ranges=((3, 3),))
    # Five archived items against a limit of two: three must go, but only 1 and 4 may.
    plan = plan_items(rows, policy(max_archived_items=2), kept, NOW)
    assert plan.by_count == (1, 4)
    assert plan_items(rows, policy(max_age_seconds=DAY), kept, NOW).by_age == (1, 4)


def test_limits_that_are_off_remove_nothing() -> None:
    rows = [row(1, 10_000), row(2, 10_000)]
    assert plan_items(rows, policy(), NOTHING_KEPT, NOW) == ItemPlan()
    assert plan_items(rows, policy(max_archived_items=5), NOTHING_KEPT, NOW) == ItemPlan()


def test_inactivity_is_measured_from_the_last_append() -> None:
    week = policy(inactive_seconds=7 * DAY)
    assert inactive(NOW - 8 * DAY, week, NOW)
    assert not inactive(NOW - 6 * DAY, week, NOW)
    assert not inactive(0.0, policy(), NOW)  # off


# ---------------------------------------------------------------- scope and outcome


def test_scopes() -> None:
    assert scope_of("", "", False) == Scope("default")
    assert scope_of("team-a", "t1", False) == Scope("team-a", "t1")
    assert scope_of("", "", True) == Scope()
    with pytest.raises(InvalidArgument, match="all_namespaces covers every namespace"):
        scope_of("team-a", "", True)
    with pytest.raises(InvalidArgument, match="invalid namespace"):
        scope_of("bad name", "", False)


def test_an_outcome_lists_the_first_seqs_and_counts_the_rest() -> None:
    outcome = ConversationOutcome.of_items(
        "default", "c", policy(), range(1, SEQS_SHOWN + 1), (500, 400)
    )
    assert outcome.seqs == tuple(range(1, SEQS_SHOWN + 1)) and outcome.more_seqs == 2
    assert (outcome.by_age, outcome.by_count, outcome.items) == (SEQS_SHOWN, 2, SEQS_SHOWN + 2)
