"""The simple context selectors contextwm is compared with.

Each ranks a conversation's turns for a question; `fill` then takes whole turns in rank order
while they fit the budget (a turn that does not fit is skipped, the next one tried). A turn
costs the tokens of ``role: content`` plus TURN_OVERHEAD, the convention that makes figures
comparable across tools. Pure Python: the client commands load no numpy.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# Per-turn framing a chat format adds around each message.
TURN_OVERHEAD = 4
RRF_K = 60
BM25_K1 = 1.2
BM25_B = 0.75
SELECTORS = ("recency", "BM25", "dense", "BM25+dense RRF")

# The usual English function words: matching "the" or "what" ranks every turn.
_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    """.split()  # noqa: SIM905
)
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric words less stopwords: the BM25 selector's terms."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a conversation as the selectors see it."""

    role: str
    content: str
    cost: int  # tokens of "role: content" plus TURN_OVERHEAD


class Bm25:
    """Okapi BM25 over one conversation's turns (the Lucene variant of IDF, never negative)."""

    def __init__(self, docs: Sequence[str]) -> None:
        self._tf = [Counter(words(d)) for d in docs]
        lengths = [sum(tf.values()) for tf in self._tf]
        mean = max(sum(lengths) / max(len(lengths), 1), 1e-9)
        self._norm = [BM25_K1 * (1 - BM25_B + BM25_B * n / mean) for n in lengths]
        df: Counter[str] = Counter()
        for tf in self._tf:
            df.update(tf.keys())
        n = len(docs)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: str) -> list[float]:
        out = [0.0] * len(self._tf)
        for term in set(words(query)):
            idf = self._idf.get(term)
            if idf is None:
                continue
            for i, tf in enumerate(self._tf):
                f = tf.get(term)
                if f:
                    out[i] += idf * f * (BM25_K1 + 1) / (f + self._norm[i])
        return out


def order_by(scores: Sequence[float]) -> list[int]:
    """Indices best first; ties go to the later turn."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], -i))


def rrf(*rankings: Sequence[int], k: int = RRF_K) -> list[int]:
    """Reciprocal-rank fusion of rankings of the same indices."""
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, i in enumerate(ranking):
            score[i] = score.get(i, 0.0) + 1.0 / (k + rank + 1)
    return sorted(score, key=lambda i: (-score[i], -i))


def fill(ranking: Sequence[int], turns: Sequence[Turn], budget: int) -> set[int]:
    """The turns taken when filling budget with whole turns in rank order."""
    left, taken = budget, set()
    for i in ranking:
        if turns[i].cost <= left:
            taken.add(i)
            left -= turns[i].cost
    return taken


def rankings(bm25: Bm25, query: str, similarities: Sequence[float]) -> dict[str, list[int]]:
    """Every selector's ranking of a conversation's turns for a query.

    Args:
        bm25: the BM25 index of the conversation's turns.
        query: the question.
        similarities: each turn's cosine similarity to the question.
    """
    lexical = order_by(bm25.scores(query))
    dense = order_by(similarities)
    return {
        "recency": list(range(len(similarities) - 1, -1, -1)),
        "BM25": lexical,
        "dense": dense,
        "BM25+dense RRF": rrf(lexical, dense),
    }
