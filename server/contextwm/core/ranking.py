"""Hybrid ranking: dense similarity and rare-word evidence, fused per candidate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

# What agreement adds: an item that both signals find beats one that only one finds.
AGREEMENT = 0.5


@dataclass(frozen=True, slots=True)
class Ranked:
    """A candidate's fused score and the signals it came from."""

    seq: int
    score: float
    similarity: float
    lexical: float


def rare_word_evidence(postings: Mapping[str, Sequence[int]]) -> dict[int, float]:
    """How much of the query's rare-word evidence each item holds, in 0..1.

    Args:
        postings: for each query term, the items that contain it (complete lists; a term too
            common to list in full should be left out, its evidence is negligible).

    A term found in df items has specificity 1/df, so a name or number that occurs once
    counts fully and a word that occurs in twenty items hardly at all. An item scores the sum
    of squared specificities of the terms it contains over the sum of specificities of all
    query terms the conversation contains: 1 when it holds every rare term, near 0 when it
    shares only common words. This is what adapts the weight of lexical evidence per query:
    a query naming a unique identifier is decided by it, a paraphrase is left to dense search.
    BM25's logarithmic IDF cannot do that, since it scores two common words like one rare one.
    """
    specificity = {t: 1.0 / len(seqs) for t, seqs in postings.items() if seqs}
    total = sum(specificity.values())
    evidence: dict[int, float] = {}
    for term, seqs in postings.items():
        if term not in specificity:
            continue
        gain = specificity[term] ** 2 / total
        for seq in seqs:
            evidence[seq] = evidence.get(seq, 0.0) + gain
    return evidence


def fuse(
    dense: Mapping[int, float],
    lexical: Mapping[int, float],
    *,
    threshold: float,
    mode: str = "hybrid",
    keep: AbstractSet[int] = frozenset(),
) -> list[Ranked]:
    """Ranks candidates, best first.

    Args:
        dense: seq -> cosine similarity to the query.
        lexical: seq -> rare-word evidence in 0..1 (see rare_word_evidence).
        threshold: minimum similarity of a candidate without lexical evidence.
        keep: candidates exempt from the threshold (items inside a time range the query names).
        mode: "hybrid", "dense" (the seed's method: similarity above the threshold) or
            "lexical".

    In hybrid mode an item scores its stronger signal plus AGREEMENT times the weaker: both
    signals live on 0..1, so neither needs a per-dataset weight, and an item is as relevant
    as its best evidence.
    """
    out: list[Ranked] = []
    for seq in dense.keys() | lexical.keys():
        sim = dense.get(seq, 0.0)
        lex = lexical.get(seq, 0.0)
        if mode == "dense":
            if sim < threshold and seq not in keep:
                continue
            score = sim
        elif mode == "lexical":
            if lex <= 0.0 and seq not in keep:
                continue
            score = lex
        else:
            if lex <= 0.0 and sim < threshold and seq not in keep:
                continue
            score = max(sim, lex) + AGREEMENT * min(max(sim, 0.0), lex)
        out.append(Ranked(seq, score, sim, lex))
    out.sort(key=lambda r: (-r.score, r.seq))
    return out
