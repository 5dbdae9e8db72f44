"""Hybrid ranking: BM25 and dense similarity, each normalised per query and fused with
weights that follow how clearly each signal singles out its best items."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from contextwm.ports.lexical_store import TermPostings

# Okapi BM25's usual constants.
BM25_K1 = 1.2
BM25_B = 0.75
# Dense similarity counts from the similarity of the item at this rank up: a conversation's
# items all share some similarity with any query (same people, same style), so raw cosine
# says little until the bulk of the conversation is taken off.
DENSE_FLOOR_RANK = 100
# How many of a signal's best scores its peakedness is read from.
PEAK_DEPTH = 50
# Conversations are locally coherent: the turns around a strong hit are often about the same
# thing though they share no word with the query (the reply that names no topic, the detail
# said next). A candidate gains CONTEXT_SHARE of the best fused score among the candidates
# within CONTEXT_REACH turns of it. Chosen on two kinds of real conversation (docs/design.md).
CONTEXT_SHARE = 0.2
CONTEXT_REACH = 2
# Seqs per candidate up to which the neighbour lookup lays scores out by seq (an array that
# long), rather than searching for each neighbour.
CONTEXT_SPAN = 64


class Ranked(NamedTuple):
    """A candidate's fused score and the signals it came from (a tuple: a query makes a
    thousand or more, twice with feedback, and a tuple is the fastest to make)."""

    seq: int
    score: float
    similarity: float  # cosine similarity to the query (0 when not measured)
    lexical: float  # BM25 over the query's best BM25, 0..1
    measured: bool = True  # whether similarity was measured


def matched_idf(
    postings: Mapping[str, TermPostings],
    items: int,
    boost: Mapping[str, float] | None = None,
) -> dict[int, float]:
    """For the rows listed in postings, the summed IDF of the query terms each contains.

    Args:
        postings: for each query term, the items that contain it (TermPostings.count is the
            term's document frequency in the conversation).
        items: how many items the conversation holds.
        boost: a factor on each term's IDF (1 for a term left out).
    """
    # A list cut short (a common term) is an arbitrary sample of the items holding the term:
    # it adds its weight to items the complete lists found, but brings none of its own
    # unless no list is complete.
    complete = [(t, p) for t, p in postings.items() if 0 < p.count == len(p.rows)]
    cut = [(t, p) for t, p in postings.items() if p.count > len(p.rows)]
    lists = complete + cut
    if not lists:
        return {}
    # Arrays, not a loop: the feedback round weighs up to a couple of thousand rows.
    rows = np.concatenate([p.array for _, p in lists])
    idf = np.repeat([_idf(t, p, items, boost) for t, p in lists], [len(p.rows) for _, p in lists])
    if complete:
        found = sum(len(p.rows) for _, p in complete)
        joins = np.ones(len(rows), dtype=bool)
        joins[found:] = np.isin(rows[found:], rows[:found])
        rows, idf = rows[joins], idf[joins]
    # Each row's weight summed in list order, rows in the order they were first found.
    unique, first, at = np.unique(rows, return_index=True, return_inverse=True)
    summed = np.bincount(at, weights=idf, minlength=len(unique))
    order = np.argsort(first, kind="stable")
    return dict(zip(unique[order].tolist(), summed[order].tolist(), strict=True))


def idf(count: int, items: int) -> float:
    """BM25's inverse document frequency of a term that count of a conversation's items hold."""
    return math.log(1.0 + (items - count + 0.5) / (count + 0.5))


def _idf(term: str, p: TermPostings, items: int, boost: Mapping[str, float] | None) -> float:
    weight = idf(p.count, items)
    return weight * boost.get(term, 1.0) if boost is not None else weight


def bm25(
    weights: Mapping[int, float], items: Mapping[int, tuple[int, int]], mean_tokens: float
) -> dict[int, float]:
    """BM25 of items by seq.

    Args:
        weights: row id -> summed IDF of the query terms the item contains (matched_idf).
        items: row id -> (seq, length in tokens) of the items to score.
        mean_tokens: the mean length of the conversation's items.

    A term counts once per item however often it repeats: in conversations a long turn that
    repeats a word is rarely more relevant than a short one that says it once, and the
    saturating term frequency of classic BM25 still favoured such turns on real dialogue.
    Items are compared on the same length normalisation as classic BM25 (b = 0.75).
    """
    mean = max(mean_tokens, 1.0)
    return {
        seq: weights[row] * (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B + BM25_B * tokens / mean))
        for row, (seq, tokens) in items.items()
    }


def peakedness(scores: Sequence[float] | npt.NDArray[np.float64], population: int) -> float:
    """How far a signal's best score stands above the rest of its PEAK_DEPTH best, in
    standard deviations of those.

    Args:
        scores: the signal's scores of the items it found.
        population: how many items were scored in all; those not in scores scored 0.
    """
    depth = min(PEAK_DEPTH, population)
    if depth < 2:
        return 0.0
    values = np.asarray(scores, dtype=np.float64)
    if len(values) > depth:
        values = _best(values, depth)
    zeros = depth - len(values)  # the items not scored, at 0
    best = float(values.max()) if len(values) else 0.0
    if zeros:
        best = max(best, 0.0)
    mean = float(values.sum()) / depth
    spread = float(np.square(values - mean).sum()) + zeros * mean * mean
    std = math.sqrt(spread / depth)
    return (best - mean) / std if std > 0 else 0.0


def _best(values: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.float64]:
    """The k largest values, in no order."""
    return values[(-values).argpartition(k - 1)[:k]]


def _dense_normaliser(sims: npt.NDArray[np.float64]) -> tuple[float, float]:
    """(floor, span) mapping similarities onto 0..1: the best is 1, the DENSE_FLOOR_RANK-th 0."""
    if not len(sims):
        return 0.0, 1.0
    best = float(sims.max())
    floor = (
        float(_best(sims, DENSE_FLOOR_RANK).min())
        if len(sims) > DENSE_FLOOR_RANK
        else float(sims.min())
    )
    return floor, (best - floor) or 1.0


def fuse(
    dense: Mapping[int, float],
    lexical: Mapping[int, float],
    *,
    population: int,
    mode: str = "hybrid",
    threshold: float | None = None,
    keep: AbstractSet[int] = frozenset(),
    in_context: bool = False,
    limit: int | None = None,
) -> list[Ranked]:
    """Ranks candidates, best first.

    Args:
        dense: seq -> cosine similarity to the query.
        lexical: seq -> BM25 score (see bm25).
        population: how many items the candidates were drawn from.
        mode: "hybrid"; "dense" (similarity alone: candidates above the threshold, best
            first) or "lexical" (BM25 alone).
        threshold: minimum similarity of a candidate without lexical evidence (in dense mode
            of every candidate); None keeps them all.
        keep: candidates exempt from the threshold (items inside a time range the query names).
        in_context: rescore the candidates with the turns around them (see with_context).
        limit: how many of the best to return; all when None.

    In hybrid mode both signals are mapped onto 0..1 per query (BM25 over its best score,
    similarity between the DENSE_FLOOR_RANK-th and the best), then weighted by their
    peakedness: a query whose best BM25 hits stand far above the rest (a name, a number)
    leans on BM25, a paraphrase whose words are everywhere leans on similarity.
    """
    # Arrays, not a loop: a query has a thousand candidates or more, twice with feedback.
    d_seqs, d_sims = _arrays(dense)
    l_seqs, l_raw = _arrays(lexical)
    top_lexical = (float(l_raw.max()) if len(l_raw) else 0.0) or 1.0
    floor, span = _dense_normaliser(d_sims)
    w_lex = w_dense = 0.5
    if mode == "hybrid":
        p_lex = peakedness(l_raw, population)
        p_dense = peakedness(d_sims - floor, population)
        if p_lex + p_dense > 0:
            w_lex, w_dense = p_lex / (p_lex + p_dense), p_dense / (p_lex + p_dense)
    seqs = np.union1d(d_seqs, l_seqs)
    n = len(seqs)
    at = np.searchsorted(seqs, d_seqs)
    measured = np.zeros(n, dtype=bool)
    measured[at] = True
    sim = np.zeros(n, dtype=np.float64)
    sim[at] = d_sims
    raw = np.zeros(n, dtype=np.float64)
    raw[np.searchsorted(seqs, l_seqs)] = l_raw
    lex = raw / top_lexical
    if mode == "dense":
        score = sim
    elif mode == "lexical":
        score = lex
    else:
        near = np.where(measured, np.maximum(0.0, (sim - floor) / span), 0.0)
        score = w_lex * lex + w_dense * near
    ok: npt.NDArray[np.bool_] | None = None  # None: all pass
    if mode == "lexical":
        ok = raw > 0.0
    elif threshold is not None:
        ok = sim >= threshold if mode == "dense" else (raw > 0.0) | (sim >= threshold)
    if ok is not None:
        if keep:  # as admitted() decides one candidate
            ok |= np.isin(seqs, np.fromiter(keep, dtype=np.int64, count=len(keep)))
        seqs, score, sim, lex, measured = seqs[ok], score[ok], sim[ok], lex[ok], measured[ok]
    if in_context:
        score = _in_context(seqs, score)
    return _ranked(seqs, score, sim, lex, measured, limit)


def _arrays(scores: Mapping[int, float]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """A seq -> score mapping as arrays of seqs and of scores."""
    n = len(scores)
    return (
        np.fromiter(scores.keys(), dtype=np.int64, count=n),
        np.fromiter(scores.values(), dtype=np.float64, count=n),
    )


def _ranked(
    seqs: npt.NDArray[np.int64],
    score: npt.NDArray[np.float64],
    sim: npt.NDArray[np.float64],
    lex: npt.NDArray[np.float64],
    measured: npt.NDArray[np.bool_],
    limit: int | None,
) -> list[Ranked]:
    """The best `limit` candidates (all when None), by score then seq."""
    order = np.lexsort((seqs, -score))[:limit]
    rows = zip(
        seqs[order].tolist(),
        score[order].tolist(),
        sim[order].tolist(),
        lex[order].tolist(),
        measured[order].tolist(),
        strict=True,
    )
    return list(map(Ranked._make, rows))


def _in_context(
    seqs: npt.NDArray[np.int64], score: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """score plus CONTEXT_SHARE of the best score among the candidates within CONTEXT_REACH
    seqs of each (0 when there is none). seqs are distinct."""
    if not len(seqs):
        return score
    low = int(seqs.min()) - CONTEXT_REACH
    span = int(seqs.max()) - low + CONTEXT_REACH + 1
    if span <= CONTEXT_SPAN * len(seqs):
        # Scores laid out by seq, 0 where there is no candidate: a neighbour is one step away.
        by_seq = np.zeros(span, dtype=np.float64)
        at = seqs - low
        by_seq[at] = score
        steps = [by_seq[at + step] for step in range(-CONTEXT_REACH, CONTEXT_REACH + 1) if step]
        best = np.maximum(np.maximum.reduce(steps), 0.0)
    else:  # seqs far apart (a long conversation's few candidates): look each neighbour up
        order = np.argsort(seqs, kind="stable")
        sorted_seqs, sorted_score = seqs[order], score[order]
        best = np.zeros_like(score)
        for step in range(-CONTEXT_REACH, CONTEXT_REACH + 1):
            if step == 0:
                continue
            at = np.minimum(np.searchsorted(sorted_seqs, seqs + step), len(sorted_seqs) - 1)
            found = np.where(sorted_seqs[at] == seqs + step, sorted_score[at], 0.0)
            best = np.maximum(best, found)
    lifted: npt.NDArray[np.float64] = score + CONTEXT_SHARE * best
    return lifted


def admitted(
    similarity: float, found: bool, *, mode: str, threshold: float | None, exempt: bool
) -> bool:
    """Whether a candidate passes its mode's filter (see fuse): in dense mode the similarity
    threshold, in hybrid mode the threshold unless words found it, in lexical mode the words.

    Args:
        similarity: its cosine similarity to the query.
        found: whether BM25 found it.
        exempt: whether it lies inside a time range the query names.
    """
    if exempt:
        return True
    if mode == "lexical":
        return found
    if threshold is None:
        return True
    return similarity >= threshold if mode == "dense" else found or similarity >= threshold


def with_context(ranked: Sequence[Ranked]) -> list[Ranked]:
    """The candidates rescored with the turns around them, best first: each gains
    CONTEXT_SHARE of the best score (before this) among the candidates within CONTEXT_REACH
    seqs of it."""
    seqs = np.array([r.seq for r in ranked], dtype=np.int64)
    score = np.array([r.score for r in ranked], dtype=np.float64)
    sim = np.array([r.similarity for r in ranked], dtype=np.float64)
    lex = np.array([r.lexical for r in ranked], dtype=np.float64)
    measured = np.array([r.measured for r in ranked], dtype=bool)
    return _ranked(seqs, _in_context(seqs, score), sim, lex, measured, None)


def fuse_across(
    dense: Mapping[tuple[int, int], float],
    lexical: Mapping[tuple[int, int], float],
    *,
    population: int,
    mode: str,
    thresholds: Mapping[int, float | None],
    keep: AbstractSet[tuple[int, int]] = frozenset(),
) -> dict[int, list[Ranked]]:
    """Candidates of several conversations, by (conversation key, seq), ranked on one scale:
    similarity and BM25 are mapped onto 0..1 by the best of every conversation, so that one
    conversation's best hit counts for no more than it is worth beside the others'. Returns
    each conversation's candidates best first (before with_context, which rescores them
    within their own conversation).

    Args:
        dense, lexical, population, mode: as fuse takes them.
        thresholds: each conversation's similarity floor (see admitted); a key left out has
            none.
        keep: candidates exempt from the floor.
    """
    items: list[tuple[int, int]] = []  # fusion's id -> (conversation key, seq)
    d: dict[int, float] = {}
    lx: dict[int, float] = {}
    exempt: set[int] = set()
    for item in sorted(dense.keys() | lexical.keys()):
        sim, found_by_words = dense.get(item, 0.0), lexical.get(item, 0.0) > 0.0
        threshold = thresholds.get(item[0])
        if not admitted(sim, found_by_words, mode=mode, threshold=threshold, exempt=item in keep):
            continue
        n = len(items)
        items.append(item)
        if item in dense:
            d[n] = dense[item]
        if item in lexical:
            lx[n] = lexical[item]
        if item in keep:
            exempt.add(n)
    per: dict[int, list[Ranked]] = {}
    for r in fuse(d, lx, population=population, mode=mode, keep=exempt):
        key, seq = items[r.seq]
        per.setdefault(key, []).append(r._replace(seq=seq))
    return per
