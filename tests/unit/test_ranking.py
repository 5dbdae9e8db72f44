"""Tests for contextwm.retrieval.ranking: BM25, peakedness, fuse() in its three modes, and
candidates rescored with the turns around them."""

from __future__ import annotations

import math

import pytest
from contextwm.ports.lexical_store import TermPostings
from contextwm.retrieval import ranking
from contextwm.retrieval.ranking import (
    BM25_B,
    BM25_K1,
    CONTEXT_REACH,
    CONTEXT_SHARE,
    DENSE_FLOOR_RANK,
    Ranked,
    bm25,
    fuse,
    fuse_across,
    matched_idf,
    peakedness,
    with_context,
)
from hypothesis import given, settings
from hypothesis import strategies as st


def order(ranked: list[Ranked]) -> list[int]:
    return [r.seq for r in ranked]


def postings(count: int, *rows: int) -> TermPostings:
    """count items hold the term; rows are those listed."""
    return TermPostings(count, rows)


def lexical(
    terms: dict[str, TermPostings], lengths: dict[int, int], items: int, mean: float
) -> dict[int, float]:
    """BM25 by seq of the listed rows, each row's seq being its row id."""
    weights = matched_idf(terms, items)
    return bm25(weights, {r: (r, lengths[r]) for r in weights}, mean)


# ---------------------------------------------------------------- BM25


def test_bm25_matches_the_formula_with_binary_term_frequency() -> None:
    scores = lexical({"kestrel": postings(2, 4, 9)}, {4: 10, 9: 30}, items=100, mean=20.0)
    idf = math.log(1 + (100 - 2 + 0.5) / (2 + 0.5))
    for seq, length in ((4, 10), (9, 30)):
        norm = 1 - BM25_B + BM25_B * length / 20.0
        assert scores[seq] == pytest.approx(idf * (BM25_K1 + 1) / (1 + BM25_K1 * norm))


def test_a_rare_term_outweighs_a_common_one() -> None:
    lengths = dict.fromkeys(range(1, 71), 20)
    terms = {"deploy": postings(60, *range(1, 61)), "kestrel": postings(1, 70)}
    scores = lexical(terms, lengths, items=100, mean=20.0)
    assert scores[70] > 3 * scores[1]


def test_items_holding_more_query_terms_score_more() -> None:
    terms = {"alpha": postings(2, 1, 2), "beta": postings(2, 1, 3)}
    scores = lexical(terms, dict.fromkeys((1, 2, 3), 20), items=50, mean=20.0)
    assert scores[1] > scores[2] == pytest.approx(scores[3])


def test_shorter_items_score_more_for_the_same_terms() -> None:
    scores = lexical({"alpha": postings(2, 1, 2)}, {1: 10, 2: 200}, items=50, mean=40.0)
    assert scores[1] > scores[2]


def test_the_idf_counts_items_the_listing_left_out() -> None:
    # A term in 80 of 100 items, of which only two are listed: their weight is low.
    assert matched_idf({"the": postings(80, 1, 2)}, 100)[1] < (
        matched_idf({"kestrel": postings(2, 1, 2)}, 100)[1] / 4
    )


def test_a_list_cut_short_adds_weight_but_brings_no_items() -> None:
    # "deploy" lists 3 of its 50 items: an arbitrary sample. It adds to item 2, which the
    # complete list of "kestrel" found, and brings neither 1 nor 3.
    weights = matched_idf({"deploy": postings(50, 1, 2, 3), "kestrel": postings(2, 2, 9)}, 100)
    assert set(weights) == {2, 9} and weights[2] > weights[9]
    # Without a complete list, the sample is all there is.
    assert set(matched_idf({"deploy": postings(50, 1, 2, 3)}, 100)) == {1, 2, 3}


def test_terms_without_items_are_ignored() -> None:
    assert matched_idf({"absent": postings(0)}, 10) == {}
    assert matched_idf({}, 10) == {}


def _matched_idf_by_loop(
    terms: dict[str, TermPostings], items: int, boost: dict[str, float]
) -> dict[int, float]:
    """matched_idf's rule written as the plain loop it replaces."""
    weight: dict[int, float] = {}
    complete = [(t, p) for t, p in terms.items() if 0 < p.count == len(p.rows)]
    cut = [(t, p) for t, p in terms.items() if p.count > len(p.rows)]
    for t, p in complete + cut:
        idf = math.log(1.0 + (items - p.count + 0.5) / (p.count + 0.5)) * boost.get(t, 1.0)
        for row in p.rows:
            if p.count == len(p.rows) or not complete or row in weight:
                weight[row] = weight.get(row, 0.0) + idf
    return weight


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([f"t{n}" for n in range(12)]),
        st.tuples(st.lists(st.integers(1, 60), unique=True, max_size=20), st.integers(0, 40)),
        max_size=8,
    ),
    st.floats(0.5, 2.0),
)
def test_matched_idf_is_the_loop_to_the_bit_and_in_its_order(
    raw: dict[str, tuple[list[int], int]], factor: float
) -> None:
    terms = {t: TermPostings(len(rows) + extra, tuple(rows)) for t, (rows, extra) in raw.items()}
    boost = {t: factor for t in list(terms)[::2]}
    expected = _matched_idf_by_loop(terms, 500, boost)
    got = matched_idf(terms, 500, boost)
    assert list(got.items()) == list(expected.items())


# ---------------------------------------------------------------- peakedness


def test_a_single_outlier_is_peaked_and_a_flat_list_is_not() -> None:
    assert peakedness([0.9] + [0.1] * 20, 100) > 4
    assert peakedness([0.5] * 20, 20) == 0.0
    assert peakedness([], 100) == 0.0
    assert peakedness([0.7], 1) == 0.0  # one item: nothing to stand out from


def test_unscored_items_count_as_zero() -> None:
    # Three items with equal scores among many that scored nothing do stand out.
    assert peakedness([1.0, 1.0, 1.0], 100) > 2


# ---------------------------------------------------------------- dense mode


def test_dense_mode_applies_threshold_and_orders_by_similarity() -> None:
    dense = {1: 0.31, 2: 0.9, 3: 0.29, 4: 0.6, 5: 0.3}
    lexical = {3: 1.0, 6: 1.0}  # plays no part in dense mode
    out = fuse(dense, lexical, population=10, threshold=0.3, mode="dense")
    assert order(out) == [2, 4, 1, 5]
    assert [r.score for r in out] == [0.9, 0.6, 0.31, 0.3]
    assert all(r.similarity == r.score for r in out)


def test_dense_mode_breaks_ties_by_seq() -> None:
    out = fuse({9: 0.5, 2: 0.5, 5: 0.5}, {}, population=3, threshold=0.0, mode="dense")
    assert order(out) == [2, 5, 9]


def test_keep_exempts_from_the_threshold() -> None:
    out = fuse({1: 0.1, 2: 0.8}, {}, population=2, threshold=0.3, mode="dense", keep={1, 99})
    assert order(out) == [2, 1]  # kept, still ranked by its similarity
    assert 99 not in order(out)  # keep does not invent candidates


# ---------------------------------------------------------------- lexical mode


def test_lexical_mode_orders_by_bm25_and_reports_similarity() -> None:
    out = fuse({1: 0.8, 2: 0.1, 4: 0.9}, {1: 2.0, 2: 9.0, 3: 5.0}, population=10, mode="lexical")
    assert order(out) == [2, 3, 1]  # 4 has no lexical evidence
    assert out[2].similarity == 0.8
    assert out[0].lexical == 1.0 and out[1].lexical == pytest.approx(5 / 9)


# ---------------------------------------------------------------- hybrid mode


def test_hybrid_keeps_every_candidate_without_a_threshold() -> None:
    out = fuse({1: 0.8, 2: 0.2}, {7: 6.0}, population=3)
    assert set(order(out)) == {1, 2, 7}
    seven = next(r for r in out if r.seq == 7)
    assert seven.similarity == 0.0 and seven.lexical == 1.0


def test_a_threshold_drops_dense_only_candidates_below_it() -> None:
    out = fuse({1: 0.8, 2: 0.2, 3: 0.1}, {3: 1.0}, population=3, threshold=0.3)
    assert set(order(out)) == {1, 3}  # 3 is under it but has lexical evidence


def test_hybrid_scores_lie_between_zero_and_one() -> None:
    dense = {s: 0.2 + 0.01 * s for s in range(1, 30)}
    out = fuse(dense, {3: 4.0, 5: 1.0}, population=40)
    assert all(0.0 <= r.score <= 1.0 + 1e-12 for r in out)
    assert out[0].score > 0


def test_similarity_counts_from_the_floor_rank_up() -> None:
    # Items at or below the DENSE_FLOOR_RANK-th similarity add nothing from dense search.
    n = DENSE_FLOOR_RANK + 20
    dense = {s: 1.0 - s / n for s in range(1, n + 1)}
    out = {r.seq: r for r in fuse(dense, {}, population=n)}
    assert out[1].score > 0
    assert out[DENSE_FLOOR_RANK].score == 0.0 and out[n].score == 0.0


def test_strong_lexical_outlier_outranks_flat_dense_scores() -> None:
    # Dense search sees forty nearly equal candidates; one of them holds a name that occurs
    # nowhere else, while the other query word is common.
    dense = {s: 0.50 + 0.002 * s for s in range(1, 41)}
    terms = {"deploy": postings(40, *range(1, 41)), "zanzibar": postings(1, 3)}
    scores = lexical(terms, dict.fromkeys(range(1, 41), 20), items=200, mean=20.0)
    assert order(fuse(dense, scores, population=200))[0] == 3


def test_strong_dense_outlier_outranks_flat_lexical_scores() -> None:
    # A paraphrase: the query's words are common (every candidate holds them), dense search
    # singles one item out.
    dense = {s: 0.2 + 0.001 * s for s in range(1, 41)}
    dense[6] = 0.85
    both = postings(40, *range(1, 41))
    scores = lexical(
        {"config": both, "file": both}, dict.fromkeys(range(1, 41), 20), items=40, mean=20.0
    )
    assert order(fuse(dense, scores, population=40))[0] == 6


def test_weights_follow_the_more_peaked_signal() -> None:
    # Lexical singles out 7, dense is nearly flat but prefers 8: lexical decides.
    dense = {s: 0.40 + 0.001 * s for s in range(1, 60)}
    dense[8] = 0.45
    lexical = {7: 10.0, 8: 1.0, 9: 1.0}
    assert order(fuse(dense, lexical, population=100))[0] == 7


# ---------------------------------------------------------------- the turns around a hit


def test_a_turn_beside_a_strong_hit_outranks_an_isolated_one_of_equal_score() -> None:
    ranked = [Ranked(10, 0.9, 0.0, 0.0), Ranked(11, 0.3, 0.0, 0.0), Ranked(40, 0.3, 0.0, 0.0)]
    out = {r.seq: r.score for r in with_context(ranked)}
    assert out[11] == pytest.approx(0.3 + CONTEXT_SHARE * 0.9)
    assert out[40] == 0.3  # nothing around it
    assert out[10] == pytest.approx(0.9 + CONTEXT_SHARE * 0.3)
    assert order(with_context(ranked)) == [10, 11, 40]


def test_only_turns_within_reach_count_and_the_best_of_them() -> None:
    far = 20 + CONTEXT_REACH + 1
    ranked = [
        Ranked(20, 0.1, 0.0, 0.0),
        Ranked(20 - CONTEXT_REACH, 0.5, 0.0, 0.0),
        Ranked(21, 0.2, 0.0, 0.0),
        Ranked(far, 1.0, 0.0, 0.0),
    ]
    out = {r.seq: r.score for r in with_context(ranked)}
    assert out[20] == pytest.approx(0.1 + CONTEXT_SHARE * 0.5)


def test_context_keeps_the_signals_and_ties_go_to_the_older_turn() -> None:
    ranked = [Ranked(5, 0.4, 0.7, 0.2), Ranked(9, 0.4, 0.1, 0.9, measured=False)]
    out = with_context(ranked)
    assert out == ranked  # too far apart to lift each other
    assert (out[1].similarity, out[1].lexical, out[1].measured) == (0.1, 0.9, False)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.integers(1, 60), st.floats(-1, 1), max_size=40),
    st.sampled_from([1, 3, 1000]),
)
def test_context_is_the_same_laid_out_by_seq_or_looked_up(
    scores: dict[int, float], spread: int
) -> None:
    # Seqs packed together or far apart: both ways of finding a neighbour agree.
    ranked = [Ranked(seq * spread, score, 0.0, 0.0) for seq, score in scores.items()]
    laid_out = with_context(ranked)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ranking, "CONTEXT_SPAN", 0)  # always look neighbours up
        looked_up = with_context(ranked)
    assert [(r.seq, r.score) for r in laid_out] == [(r.seq, r.score) for r in looked_up]


def test_neighbours_below_zero_lift_nothing() -> None:
    ranked = [Ranked(seq, -0.1 * seq, 0.0, 0.0) for seq in range(1, 6)]
    assert [r.score for r in with_context(ranked)] == [r.score for r in ranked]


def test_postings_hold_their_rows_as_an_array_too() -> None:
    p = postings(5, 7, 3, 11)
    assert p.array.tolist() == [7, 3, 11] and p.array.dtype == "int64"
    assert p == TermPostings(5, (7, 3, 11))  # the array takes no part in equality
    assert TermPostings(0, ()).array.shape == (0,)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.integers(1, 40), st.floats(-1, 1), max_size=15),
    st.dictionaries(st.integers(1, 40), st.floats(0, 30), max_size=15),
    st.one_of(st.none(), st.floats(-1, 1)),
    st.sampled_from(["hybrid", "dense", "lexical"]),
    st.frozensets(st.integers(1, 45), max_size=5),
)
def test_fuse_properties(
    dense: dict[int, float],
    lexical: dict[int, float],
    threshold: float | None,
    mode: str,
    keep: frozenset[int],
) -> None:
    out = fuse(dense, lexical, population=45, threshold=threshold, mode=mode, keep=keep)
    seqs = order(out)
    assert len(seqs) == len(set(seqs))
    keys = [(-r.score, r.seq) for r in out]
    assert keys == sorted(keys)  # best first, seq on ties
    candidates = dense.keys() | lexical.keys()
    kept = keep & candidates
    floor = -math.inf if threshold is None else threshold
    above = {s for s in candidates if dense.get(s, 0.0) >= floor}
    found = {s for s, v in lexical.items() if v > 0}
    if mode == "dense":
        assert set(seqs) == above | kept
    elif mode == "lexical":
        assert set(seqs) == found | kept
    else:
        assert set(seqs) == above | found | kept
        assert all(-1e-12 <= r.score <= 1.0 + 1e-9 for r in out)
    top = max(lexical.values(), default=0.0) or 1.0
    for r in out:
        assert r.similarity == dense.get(r.seq, 0.0)
        assert r.lexical == pytest.approx(lexical.get(r.seq, 0.0) / top)


# ---------------------------------------------------------------- several conversations


def test_fuse_across_ranks_every_conversation_on_one_scale() -> None:
    # Conversation 1 holds the strong hits; conversation 2's best is weak beside them.
    dense = {(1, 1): 0.9, (1, 2): 0.5, (2, 1): 0.4, (2, 2): 0.1}
    lexical = {(1, 1): 6.0, (2, 1): 1.0}
    per = fuse_across(dense, lexical, population=200, mode="hybrid", thresholds={})
    ids = sorted(dense)
    together = fuse(
        {ids.index(i): v for i, v in dense.items()},
        {ids.index(i): v for i, v in lexical.items()},
        population=200,
    )
    # The same scores as one fusion of all candidates, split by conversation.
    expected = {ids[r.seq]: r.score for r in together}
    assert {(k, r.seq): r.score for k, rs in per.items() for r in rs} == expected
    assert per[2][0].score < per[1][0].score


def test_fuse_across_applies_each_conversations_floor() -> None:
    dense = {(1, 1): 0.5, (2, 1): 0.5}
    per = fuse_across(dense, {}, population=10, mode="dense", thresholds={1: 0.6, 2: 0.4})
    assert list(per) == [2]
