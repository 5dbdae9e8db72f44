"""Tests for contextwm.retrieval.relevant_assembly with the real BPE counter: the budget is exact,
the newest items are kept within their share, candidates go by relevance per token, and
history is rendered under one heading per day."""

from __future__ import annotations

import pytest
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.items import Flag, Item, ItemState, ScoredItem, ScoreParts
from contextwm.retrieval.pipeline import day_heading
from contextwm.retrieval.relevant_assembly import KEEP_SHARE, assemble_relevant
from hypothesis import given, settings
from hypothesis import strategies as st

COUNTER = token_counter("cl100k_base")
DAY = 86_400.0
T0 = 1_709_542_800.0  # Monday 2024-03-04 09:00 UTC
WORDS = ["invoice", "total", "rounding", "def", "f():", "\n", "東京", "🙂", "error", "the", "!"]
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(" ".join)


def scored(
    seq: int, content: str, score: float, *, day: int = 0, state: ItemState = ItemState.WINDOW
) -> ScoredItem:
    item = Item(
        "c",
        seq,
        "user" if seq % 2 else "assistant",
        content,
        T0 + day * DAY + seq,
        COUNTER.count(content),
        Flag.NONE,
        {},
        None,
        state,
    )
    return ScoredItem(item, score, ScoreParts(similarity=score))


def test_the_best_evidence_per_token_goes_first() -> None:
    # Same relevance: the short item is worth more per token than the long one.
    short = scored(1, "Port 8443.", 0.6, state=ItemState.ARCHIVED)
    long = scored(2, "The billing service port is 8443 " * 20, 0.7, state=ItemState.ARCHIVED)
    out = assemble_relevant(
        [], [long, short], query="port?", budget=40, keep_newest=0, counter=COUNTER
    )
    assert [s.item.seq for s in out.history] == [1]


def test_a_short_filler_turn_does_not_beat_a_better_turn_of_a_few_lines() -> None:
    # Per token alone, "Sounds great!" (score 0.5, 3 tokens) would be worth three times the
    # evidence (score 0.8, about 30 tokens); the length prior lets relevance decide.
    filler = scored(1, "Sounds great!", 0.5, state=ItemState.ARCHIVED)
    evidence = scored(
        2,
        "We moved the billing service to port 8443 last week, after the audit asked for TLS.",
        0.8,
        state=ItemState.ARCHIVED,
    )
    room = COUNTER.count("# Relevant Historical Context") + COUNTER.count(day_heading(T0)) + 5
    budget = room + COUNTER.count(f"assistant: {evidence.item.content}") + 1 + 3
    out = assemble_relevant(
        [], [filler, evidence], query=None, budget=budget, keep_newest=0, counter=COUNTER
    )
    assert [s.item.seq for s in out.history] == [2]


def test_a_page_long_reply_gives_way_to_several_short_answers() -> None:
    page = scored(
        1, "The deploy log says " + "nothing new here " * 120, 0.6, state=ItemState.ARCHIVED
    )
    answers = [
        scored(seq, f"Answer {seq}: the port is {8000 + seq}.", 0.5, state=ItemState.ARCHIVED)
        for seq in range(2, 6)
    ]
    out = assemble_relevant(
        [], [page, *answers], query=None, budget=400, keep_newest=0, counter=COUNTER
    )
    assert [s.item.seq for s in out.history] == [2, 3, 4, 5]


def test_the_newest_items_are_kept_within_a_quarter_of_the_budget() -> None:
    window = [scored(seq, f"note {seq} about nothing in particular", 0.0) for seq in range(1, 11)]
    answer = scored(20, "The answer is 42.", 1.0, state=ItemState.ARCHIVED)
    roomy = assemble_relevant(
        window, [answer], query="answer?", budget=400, keep_newest=2, counter=COUNTER
    )
    assert {9, 10} <= {s.item.seq for s in roomy.recent}
    tight = assemble_relevant(
        window, [answer], query="answer?", budget=45, keep_newest=2, counter=COUNTER
    )
    assert [s.item.seq for s in tight.history] == [20]
    kept_cost = tight.tokens.recent
    assert kept_cost <= KEEP_SHARE * 45 or not tight.recent


def test_unranked_archived_items_never_fill_the_budget_but_window_items_do() -> None:
    window = [scored(1, "a window note", 0.0)]
    stale = scored(5, "an archived note", 0.0, state=ItemState.ARCHIVED)
    out = assemble_relevant(window, [stale], query=None, budget=200, keep_newest=0, counter=COUNTER)
    assert [s.item.seq for s in out.recent] == [1]
    assert out.history == ()


def test_history_gets_one_heading_per_day_and_comes_before_the_recent_part() -> None:
    hits = [
        scored(1, "first day, first note", 0.9, day=0, state=ItemState.ARCHIVED),
        scored(3, "first day, second note", 0.8, day=0, state=ItemState.ARCHIVED),
        scored(5, "third day note", 0.7, day=2, state=ItemState.ARCHIVED),
    ]
    window = [scored(9, "newest", 0.0, day=3)]
    out = assemble_relevant(window, hits, query="q", budget=500, keep_newest=1, counter=COUNTER)
    assert out.text == (
        "# Relevant Historical Context\n\n## Mon 4 Mar 2024\n\nuser: first day, first note"
        "\n\nuser: first day, second note\n\n## Wed 6 Mar\n\nuser: third day note"
        "\n\n# Recent Context\n\n## Thu 7 Mar 2024\n\nuser: newest\n\n# Current Query\n\nq"
    )
    assert day_heading(T0) == "## Mon 4 Mar"
    assert out.tokens.total == COUNTER.count(out.text)
    assert out.tokens.recent + out.tokens.history + out.tokens.query == out.tokens.total


def test_a_heading_names_its_year_where_the_section_or_the_year_begins_and_is_paid_exactly() -> (
    None
):
    hits = [
        scored(1, "spring note", 0.9, day=0, state=ItemState.ARCHIVED),
        scored(3, "winter note", 0.8, day=300, state=ItemState.ARCHIVED),
        scored(5, "new year note", 0.7, day=303, state=ItemState.ARCHIVED),
    ]
    out = assemble_relevant([], hits, query="q", budget=500, keep_newest=0, counter=COUNTER)
    assert out.text == (
        "# Relevant Historical Context\n\n## Mon 4 Mar 2024\n\nuser: spring note"
        "\n\n## Sun 29 Dec\n\nuser: winter note\n\n## Wed 1 Jan 2025\n\nuser: new year note"
        "\n\n# Current Query\n\nq"
    )
    # Packing charged what the text costs: a budget of exactly that keeps every item.
    exact = assemble_relevant(
        [], hits, query="q", budget=out.tokens.total, keep_newest=0, counter=COUNTER
    )
    assert exact.text == out.text


def test_the_same_date_of_another_year_gets_a_heading_of_its_own() -> None:
    hits = [
        scored(1, "this year", 0.9, day=0, state=ItemState.ARCHIVED),
        scored(3, "six years on", 0.8, day=2191, state=ItemState.ARCHIVED),  # Mon 4 Mar 2030
    ]
    out = assemble_relevant([], hits, query="q", budget=500, keep_newest=0, counter=COUNTER)
    assert out.text == (
        "# Relevant Historical Context\n\n## Mon 4 Mar 2024\n\nuser: this year"
        "\n\n## Mon 4 Mar 2030\n\nuser: six years on\n\n# Current Query\n\nq"
    )


def test_a_budget_below_the_query_is_rejected() -> None:
    with pytest.raises(InvalidArgument, match="cannot hold the query"):
        assemble_relevant([], [], query="word " * 50, budget=10, keep_newest=0, counter=COUNTER)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(texts, st.floats(0, 1), st.booleans(), st.integers(0, 3)), max_size=30),
    st.integers(1, 600),
    st.integers(0, 5),
    st.one_of(st.none(), texts),
)
def test_never_over_budget_exact_and_no_item_twice(
    rows: list[tuple[str, float, bool, int]], budget: int, keep: int, query: str | None
) -> None:
    items = [
        scored(
            i + 1,
            text,
            score,
            day=day,
            state=ItemState.WINDOW if in_window else ItemState.ARCHIVED,
        )
        for i, (text, score, in_window, day) in enumerate(rows)
    ]
    window = [s for s in items if s.item.state == ItemState.WINDOW]
    ranked = [s for s in items if s.score > 0.5 or s.item.state == ItemState.ARCHIVED]
    try:
        out = assemble_relevant(
            window, ranked, query=query, budget=budget, keep_newest=keep, counter=COUNTER
        )
    except InvalidArgument:
        assert query is not None
        assert COUNTER.count(f"# Current Query\n\n{query}") > budget
        return
    assert out.tokens.total == COUNTER.count(out.text) <= budget
    seqs = [s.item.seq for s in (*out.recent, *out.history)]
    assert len(seqs) == len(set(seqs))
    assert all(s.item.state == ItemState.WINDOW for s in out.recent)
    assert all(s.item.state != ItemState.WINDOW and s.score > 0 for s in out.history)
    assert out.tokens.recent_omitted == len(window) - len(out.recent)
