"""A hit's neighbouring turn: the question it answers, or the answer to the question it asks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextwm.conversations.runtime import ConversationRuntime
from contextwm.domain.items import Flag, Item, ScoredItem
from contextwm.retrieval.ranker import Ranker
from contextwm.retrieval.timehints import TimeHint
from contextwm.window.importance import is_question

# A turn that asks or answers one of the NEIGHBOR_HITS best hits is a candidate with
# NEIGHBOR_SHARE of the hit's score: it is taken when it is short enough to be worth it (a
# one-line answer), not when it is long.
NEIGHBOR_SHARE = 0.5
NEIGHBOR_HITS = 30


@dataclass(frozen=True, slots=True)
class HistoryCandidate:
    """A retrieval hit and the neighbouring turn that answers or asks it, if any."""

    hit: ScoredItem
    neighbor: ScoredItem | None = None


def with_neighbours(
    ranker: Ranker, rt: ConversationRuntime, hits: list[ScoredItem], hint: TimeHint | None
) -> list[ScoredItem]:
    """The hits and, as candidates of their own, the turns that ask or answer them, each
    with NEIGHBOR_SHARE of its hit's score unless it scores higher itself (rt.lock held)."""
    by_seq = {h.item.seq: h for h in hits}
    # A weak hit's neighbour would inherit too little to be chosen: not worth a lookup.
    found = partners(ranker, rt, hits[:NEIGHBOR_HITS])
    for h in hits:
        n = found.get(h.item.seq)
        if n is None:
            continue
        score = NEIGHBOR_SHARE * h.score
        own = by_seq.get(n.seq)
        if own is None or own.score < score:
            parts = own.parts if own is not None else ranker.parts(rt, n, None, hint)
            by_seq[n.seq] = ScoredItem(n, score, parts, h.item.seq)
    return sorted(by_seq.values(), key=lambda s: (-s.score, s.item.seq))


def paired(
    ranker: Ranker, rt: ConversationRuntime, hits: list[ScoredItem], hint: TimeHint | None
) -> list[HistoryCandidate]:
    """Each hit with its neighbouring turn, if any, which travels with it at its score
    (rt.lock held)."""
    found = partners(ranker, rt, hits)
    by_seq = {h.item.seq: h for h in hits}
    out: list[HistoryCandidate] = []
    for h in hits:
        n = found.get(h.item.seq)
        if n is None:
            out.append(HistoryCandidate(h))
            continue
        own = by_seq.get(n.seq)
        parts = own.parts if own is not None else ranker.parts(rt, n, None, hint)
        out.append(HistoryCandidate(h, ScoredItem(n, h.score, parts, h.item.seq)))
    return out


def partners(
    ranker: Ranker, rt: ConversationRuntime, hits: Sequence[ScoredItem]
) -> dict[int, Item]:
    """Each hit's neighbouring turn, by the hit's seq (rt.lock held).

    Only a question and its answer travel together: a user question brings the assistant
    turn after it, an assistant turn the user question before it. A statement's neighbour
    is usually an acknowledgement, and the budget is better spent on another hit.
    """
    wanted: dict[int, tuple[Item, int]] = {}
    for h in hits:
        if h.item.role == "user" and _asks(h.item):
            wanted[h.item.seq] = (h.item, h.item.seq + 1)
        elif h.item.role == "assistant":
            wanted[h.item.seq] = (h.item, h.item.seq - 1)
    found = ranker.items(rt, list({n for _, n in wanted.values()}))
    out: dict[int, Item] = {}
    for seq, (hit, n_seq) in wanted.items():
        n = found.get(n_seq)
        if n is None or {n.role, hit.role} != {"user", "assistant"}:
            continue
        if n.role == "assistant" or _asks(n):
            out[seq] = n
    return out


def _asks(item: Item) -> bool:
    """Whether an item is a question, flagged or not (detection may be switched off)."""
    return bool(item.flags & Flag.QUESTION) or is_question(item.role, item.content)
