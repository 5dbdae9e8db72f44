"""The default layout of the enhanced context: the newest turns, then whatever serves the
query best per token, from the window or the archive."""

from __future__ import annotations

from collections.abc import Sequence

from contextwm.domain.items import ScoredItem
from contextwm.ports.tokens import TokenCounter
from contextwm.retrieval.pipeline import (
    HISTORY_HEADING,
    RECENT_HEADING,
    Assembled,
    LineCosts,
    Packer,
    Section,
    SectionName,
    assemble,
)

# The newest turns are kept whatever the query, but never more than this share of the
# budget: a question about last month should not lose a quarter of its evidence to them.
KEEP_SHARE = 0.25
# Candidates are taken by score / (tokens + LENGTH_PRIOR): relevance per token, but a short
# item is charged as if it were LENGTH_PRIOR tokens longer. A turn's worth is not in
# proportion to its length: "Sounds great!" says far less than a quarter of a four-line turn,
# so below about a paragraph length barely counts, while a page-long reply that is not
# clearly the best still gives way to several short answers. Chosen on two kinds of real
# conversation (docs/design.md): score per token, or per its square root, favoured short
# filler turns there.
LENGTH_PRIOR = 128
# No item line costs less (a role, one content token, the separator).
MIN_LINE_TOKENS = 3


class RelevanceLayout:
    """History first and the recent window after it, so the text reads in time order up to
    the query; window items are in the recent part, archived ones in history."""

    def __init__(
        self,
        window: Sequence[ScoredItem],
        candidates: Sequence[ScoredItem],
        keep_newest: int,
        budget: int,
    ) -> None:
        self.window = window
        self.in_window = {s.item.seq for s in window}
        by_seq = {s.item.seq: s for s in window}
        for c in candidates:
            by_seq[c.item.seq] = c
        self.by_seq = by_seq
        self.keep_newest = keep_newest
        self.allowance = int(KEEP_SHARE * budget)
        self.kept: set[int] = set()
        self.density = {
            seq: max(s.score, 0.0) / (s.item.token_count + LENGTH_PRIOR)
            for seq, s in by_seq.items()
        }
        self.packer: Packer | None = None

    def _section(self, s: ScoredItem) -> tuple[SectionName, str]:
        if s.item.seq in self.in_window:
            return "recent", RECENT_HEADING
        return "history", HISTORY_HEADING

    def pack(self, left: int, costs: LineCosts) -> None:
        packer = self.packer = Packer(costs, left)
        allowance = self.allowance
        newest = self.window[len(self.window) - self.keep_newest :] if self.keep_newest > 0 else []
        for s in reversed(newest):
            cost = packer.take(s, *self._section(s), limit=allowance)
            if not cost:
                break
            allowance -= cost
            self.kept.add(s.item.seq)
        eligible = [s for s in self.by_seq.values() if s.item.seq in self.in_window or s.score > 0]
        for s in sorted(eligible, key=lambda s: (-self.density[s.item.seq], -s.item.seq)):
            if packer.left < MIN_LINE_TOKENS:
                break
            if s.item.seq not in packer.chosen:
                packer.take(s, *self._section(s))

    def sections(self) -> list[Section]:
        assert self.packer is not None
        return [
            Section("history", HISTORY_HEADING, self.packer.items("history")),
            Section("recent", RECENT_HEADING, self.packer.items("recent")),
        ]

    def drop_weakest(self) -> bool:
        assert self.packer is not None
        chosen = self.packer.chosen
        if not chosen:
            return False
        optional = [seq for seq in chosen if seq not in self.kept] or list(chosen)
        del chosen[min(optional, key=lambda seq: (self.density[seq], -seq))]
        return True

    def omitted(self) -> int:
        assert self.packer is not None
        return len(self.in_window - self.packer.chosen.keys())


def assemble_relevant(
    window: Sequence[ScoredItem],
    candidates: Sequence[ScoredItem],
    *,
    query: str | None,
    budget: int,
    keep_newest: int,
    counter: TokenCounter,
) -> Assembled:
    """Packs the newest window items, then the candidates that serve the query best per token.

    Args:
        window: every window item in seq order, each scored for the query (0 if unranked).
        candidates: ranked items, window or archive, with their neighbours (neighbor_of set).
        query: rendered under "# Current Query"; None when the focus stood in for it.
        budget: the most tokens the rendered text may have.
        keep_newest: how many of the newest window items are kept whatever the query, as long
            as they take at most KEEP_SHARE of the budget.
        counter: the conversation's token counter.

    Window items that no ranking found fill what is left, newest first; archived items come
    back only when a ranking found them.

    Raises:
        InvalidArgument: when the budget cannot hold the query itself.
    """
    fitted = assemble(
        RelevanceLayout(window, candidates, keep_newest, budget),
        query=query,
        budget=budget,
        counter=counter,
    )
    return Assembled(fitted.items("recent"), fitted.items("history"), fitted.text, fitted.tokens)
