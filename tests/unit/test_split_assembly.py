"""Tests for contextwm.retrieval.split_assembly with the real BPE counter: budget, layout, share
flow."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from contextwm.adapters.tokens_bpe import BpeTokenCounter, token_counter
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.items import Flag, Item, ItemState, ScoredItem, ScoreParts
from contextwm.retrieval.neighbours import HistoryCandidate
from contextwm.retrieval.pipeline import HISTORY_HEADING, QUERY_HEADING, RECENT_HEADING
from contextwm.retrieval.split_assembly import assemble_split
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

T0 = 1_700_000_000.0
ENCODINGS = ("cl100k_base", "o200k_base")


@pytest.fixture(params=ENCODINGS)
def counter(request: pytest.FixtureRequest) -> BpeTokenCounter:
    return token_counter(request.param)


def scored(
    seq: int,
    content: str,
    *,
    role: str = "user",
    score: float = 1.0,
    encoding: str = "cl100k_base",
) -> ScoredItem:
    """A scored item whose token_count is exact for encoding, as the engine stores it."""
    item = Item(
        conversation_id="c",
        seq=seq,
        role=role,
        content=content,
        timestamp=T0 + 60.0 * seq,
        token_count=token_counter(encoding).count(content),
        flags=Flag.NONE,
        metadata={},
        file=None,
        state=ItemState.WINDOW,
    )
    return ScoredItem(item, score, ScoreParts())


def recount(s: ScoredItem, counter: BpeTokenCounter) -> ScoredItem:
    item = dataclasses.replace(s.item, token_count=counter.count(s.item.content))
    return dataclasses.replace(s, item=item)


def expected_text(
    recent: Sequence[ScoredItem], history: Sequence[ScoredItem], query: str | None
) -> str:
    """The layout, written out independently of the pipeline: history, then recent, each
    item as "role: content" in seq order under one heading per day."""
    sections = []
    for heading, items in ((HISTORY_HEADING, history), (RECENT_HEADING, recent)):
        if not items:
            continue
        body, day, year = [heading], "", 0
        for s in sorted(items, key=lambda s: s.item.seq):
            at = datetime.fromtimestamp(s.item.timestamp, UTC)
            d = at.strftime("## %a ") + str(at.day) + at.strftime(" %b")
            if d != day:
                body.append(d if at.year == year else f"{d} {at.year}")
                day, year = d, at.year
            body.append(f"{s.item.role}: {s.item.content}")
        sections.append("\n\n".join(body))
    if query:
        sections.append(f"{QUERY_HEADING}\n\n{query}")
    return "\n\n".join(sections)


def words(n: int, word: str = "alpha") -> str:
    return " ".join([word] * n)


# ---------------------------------------------------------------- property

TEXT = st.one_of(
    st.text(min_size=1, max_size=40),
    st.text(alphabet="abc xyz\n\t.,<|>_", min_size=1, max_size=60),
    st.sampled_from(
        [
            "<|endoftext|>",
            "hello <|endoftext|> world",
            "<|fim_prefix|><|im_start|>",
            "  leading and trailing  \n",
            "\n\n\n",
            "emoji 🙂🙂🙂 and 汉字 and é\u0301",
            "x" * 500,
            "def f(x):\n    return x  # 🐍\n",
        ]
    ),
    st.integers(50, 400).map(lambda n: words(n, "tok")),
)


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[ScoredItem], list[HistoryCandidate], str | None]:
    n_window = draw(st.integers(0, 8))
    n_archive = draw(st.integers(0, 10))
    seqs = list(range(1, n_archive + n_window + 1))
    roles = st.sampled_from(["user", "assistant", "tool", "system", "file", "error"])
    items = {s: scored(s, draw(TEXT), role=draw(roles), score=draw(st.floats(-2, 5))) for s in seqs}
    window = [items[s] for s in seqs[n_archive:]]
    candidates = []
    # Hits are archive items best first; in the engine they may also come from the window.
    hit_seqs = draw(st.lists(st.sampled_from(seqs), unique=True, max_size=8)) if seqs else []
    for s in hit_seqs:
        neighbour = None
        if draw(st.booleans()):
            n = s + draw(st.sampled_from([-1, 1]))
            if n in items:
                neighbour = ScoredItem(items[n].item, items[s].score, ScoreParts(), s)
        candidates.append(HistoryCandidate(items[s], neighbour))
    query = draw(st.one_of(st.none(), TEXT))
    return window, candidates, query


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases(),
    st.integers(1, 700),
    st.floats(0.0, 1.0),
    st.sampled_from(ENCODINGS),
)
def test_rendered_text_never_exceeds_budget(
    case: tuple[list[ScoredItem], list[HistoryCandidate], str | None],
    budget: int,
    share: float,
    encoding: str,
) -> None:
    window, candidates, query = case
    counter = token_counter(encoding)
    window = [recount(s, counter) for s in window]
    candidates = [
        HistoryCandidate(
            recount(c.hit, counter), recount(c.neighbor, counter) if c.neighbor else None
        )
        for c in candidates
    ]
    try:
        out = assemble_split(
            window, candidates, query=query, budget=budget, recent_share=share, counter=counter
        )
    except InvalidArgument:
        # Only when the query section itself cannot fit.
        assert query
        assert counter.count(f"{QUERY_HEADING}\n\n{query}") + 1 > budget
        return
    exact = counter.count(out.text)
    assert exact <= budget
    assert out.tokens.total == exact
    assert out.tokens.budget == budget and out.tokens.encoding == encoding

    # No item twice; recent only from the window; history only from hits and neighbours.
    recent_seqs = [s.item.seq for s in out.recent]
    history_seqs = [s.item.seq for s in out.history]
    assert len(set(recent_seqs + history_seqs)) == len(recent_seqs) + len(history_seqs)
    assert set(recent_seqs) <= {s.item.seq for s in window}
    offered = {c.hit.item.seq for c in candidates} | {
        c.neighbor.item.seq for c in candidates if c.neighbor is not None
    }
    assert set(history_seqs) <= offered
    # A neighbour only comes along with its hit.
    hits_in = set(history_seqs)
    for seq in hits_in - {c.hit.item.seq for c in candidates}:
        assert any(
            c.neighbor is not None and c.neighbor.item.seq == seq and c.hit.item.seq in hits_in
            for c in candidates
        )

    # Sections in order, chronological within: the text is exactly that layout.
    assert recent_seqs == sorted(recent_seqs) and history_seqs == sorted(history_seqs)
    assert out.text == expected_text(out.recent, out.history, query)
    omitted = sum(1 for s in window if s.item.seq not in set(recent_seqs) | hits_in)
    assert out.tokens.recent_omitted == omitted


# ---------------------------------------------------------------- examples


def test_layout_and_token_account(counter: BpeTokenCounter) -> None:
    window = [scored(3, "third"), scored(4, "fourth", role="assistant")]
    hits = [HistoryCandidate(scored(2, "second", score=0.9)), HistoryCandidate(scored(1, "first"))]
    out = assemble_split(
        window, hits, query="what next?", budget=500, recent_share=0.5, counter=counter
    )
    assert out.text == (
        "# Relevant Historical Context\n\n## Tue 14 Nov 2023\n\nuser: first\n\nuser: second\n\n"
        "# Recent Context\n\n## Tue 14 Nov 2023\n\nuser: third\n\nassistant: fourth\n\n"
        "# Current Query\n\nwhat next?"
    )
    assert [s.item.seq for s in out.history] == [1, 2]
    assert out.tokens.total == counter.count(out.text)
    assert out.tokens.recent_omitted == 0


def test_empty_sections_are_left_out(counter: BpeTokenCounter) -> None:
    out = assemble_split([], [], query=None, budget=10, recent_share=0.5, counter=counter)
    assert out.text == "" and out.tokens.total == 0
    out = assemble_split(
        [scored(1, "hi")], [], query=None, budget=100, recent_share=0.5, counter=counter
    )
    assert out.text == "# Recent Context\n\n## Tue 14 Nov 2023\n\nuser: hi"


def test_query_larger_than_budget_raises(counter: BpeTokenCounter) -> None:
    query = words(100, "question")
    with pytest.raises(InvalidArgument, match="max_tokens"):
        assemble_split([], [], query=query, budget=50, recent_share=0.5, counter=counter)


def test_query_that_fits_leaves_the_rest_for_items(counter: BpeTokenCounter) -> None:
    query = words(20, "question")
    section = counter.count(f"{QUERY_HEADING}\n\n{query}")
    out = assemble_split(
        [scored(1, words(30))],
        [],
        query=query,
        budget=section + 1,
        recent_share=0.5,
        counter=counter,
    )
    assert out.recent == () and out.text == f"{QUERY_HEADING}\n\n{query}"


def test_window_keeps_newest_first(counter: BpeTokenCounter) -> None:
    window = [scored(s, words(20, f"w{s}")) for s in range(1, 11)]
    out = assemble_split(window, [], query=None, budget=100, recent_share=1.0, counter=counter)
    seqs = [s.item.seq for s in out.recent]
    assert seqs and seqs == list(range(11 - len(seqs), 11))
    assert out.tokens.recent_omitted == 10 - len(seqs)


def test_unused_history_share_flows_to_the_window(counter: BpeTokenCounter) -> None:
    window = [scored(s, words(20)) for s in range(1, 41)]  # far more than the budget
    budget = 400
    out = assemble_split(window, [], query=None, budget=budget, recent_share=0.5, counter=counter)
    assert out.tokens.recent > budget * 0.8
    half = assemble_split(
        window, [], query=None, budget=budget // 2, recent_share=1.0, counter=counter
    )
    assert len(out.recent) > len(half.recent)


def test_unused_window_share_flows_to_history(counter: BpeTokenCounter) -> None:
    hits = [HistoryCandidate(scored(s, words(20), score=1.0 / s)) for s in range(1, 41)]
    budget = 400
    out = assemble_split([], hits, query=None, budget=budget, recent_share=0.5, counter=counter)
    assert out.recent == ()
    assert out.tokens.history > budget * 0.8
    # Best hits first: the ones kept are the top of the list.
    assert [s.item.seq for s in out.history] == list(range(1, len(out.history) + 1))


def test_small_window_leaves_its_share_to_history(counter: BpeTokenCounter) -> None:
    window = [scored(41, "short")]
    hits = [HistoryCandidate(scored(s, words(20), score=1.0 / s)) for s in range(1, 41)]
    budget = 400
    out = assemble_split(window, hits, query=None, budget=budget, recent_share=0.5, counter=counter)
    assert [s.item.seq for s in out.recent] == [41]
    assert out.tokens.history > budget * 0.6


def test_share_limits_the_window_when_history_wants_more(counter: BpeTokenCounter) -> None:
    window = [scored(s, words(20)) for s in range(41, 81)]
    hits = [HistoryCandidate(scored(s, words(20), score=1.0 / s)) for s in range(1, 41)]
    out = assemble_split(window, hits, query=None, budget=600, recent_share=0.25, counter=counter)
    assert out.tokens.recent < 600 * 0.4
    assert out.tokens.history > out.tokens.recent


def test_neighbour_comes_along_when_it_fits(counter: BpeTokenCounter) -> None:
    hit = scored(5, "where did we put the kestrel config?", score=0.9)
    answer = ScoredItem(
        scored(6, "in deploy/kestrel.toml", role="assistant").item, 0.9, ScoreParts(), 5
    )
    out = assemble_split(
        [],
        [HistoryCandidate(hit, answer)],
        query=None,
        budget=200,
        recent_share=0.5,
        counter=counter,
    )
    assert [s.item.seq for s in out.history] == [5, 6]
    assert out.history[1].neighbor_of == 5


def test_neighbour_left_out_when_it_does_not_fit(counter: BpeTokenCounter) -> None:
    hit = scored(5, "short question?", score=0.9)
    big = ScoredItem(scored(6, words(300), role="assistant").item, 0.9, ScoreParts(), 5)
    alone = assemble_split(
        [], [HistoryCandidate(hit)], query=None, budget=200, recent_share=0.0, counter=counter
    )
    out = assemble_split(
        [],
        [HistoryCandidate(hit, big)],
        query=None,
        budget=alone.tokens.total + 5,
        recent_share=0.0,
        counter=counter,
    )
    assert [s.item.seq for s in out.history] == [5]


def test_neighbour_already_in_window_is_not_repeated(counter: BpeTokenCounter) -> None:
    window = [scored(6, "the answer", role="assistant")]
    hit = scored(5, "the question?", score=0.9)
    nb = ScoredItem(window[0].item, 0.9, ScoreParts(), 5)
    out = assemble_split(
        window,
        [HistoryCandidate(hit, nb)],
        query=None,
        budget=300,
        recent_share=0.5,
        counter=counter,
    )
    assert [s.item.seq for s in out.recent] == [6]
    assert [s.item.seq for s in out.history] == [5]
    assert out.text.count("the answer") == 1


def test_hit_already_in_recent_is_skipped(counter: BpeTokenCounter) -> None:
    window = [scored(3, "kestrel")]
    out = assemble_split(
        window,
        [HistoryCandidate(window[0])],
        query=None,
        budget=300,
        recent_share=0.5,
        counter=counter,
    )
    assert [s.item.seq for s in out.recent] == [3] and out.history == ()


def test_special_token_text_is_counted_as_text(counter: BpeTokenCounter) -> None:
    content = "<|endoftext|>" * 30
    out = assemble_split(
        [scored(1, content)],
        [],
        query="<|endoftext|>",
        budget=2000,
        recent_share=0.5,
        counter=counter,
    )
    assert content in out.text
    assert out.tokens.total == counter.count(out.text) > 30
