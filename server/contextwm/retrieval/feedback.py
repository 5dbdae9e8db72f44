"""Pseudo-relevance feedback for the lexical side: the rare words of the best first-round hits
are searched too, so that a question whose answer is spread over several turns ("what are
Nate's favourite desserts?") finds the turns that name what its first hits named ("coconut
milk ice cream") though they share no word with the question."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from contextwm.retrieval.query_terms import query_terms
from contextwm.retrieval.ranking import idf

# The best hits of the first round whose words are read, and how many of their words are
# searched. Chosen on two kinds of real conversation (docs/design.md).
FEEDBACK_HITS = 5
FEEDBACK_TERMS = 16
# The feedback words' BM25 is added at this share of the query's own best BM25: they widen
# the ranking without outweighing the words that were asked.
FEEDBACK_SHARE = 0.5
# Words of the hits looked up at most: each costs one index lookup.
MAX_CANDIDATES = 48


def candidate_terms(hits: Sequence[tuple[str, float]], asked: Collection[str]) -> dict[str, float]:
    """The words of the hits that were not asked, each with the summed weight of the hits
    holding it, at most MAX_CANDIDATES: the heaviest first, then in order of appearance.
    Numbers are left out: a count or a year matches unrelated turns.

    Args:
        hits: each hit's text and its score over the best hit's: a word of the best hit
            counts for more than a word of a hit that barely made the list.
        asked: the query's own words.
    """
    held: dict[str, float] = {}
    for text, weight in hits:
        for term in query_terms(text):
            if term not in asked and not term.isdigit():
                held[term] = held.get(term, 0.0) + weight
    order = sorted(held, key=lambda t: -held[t])[:MAX_CANDIDATES]
    return {t: held[t] for t in order}


def feedback_terms(held: Mapping[str, float], counts: Mapping[str, int], items: int) -> list[str]:
    """The FEEDBACK_TERMS words that best describe the hits: their weight among the hits
    times their IDF in the conversation, so a name every turn carries counts for little. A
    word only one item holds is left out: it can only find that item again.

    Args:
        held: the candidate words and their weight among the hits (candidate_terms).
        counts: how many of the conversation's items hold each word (absent or 0: none,
            which happens for words the index splits differently).
        items: how many items the conversation holds.
    """
    score = {
        term: weight * idf(counts[term], items)
        for term, weight in held.items()
        if counts.get(term, 0) > 1
    }
    return sorted(score, key=lambda t: (-score[t], t))[:FEEDBACK_TERMS]


def widened(lexical: Mapping[int, float], extra: Mapping[int, float]) -> dict[int, float]:
    """The query's BM25 with the feedback words' BM25 added at FEEDBACK_SHARE of the query's
    best (each side over its own best), by seq."""
    if not extra:
        return dict(lexical)
    scale = FEEDBACK_SHARE * max(lexical.values(), default=1.0) / max(extra.values())
    out = dict(lexical)
    for seq, value in extra.items():
        out[seq] = out.get(seq, 0.0) + scale * value
    return out
