"""The enhanced context with a fixed split (the layout a request asks for with
recent_share): the recent window takes its share of the budget newest first, history hits
the rest, best first, each with the turn that asks or answers it."""

from __future__ import annotations

from collections.abc import Sequence

from contextwm.domain.items import ScoredItem
from contextwm.ports.tokens import TokenCounter
from contextwm.retrieval.neighbours import HistoryCandidate
from contextwm.retrieval.pipeline import (
    HISTORY_HEADING,
    RECENT_HEADING,
    Assembled,
    LineCosts,
    Packer,
    Section,
    assemble,
)


class SplitLayout:
    """History first and the recent window after it; unused share of either part flows
    to the other."""

    def __init__(
        self,
        window: Sequence[ScoredItem],
        candidates: Sequence[HistoryCandidate],
        recent_share: float,
    ) -> None:
        self.newest_first = sorted(window, key=lambda s: -s.item.seq)
        self.candidates = candidates
        self.recent_share = recent_share
        self.packer: Packer | None = None

    def pack(self, left: int, costs: LineCosts) -> None:
        packer = self.packer = Packer(costs, left)
        self._fill_recent(int(left * self.recent_share))
        for cand in self.candidates:
            if cand.hit.item.seq in packer.chosen:
                continue
            if not packer.take(cand.hit, "history", HISTORY_HEADING):
                continue
            n = cand.neighbor
            if n is not None and n.item.seq not in packer.chosen:
                packer.take(n, "history", HISTORY_HEADING)
        self._fill_recent(None)  # what history left over flows back to older window items

    def _fill_recent(self, limit: int | None) -> None:
        packer = self.packer
        assert packer is not None
        for s in self.newest_first:
            if s.item.seq in packer.chosen:
                continue
            cost = packer.cost(s, "recent", RECENT_HEADING)
            if limit is not None and cost > limit:
                continue
            if packer.take(s, "recent", RECENT_HEADING) and limit is not None:
                limit -= cost

    def sections(self) -> list[Section]:
        assert self.packer is not None
        return [
            Section("history", HISTORY_HEADING, self.packer.items("history")),
            Section("recent", RECENT_HEADING, self.packer.items("recent")),
        ]

    def drop_weakest(self) -> bool:
        """The weakest hit with the neighbour it brought; the oldest window item when no
        hit is left."""
        assert self.packer is not None
        chosen = self.packer.chosen
        history = {seq: s for seq, (n, s) in chosen.items() if n == "history"}
        if history:
            hits = [s for s in history.values() if s.neighbor_of is None] or list(history.values())
            weakest = min(hits, key=lambda s: (s.score, -s.item.seq))
            for seq in [q for q, s in history.items() if s.neighbor_of == weakest.item.seq]:
                del chosen[seq]
            del chosen[weakest.item.seq]
        elif chosen:
            del chosen[min(chosen)]
        else:
            return False
        return True

    def omitted(self) -> int:
        assert self.packer is not None
        return sum(1 for s in self.newest_first if s.item.seq not in self.packer.chosen)


def assemble_split(
    window: Sequence[ScoredItem],
    candidates: Sequence[HistoryCandidate],
    *,
    query: str | None,
    budget: int,
    recent_share: float,
    counter: TokenCounter,
) -> Assembled:
    """Packs the window (newest first) and history hits (best first) into budget tokens.

    Args:
        window: window items in seq order.
        candidates: history hits, best first; none of them may be in the window part.
        query: rendered under "# Current Query"; None when the focus stood in for it.
        budget: the most tokens the rendered text may have.
        recent_share: the window's share of what the query leaves; unused share of either
            part flows to the other.
        counter: the conversation's token counter.

    Raises:
        InvalidArgument: when the budget cannot hold the query itself.
    """
    fitted = assemble(
        SplitLayout(window, candidates, recent_share), query=query, budget=budget, counter=counter
    )
    return Assembled(fitted.items("recent"), fitted.items("history"), fitted.text, fitted.tokens)
