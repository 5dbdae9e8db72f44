"""Hybrid ranking: dense and lexical candidates fused with per-query adaptive weights."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from contextwm.core.model import ScoreParts


@dataclass(frozen=True, slots=True)
class Ranked:
    """A candidate's fused score and the signals it came from."""

    seq: int
    score: float
    similarity: float
    lexical: float


def _spread(values: list[float]) -> float:
    """How far the best stands out from the rest of its list (0 when there is no list)."""
    if len(values) < 2:
        return 0.0 if not values else 1.0
    ordered = sorted(values, reverse=True)
    return ordered[0] - float(np.mean(ordered[1:]))


def fuse(
    dense: Mapping[int, float],
    lexical: Mapping[int, float],
    *,
    threshold: float,
    mode: str = "hybrid",
) -> list[Ranked]:
    """Ranks candidates by a weighted sum of normalised dense and lexical scores.

    Args:
        dense: seq -> cosine similarity to the query.
        lexical: seq -> BM25 score (higher is better).
        threshold: minimum similarity for a candidate that only dense search found.
        mode: "hybrid", "dense" (the seed's method) or "lexical".

    Returns:
        Candidates, best first.

    Both lists are min-max normalised over their own candidates. The weights adapt per query:
    each list counts in proportion to how far its best hit stands out from the rest, so a
    rare name or number that BM25 pins down outweighs a flat dense list, and a paraphrase that
    BM25 cannot see leaves the weight with dense search. A fixed-weight or rank-only formula
    cannot do both, and which signal wins flips from one data set to the next.
    """
    if mode == "dense":
        ranked = [Ranked(s, sim, sim, 0.0) for s, sim in dense.items() if sim >= threshold]
        return sorted(ranked, key=lambda r: (-r.score, r.seq))
    lex_max = max(lexical.values(), default=0.0)
    lex_norm = {s: (v / lex_max if lex_max > 0 else 0.0) for s, v in lexical.items()}
    if mode == "lexical":
        ranked = [Ranked(s, v, dense.get(s, 0.0), v) for s, v in lex_norm.items()]
        return sorted(ranked, key=lambda r: (-r.score, r.seq))

    sims = list(dense.values())
    lo, hi = (min(sims), max(sims)) if sims else (0.0, 0.0)
    dense_norm = {s: ((v - lo) / (hi - lo) if hi > lo else 1.0) for s, v in dense.items()}
    spread_d, spread_l = _spread(list(dense_norm.values())), _spread(list(lex_norm.values()))
    total = spread_d + spread_l
    w_dense = spread_d / total if total > 0 else 0.5
    out: list[Ranked] = []
    for seq in dense.keys() | lexical.keys():
        sim = dense.get(seq, 0.0)
        lex = lex_norm.get(seq, 0.0)
        if lex == 0.0 and sim < threshold:
            continue
        score = w_dense * dense_norm.get(seq, 0.0) + (1.0 - w_dense) * lex
        out.append(Ranked(seq, score, sim, lex))
    return sorted(out, key=lambda r: (-r.score, r.seq))


def history_parts(ranked: Ranked, recency: float, importance: float, role: float, time: float) -> ScoreParts:
    """The parts reported for a history hit."""
    return ScoreParts(
        recency=recency,
        importance=importance,
        similarity=ranked.similarity,
        lexical=ranked.lexical,
        role=role,
        time=time,
    )
