"""Tests for contextwm.core.ranking: rare-word evidence and fuse() in its three modes."""

from __future__ import annotations

import pytest
from contextwm.core.ranking import AGREEMENT, Ranked, fuse, rare_word_evidence
from hypothesis import given, settings
from hypothesis import strategies as st


def order(ranked: list[Ranked]) -> list[int]:
    return [r.seq for r in ranked]


# ---------------------------------------------------------------- rare-word evidence


def test_unique_term_held_by_one_item_is_full_evidence() -> None:
    assert rare_word_evidence({"zanzibar": [7]}) == {7: pytest.approx(1.0)}


def test_item_holding_every_rare_term_scores_one() -> None:
    ev = rare_word_evidence({"kestrel": [4], "2024": [4]})
    assert ev[4] == pytest.approx(1.0)


def test_common_term_carries_little_evidence() -> None:
    common = list(range(1, 21))  # in 20 items
    ev = rare_word_evidence({"deploy": common})
    assert all(v == pytest.approx(1 / 20) for v in ev.values())
    ev = rare_word_evidence({"deploy": common, "zanzibar": [33]})
    assert ev[33] > 0.9
    assert max(v for s, v in ev.items() if s != 33) < 0.01


def test_two_common_words_do_not_add_up_to_one_rare_one() -> None:
    # BM25's log IDF lets two common words outscore one rare word; specificity does not.
    ev = rare_word_evidence({"alpha": [1, 2, 3, 4, 5], "beta": [1, 6, 7, 8, 9], "gamma": [10]})
    assert ev[10] > ev[1]


def test_terms_without_postings_are_ignored() -> None:
    assert rare_word_evidence({"absent": []}) == {}
    assert rare_word_evidence({}) == {}
    assert rare_word_evidence({"absent": [], "here": [3]}) == {3: pytest.approx(1.0)}


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=5),
        st.lists(st.integers(1, 30), unique=True, max_size=12),
        max_size=8,
    )
)
def test_evidence_properties(postings: dict[str, list[int]]) -> None:
    ev = rare_word_evidence(postings)
    holders = {s for seqs in postings.values() for s in seqs}
    assert set(ev) == holders
    assert all(0.0 < v <= 1.0 + 1e-12 for v in ev.values())
    # More terms held never means less evidence.
    for a in holders:
        for b in holders:
            terms_a = {t for t, seqs in postings.items() if a in seqs}
            terms_b = {t for t, seqs in postings.items() if b in seqs}
            if terms_a <= terms_b:
                assert ev[a] <= ev[b] + 1e-12


# ---------------------------------------------------------------- dense mode


def test_dense_mode_applies_threshold_and_orders_by_similarity() -> None:
    dense = {1: 0.31, 2: 0.9, 3: 0.29, 4: 0.6, 5: 0.3}
    lexical = {3: 1.0, 6: 1.0}  # plays no part in dense mode
    out = fuse(dense, lexical, threshold=0.3, mode="dense")
    assert order(out) == [2, 4, 1, 5]
    assert [r.score for r in out] == [0.9, 0.6, 0.31, 0.3]
    assert all(r.similarity == r.score for r in out)


def test_dense_mode_breaks_ties_by_seq() -> None:
    assert order(fuse({9: 0.5, 2: 0.5, 5: 0.5}, {}, threshold=0.0, mode="dense")) == [2, 5, 9]


def test_keep_exempts_from_the_threshold() -> None:
    out = fuse({1: 0.1, 2: 0.8}, {}, threshold=0.3, mode="dense", keep={1, 99})
    assert order(out) == [2, 1]  # kept, still ranked by its similarity
    assert 99 not in order(out)  # keep does not invent candidates


# ---------------------------------------------------------------- lexical mode


def test_lexical_mode_orders_by_evidence_and_reports_similarity() -> None:
    out = fuse({1: 0.8, 2: 0.1, 4: 0.9}, {1: 0.2, 2: 0.9, 3: 0.5}, threshold=0.5, mode="lexical")
    assert order(out) == [2, 3, 1]  # 4 has no lexical evidence
    assert out[2].similarity == 0.8 and out[0].lexical == 0.9


# ---------------------------------------------------------------- hybrid mode


def test_lexical_only_candidate_survives_in_hybrid() -> None:
    out = fuse({1: 0.8, 2: 0.2}, {7: 0.6}, threshold=0.3, mode="hybrid")
    assert set(order(out)) == {1, 7}  # 2 is dense-only and under the threshold
    seven = next(r for r in out if r.seq == 7)
    assert seven.similarity == 0.0 and seven.lexical == 0.6


def test_dense_candidate_below_threshold_survives_with_lexical_evidence() -> None:
    out = fuse({1: 0.1, 2: 0.9}, {1: 0.05}, threshold=0.3)
    assert set(order(out)) == {1, 2}


def test_agreement_beats_a_single_signal() -> None:
    # Equal best signal; the item both searches found wins.
    out = fuse({1: 0.6, 2: 0.6}, {2: 0.4}, threshold=0.3)
    assert order(out) == [2, 1]
    assert out[0].score == pytest.approx(0.6 + AGREEMENT * 0.4)


def test_negative_similarity_does_not_reduce_the_score() -> None:
    out = fuse({1: -0.4}, {1: 0.7}, threshold=0.3)
    assert out[0].score == pytest.approx(0.7)


def test_strong_lexical_outlier_outranks_flat_dense_scores() -> None:
    # Dense search sees eight nearly equal candidates; one of them holds a name that occurs
    # nowhere else, while the other query word is common.
    dense = {s: 0.50 + 0.002 * s for s in range(1, 9)}
    postings = {"deploy": list(range(1, 9)), "zanzibar": [3]}
    out = fuse(dense, rare_word_evidence(postings), threshold=0.3)
    assert order(out)[0] == 3


def test_strong_dense_outlier_outranks_flat_lexical_scores() -> None:
    # A paraphrase: the query's words are common (every candidate holds them), dense search
    # singles one item out.
    dense = {s: 0.2 for s in range(1, 9)}
    dense[6] = 0.85
    postings = {"config": list(range(1, 9)), "file": list(range(1, 9))}
    out = fuse(dense, rare_word_evidence(postings), threshold=0.1)
    assert order(out)[0] == 6


def test_tiny_dense_difference_does_not_beat_a_unique_name() -> None:
    dense = {1: 0.51, 2: 0.50, 3: 0.50, 4: 0.50}
    out = fuse(dense, rare_word_evidence({"kestrel": [2]}), threshold=0.3)
    assert order(out)[0] == 2


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.integers(1, 40), st.floats(-1, 1), max_size=15),
    st.dictionaries(st.integers(1, 40), st.floats(0, 1), max_size=15),
    st.floats(-1, 1),
    st.sampled_from(["hybrid", "dense", "lexical"]),
    st.frozensets(st.integers(1, 45), max_size=5),
)
def test_fuse_properties(
    dense: dict[int, float],
    lexical: dict[int, float],
    threshold: float,
    mode: str,
    keep: frozenset[int],
) -> None:
    out = fuse(dense, lexical, threshold=threshold, mode=mode, keep=keep)
    seqs = order(out)
    assert len(seqs) == len(set(seqs))
    keys = [(-r.score, r.seq) for r in out]
    assert keys == sorted(keys)  # best first, seq on ties
    candidates = dense.keys() | lexical.keys()
    kept = keep & candidates
    # A candidate only one search found has similarity 0 (unknown) for the threshold.
    above = {s for s in candidates if dense.get(s, 0.0) >= threshold}
    found = {s for s, v in lexical.items() if v > 0}
    if mode == "dense":
        assert set(seqs) == above | kept
    elif mode == "lexical":
        assert set(seqs) == found | kept
    else:
        assert set(seqs) == above | found | kept
        for r in out:
            assert r.score >= max(r.similarity, r.lexical)
            assert r.score <= max(r.similarity, r.lexical) * (1 + AGREEMENT) + 1e-12
    for r in out:
        assert r.similarity == dense.get(r.seq, 0.0) and r.lexical == lexical.get(r.seq, 0.0)
