"""Tests for contextwm.llm_context.active_context: the view against a from-scratch reference."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from contextwm.adapters.tokens_bpe import BpeTokenCounter, token_counter
from contextwm.domain.active import ActiveEntry, ActiveRow, ActiveTotals, Replacement, Treatment
from contextwm.llm_context.active_context import ActiveContext, mask_placeholder
from contextwm.llm_context.truncation_ranges import (
    TruncationStrategy,
    truncation_notice,
    truncation_range,
)
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

COUNTER = token_counter("cl100k_base")


def reference_rows(
    entries: Sequence[ActiveEntry],
    truncated: set[int],
    replaced: dict[int, Replacement],
    mask_after_turns: int,
    counter: BpeTokenCounter = COUNTER,
) -> list[ActiveRow]:
    """The view worked out from scratch, the obvious (quadratic) way."""
    markers = [i for i, e in enumerate(entries) if e.kind == "compaction"]
    active = list(entries[markers[-1] :] if markers else entries)
    rows: list[ActiveRow] = []
    run: list[ActiveEntry] = []
    for i, entry in enumerate(active):
        if entry.seq in truncated:
            run.append(entry)
            continue
        if run:
            rows.append(notice_row(run, counter))
            run = []
        later_answers = sum(
            1 for e in active[i + 1 :] if e.role == "assistant" and e.seq not in truncated
        )
        placeholder = mask_placeholder(entry.tool, entry.seq, entry.tokens)
        if entry.seq in replaced:
            r = replaced[entry.seq]
            rows.append(row(entry, r.tokens, Treatment.DUPLICATE_READ, r.text))
        elif (
            mask_after_turns > 0
            and entry.role == "tool"
            and later_answers >= mask_after_turns
            and counter.count(placeholder) < entry.tokens
        ):
            rows.append(row(entry, counter.count(placeholder), Treatment.MASKED, placeholder))
        else:
            rows.append(row(entry, entry.tokens, Treatment.AS_IS, None))
    if run:
        rows.append(notice_row(run, counter))
    return rows


def row(entry: ActiveEntry, tokens: int, treatment: Treatment, text: str | None) -> ActiveRow:
    return ActiveRow(entry.seq, entry.role, tokens, entry.tokens, treatment, text)


def notice_row(run: list[ActiveEntry], counter: BpeTokenCounter) -> ActiveRow:
    stored = sum(e.tokens for e in run)
    text = truncation_notice(len(run), stored)
    return ActiveRow(None, "user", counter.count(text), stored, Treatment.TRUNCATION_NOTICE, text)


def totals_of(rows: list[ActiveRow], truncated_items: int) -> ActiveTotals:
    items = [r for r in rows if r.seq is not None]

    def of(t: Treatment) -> list[ActiveRow]:
        return [r for r in rows if r.treatment is t]

    return ActiveTotals(
        tokens=sum(r.tokens for r in rows),
        items=len(items),
        stored_tokens=sum(r.original_tokens for r in items),
        masked_items=len(of(Treatment.MASKED)),
        masked_saved=sum(r.original_tokens - r.tokens for r in of(Treatment.MASKED)),
        duplicate_items=len(of(Treatment.DUPLICATE_READ)),
        duplicate_saved=sum(r.original_tokens - r.tokens for r in of(Treatment.DUPLICATE_READ)),
        truncated_items=truncated_items,
        truncated_tokens=sum(r.original_tokens for r in of(Treatment.TRUNCATION_NOTICE)),
    )


def agent_loop(turns: int, tokens: int = 500) -> list[ActiveEntry]:
    """seq 1 user, then (assistant, tool) pairs: 2 assistant, 3 tool, 4 assistant, ..."""
    out = [ActiveEntry(1, "user", 20)]
    for t in range(turns):
        out.append(ActiveEntry(2 + 2 * t, "assistant", 40))
        out.append(ActiveEntry(3 + 2 * t, "tool", tokens, tool="read_file"))
    return out


def treatments(ctx: ActiveContext) -> list[tuple[int | None, str]]:
    return [(r.seq, r.treatment.value) for r in ctx.rows()]


def check(ctx: ActiveContext) -> None:
    """rows() and totals() agree with each other and with row_count()."""
    rows = ctx.rows()
    runs = [r for r in rows if r.seq is None]
    assert ctx.row_count() == len(rows)
    truncated_items = ctx.totals().truncated_items
    assert ctx.totals() == totals_of(rows, truncated_items)
    assert truncated_items >= len(runs)


# ------------------------------------------------------------ examples


def test_masking_after_two_turns_moves_forward_with_each_answer() -> None:
    ctx = ActiveContext(COUNTER, mask_after_turns=2)
    for entry in agent_loop(3):  # 1 U, 2 A, 3 T, 4 A, 5 T, 6 A, 7 T
        ctx.append(entry)
    # Tool 3 has answers 4 and 6 after it; tool 5 only 6.
    assert [t for _, t in treatments(ctx)] == ["as_is"] * 2 + ["masked"] + ["as_is"] * 4
    ctx.append(ActiveEntry(8, "assistant", 40))
    masked = [r for r in ctx.rows() if r.treatment is Treatment.MASKED]
    assert [r.seq for r in masked] == [3, 5]
    assert masked[0].text == (
        "[output of tool read_file at seq 3 omitted (500 tokens); "
        "the stored item is unchanged and searchable]"
    )
    assert masked[0].original_tokens == 500 and masked[0].tokens == COUNTER.count(masked[0].text)
    totals = ctx.totals()
    assert totals.masked_items == 2
    assert totals.masked_saved == 2 * (500 - masked[0].tokens)
    assert totals.stored_tokens == 20 + 4 * 40 + 3 * 500
    check(ctx)


def test_an_unnamed_tool_is_called_tool() -> None:
    text = mask_placeholder(None, 42, 1234)
    assert text.startswith("[output of tool at seq 42 omitted (1,234 tokens)")


def test_zero_turns_switches_masking_off() -> None:
    ctx = ActiveContext(COUNTER, mask_after_turns=0)
    ctx.reset(agent_loop(20))
    assert ctx.totals().masked_items == 0
    ctx.set_mask_after_turns(1)
    assert ctx.totals().masked_items == 19  # every tool output but the last
    ctx.set_mask_after_turns(0)
    assert all(r.treatment is Treatment.AS_IS for r in ctx.rows())
    check(ctx)


def test_a_tool_output_smaller_than_its_placeholder_is_not_masked() -> None:
    ctx = ActiveContext(COUNTER, mask_after_turns=1)
    ctx.reset(agent_loop(3, tokens=5))
    assert ctx.totals().masked_items == 0


def test_a_replacement_beats_masking() -> None:
    ctx = ActiveContext(COUNTER, mask_after_turns=1)
    ctx.reset(agent_loop(3))
    assert ctx.rows()[2].treatment is Treatment.MASKED  # seq 3
    ctx.replace(Replacement(3, "[duplicate read of a.py: see seq 5]", 12))
    ctx.replace(Replacement(99, "unknown seq: ignored", 3))
    replaced = ctx.rows()[2]
    assert (replaced.seq, replaced.treatment, replaced.tokens) == (3, Treatment.DUPLICATE_READ, 12)
    totals = ctx.totals()
    assert (totals.masked_items, totals.duplicate_items, totals.duplicate_saved) == (1, 1, 488)
    check(ctx)


def test_two_separate_runs_give_two_notices() -> None:
    ctx = ActiveContext(COUNTER, mask_after_turns=0)
    ctx.reset(agent_loop(5))  # seqs 1..11
    ctx.truncate([2, 3, 6, 7, 8])
    assert treatments(ctx) == [
        (1, "as_is"),
        (None, "truncation_notice"),
        (4, "as_is"),
        (5, "as_is"),
        (None, "truncation_notice"),
        (9, "as_is"),
        (10, "as_is"),
        (11, "as_is"),
    ]
    notices = [r for r in ctx.rows() if r.seq is None]
    assert [n.original_tokens for n in notices] == [540, 580]
    assert notices[0].text == truncation_notice(2, 540) and notices[0].role == "user"
    totals = ctx.totals()
    assert (totals.items, totals.truncated_items, totals.truncated_tokens) == (6, 5, 1120)
    assert ctx.item_seqs() == [1, 4, 5, 9, 10, 11]
    assert 4 in ctx and 3 not in ctx and 99 not in ctx
    check(ctx)


def test_truncating_adjacent_ranges_merges_them_into_one_notice() -> None:
    ctx = ActiveContext(COUNTER, mask_after_turns=0)
    ctx.reset(agent_loop(5))
    ctx.truncate([2, 3])
    ctx.truncate([4, 5])
    assert treatments(ctx)[:3] == [(1, "as_is"), (None, "truncation_notice"), (6, "as_is")]
    assert ctx.rows()[1].text == truncation_notice(4, 1080)
    assert ctx.row_count() == 8
    check(ctx)


def test_truncation_range_applied_through_item_seqs() -> None:
    ctx = ActiveContext(COUNTER, mask_after_turns=0)
    ctx.reset(agent_loop(5))
    removed = truncation_range(ctx.item_roles(), TruncationStrategy.HALF)
    ctx.truncate([ctx.item_seqs()[i] for i in removed])
    assert ctx.item_seqs()[:2] == [1, 2]  # the first pair stays
    check(ctx)


def test_a_compaction_marker_first_stays_as_is() -> None:
    marker = ActiveEntry(4, "user", 300, kind="compaction")
    ctx = ActiveContext(COUNTER, mask_after_turns=1)
    ctx.reset([*agent_loop(1), marker, *agent_loop(4)[4:]])  # 1 2 3 | 4, then 5 T 6 A ... 9 T
    assert ctx.item_seqs() == [4, 5, 6, 7, 8, 9]
    first = ctx.rows()[0]
    assert (first.seq, first.treatment, first.text) == (4, Treatment.AS_IS, None)
    # A marker appended later starts the active context afresh.
    ctx.append(ActiveEntry(10, "user", 250, kind="compaction"))
    assert treatments(ctx) == [(10, "as_is")]
    assert ctx.totals().tokens == 250
    check(ctx)


def test_a_replaced_item_later_truncated_counts_only_as_truncated() -> None:
    ctx = ActiveContext(COUNTER, mask_after_turns=0)
    ctx.reset(agent_loop(3))
    ctx.replace(Replacement(5, "[superseded]", 4))
    assert ctx.totals().duplicate_items == 1
    ctx.truncate([4, 5])
    totals = ctx.totals()
    assert (totals.duplicate_items, totals.duplicate_saved) == (0, 0)
    assert (totals.truncated_items, totals.truncated_tokens) == (2, 540)
    ctx.replace(Replacement(5, "[superseded]", 4))  # no longer active: ignored
    assert ctx.totals() == totals
    check(ctx)


def test_truncating_an_answer_can_unmask_an_output() -> None:
    ctx = ActiveContext(COUNTER, mask_after_turns=2)
    ctx.reset(agent_loop(3))  # tool 3 is masked by answers 4 and 6
    assert ctx.totals().masked_items == 1
    ctx.truncate([6])
    assert ctx.totals().masked_items == 0
    check(ctx)


def test_rows_pages_like_a_slice() -> None:
    ctx = ActiveContext(COUNTER, mask_after_turns=2)
    ctx.reset(agent_loop(6))
    ctx.truncate([4, 5])
    everything = ctx.rows()
    for start, stop in [(0, 3), (2, 5), (5, None), (11, 40), (3, 1)]:
        assert ctx.rows(start, stop) == everything[start:stop]
    with pytest.raises(ValueError):
        ctx.rows(-1)


def test_misuse_is_rejected() -> None:
    ctx = ActiveContext(COUNTER)
    ctx.append(ActiveEntry(5, "user", 1))
    with pytest.raises(ValueError, match="not after"):
        ctx.append(ActiveEntry(5, "assistant", 1))
    with pytest.raises(ValueError, match="distinct"):
        ctx.reset([ActiveEntry(1, "user", 1), ActiveEntry(1, "assistant", 1)])
    with pytest.raises(ValueError, match=">= 0"):
        ctx.set_mask_after_turns(-1)
    with pytest.raises(ValueError, match=">= 0"):
        ActiveContext(COUNTER, mask_after_turns=-2)


# ------------------------------------------------------------ the reference, stateful

ROLES = ["user", "assistant", "assistant", "tool", "tool", "tool", "system", "file", "error"]
entries_ = st.builds(
    lambda role, tokens, tool, marker: ActiveEntry(
        0, "user" if marker else role, tokens, tool, "compaction" if marker else "message"
    ),
    st.sampled_from(ROLES),
    st.one_of(st.integers(0, 40), st.integers(0, 3000)),  # around a placeholder's ~30 tokens
    st.one_of(st.none(), st.sampled_from(["read_file", "bash", "grep_search"])),
    st.integers(0, 24).map(lambda k: k == 0),  # a compaction marker now and then
)


class ActiveContextMachine(RuleBasedStateMachine):
    """Drives an ActiveContext and a plain model of its state; the view must match."""

    def __init__(self) -> None:
        super().__init__()
        self.ctx = ActiveContext(COUNTER, mask_after_turns=2)
        self.entries: list[ActiveEntry] = []  # the active entries, from the last marker on
        self.truncated: set[int] = set()
        self.replaced: dict[int, Replacement] = {}
        self.n = 2
        self.next_seq = 1

    def active(self) -> list[int]:
        return [e.seq for e in self.entries if e.seq not in self.truncated]

    def pick(self, data: st.DataObject, seqs: list[int]) -> list[int]:
        """Some of seqs, plus now and then a seq that is not active at all."""
        chosen = data.draw(st.lists(st.sampled_from(seqs), max_size=6)) if seqs else []
        return chosen + data.draw(st.lists(st.integers(-3, self.next_seq + 3), max_size=1))

    @rule(template=entries_, gap=st.integers(1, 3))
    def append(self, template: ActiveEntry, gap: int) -> None:
        seq = self.next_seq + gap - 1
        self.next_seq = seq + 1
        entry = ActiveEntry(seq, template.role, template.tokens, template.tool, template.kind)
        self.ctx.append(entry)
        if entry.kind == "compaction":
            self.entries, self.truncated, self.replaced = [], set(), {}
        self.entries.append(entry)

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        seqs = self.pick(data, [e.seq for e in self.entries])
        self.ctx.truncate(seqs)
        new = {s for s in seqs if s in self.active()}
        self.truncated |= new
        for s in new:
            self.replaced.pop(s, None)

    @rule(strategy=st.sampled_from(list(TruncationStrategy)))
    def truncate_by_strategy(self, strategy: TruncationStrategy) -> None:
        assert self.ctx.item_seqs() == self.active()
        removed = truncation_range(self.ctx.item_roles(), strategy)
        seqs = [self.active()[i] for i in removed]
        self.ctx.truncate(seqs)
        self.truncated |= set(seqs)
        for s in seqs:
            self.replaced.pop(s, None)

    @rule(data=st.data(), tokens=st.integers(1, 60))
    def replace(self, data: st.DataObject, tokens: int) -> None:
        for seq in self.pick(data, self.active())[:2]:
            replacement = Replacement(seq, f"[duplicate read, superseded after seq {seq}]", tokens)
            self.ctx.replace(replacement)
            if seq in self.active():
                self.replaced[seq] = replacement

    @rule(n=st.integers(0, 4))
    def set_mask_after_turns(self, n: int) -> None:
        self.ctx.set_mask_after_turns(n)
        self.n = n

    @rule(data=st.data())
    def reset(self, data: st.DataObject) -> None:
        """Rebuilds from the model's entries (some dropped, some earlier-marked) as a load would."""
        seqs = [e.seq for e in self.entries]
        keep = set(self.pick(data, seqs)) if data.draw(st.booleans()) else set(seqs)
        entries = [e for e in self.entries if e.seq in keep]
        truncated = set(self.pick(data, seqs))
        replacements = [
            Replacement(s, f"[read again at seq {s + 1}]", 7) for s in self.pick(data, seqs)
        ]
        self.ctx.reset(reversed(entries), truncated, replacements)  # order must not matter
        markers = [i for i, e in enumerate(entries) if e.kind == "compaction"]
        self.entries = entries[markers[-1] :] if markers else entries
        live = {e.seq for e in self.entries}
        self.truncated = truncated & live
        self.replaced = {
            r.seq: r for r in replacements if r.seq in live and r.seq not in self.truncated
        }

    @invariant()
    def view_matches_the_reference(self) -> None:
        rows = self.ctx.rows()
        assert rows == reference_rows(self.entries, self.truncated, self.replaced, self.n)
        assert self.ctx.totals() == totals_of(rows, len(self.truncated))
        assert self.ctx.row_count() == len(rows)
        assert self.ctx.item_seqs() == self.active()
        assert self.ctx.item_roles() == [e.role for e in self.entries if e.seq in self.active()]
        for seq in range(-1, self.next_seq + 1):
            assert (seq in self.ctx) == (seq in self.active())
        middle = len(rows) // 2
        assert self.ctx.rows(middle, middle + 3) == rows[middle : middle + 3]


ActiveContextMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_active_context_matches_the_reference = ActiveContextMachine.TestCase
