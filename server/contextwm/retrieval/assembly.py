"""Assembles the enhanced context with a fixed split: the recent window takes its share of the
budget newest first, history hits the rest (the layout a request asks for with recent_share)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from contextwm.domain.errors import InvalidArgument
from contextwm.domain.items import ScoredItem
from contextwm.ports.tokens import TokenCounter

RECENT_HEADING = "# Recent Context"
HISTORY_HEADING = "# Relevant Historical Context"
QUERY_HEADING = "# Current Query"
SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class HistoryCandidate:
    """A retrieval hit and the neighbouring turn that answers or asks it, if any."""

    hit: ScoredItem
    neighbor: ScoredItem | None = None


@dataclass(frozen=True, slots=True)
class TokenAccount:
    budget: int
    total: int
    recent: int
    history: int
    query: int
    recent_omitted: int
    encoding: str
    system: int = 0  # the "# System" section, with category budgets only


@dataclass(frozen=True, slots=True)
class Assembled:
    recent: tuple[ScoredItem, ...]
    history: tuple[ScoredItem, ...]
    text: str
    tokens: TokenAccount


def recent_prefix(s: ScoredItem) -> str:
    return f"[{s.item.role}] "


def history_prefix(s: ScoredItem) -> str:
    return f"[{_minute(s.item.timestamp)}] [{s.item.role}] "


@functools.lru_cache(maxsize=4096)
def _minute(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M")


def recent_line(s: ScoredItem) -> str:
    return recent_prefix(s) + s.item.content


def history_line(s: ScoredItem) -> str:
    return history_prefix(s) + s.item.content


def render(recent: Sequence[ScoredItem], history: Sequence[ScoredItem], query: str | None) -> str:
    """Recent, then history, then the query; empty sections are left out. Items appear in seq
    order."""
    sections: list[str] = []
    if recent:
        lines = [recent_line(s) for s in sorted(recent, key=lambda s: s.item.seq)]
        sections.append(SEPARATOR.join([RECENT_HEADING, *lines]))
    if history:
        lines = [history_line(s) for s in sorted(history, key=lambda s: s.item.seq)]
        sections.append(SEPARATOR.join([HISTORY_HEADING, *lines]))
    if query:
        sections.append(f"{QUERY_HEADING}{SEPARATOR}{query}")
    return SEPARATOR.join(sections)


def query_cost(counter: TokenCounter, query: str | None, budget: int) -> int:
    """Tokens of the query's section. Every other part is charged one separator token,
    which covers the one before the query.

    Raises:
        InvalidArgument: when the budget cannot hold the query itself.
    """
    cost = counter.count(f"{QUERY_HEADING}{SEPARATOR}{query}") if query else 0
    if cost > budget:
        raise InvalidArgument(
            f"max_tokens={budget} cannot hold the query itself ({cost} tokens with its"
            " heading); raise max_tokens or shorten the query"
        )
    return cost


class _Budget:
    """Greedy packing with per-part token costs; the exact check happens on the final text."""

    def __init__(self, counter: TokenCounter, limit: int) -> None:
        self.counter = counter
        self.left = limit

    def cost(self, text: str) -> int:
        # +1 for the separator in front of every part ("\n\n" is one token in both encodings).
        return self.counter.count(text) + 1

    def line_cost(self, prefix: str, s: ScoredItem) -> int:
        """A line's cost from the item's stored token count: no re-encoding of its content.
        Counting prefix and content apart can only overestimate by the merge at the seam."""
        return self.counter.count(prefix) + s.item.token_count + 1

    def take(self, cost: int) -> bool:
        if cost > self.left:
            return False
        self.left -= cost
        return True


def assemble(
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
    paid_query = query_cost(counter, query, budget)
    pool = _Budget(counter, budget - paid_query)
    recent_budget = int(pool.left * recent_share)
    recent_pool = _Budget(counter, recent_budget)
    recent: dict[int, ScoredItem] = {}
    history: dict[int, ScoredItem] = {}
    heading_cost = {"recent": pool.cost(RECENT_HEADING), "history": pool.cost(HISTORY_HEADING)}
    newest_first = sorted(window, key=lambda s: -s.item.seq)

    def fill_recent(target: _Budget) -> None:
        for s in newest_first:
            if s.item.seq in recent or s.item.seq in history:
                continue
            cost = target.line_cost(recent_prefix(s), s) + (0 if recent else heading_cost["recent"])
            if target.take(cost):
                recent[s.item.seq] = s

    fill_recent(recent_pool)
    pool.left -= recent_budget - recent_pool.left
    for cand in candidates:
        if cand.hit.item.seq in history or cand.hit.item.seq in recent:
            continue
        cost = pool.line_cost(history_prefix(cand.hit), cand.hit) + (
            0 if history else heading_cost["history"]
        )
        if not pool.take(cost):
            continue
        history[cand.hit.item.seq] = cand.hit
        n = cand.neighbor
        fresh = n is not None and n.item.seq not in history and n.item.seq not in recent
        if n is not None and fresh and pool.take(pool.line_cost(history_prefix(n), n)):
            history[n.item.seq] = n
    fill_recent(pool)  # what history left over flows back to older window items

    text = render(list(recent.values()), list(history.values()), query)
    total = counter.count(text)
    # Parts were counted apart; BPE merges across a boundary can only rarely add a token, so
    # drop the weakest part until the exact count fits (seldom more than one round).
    while total > budget and (recent or history):
        if history:
            # The weakest hit goes together with the neighbours it brought.
            hits = [s for s in history.values() if s.neighbor_of is None] or list(history.values())
            weakest = min(hits, key=lambda s: (s.score, -s.item.seq))
            for seq in [q for q, s in history.items() if s.neighbor_of == weakest.item.seq]:
                del history[seq]
            del history[weakest.item.seq]
        else:
            del recent[min(recent)]
        text = render(list(recent.values()), list(history.values()), query)
        total = counter.count(text)
    rec = sorted(recent.values(), key=lambda s: s.item.seq)
    hist = sorted(history.values(), key=lambda s: s.item.seq)
    return Assembled(
        recent=tuple(rec),
        history=tuple(hist),
        text=text,
        tokens=TokenAccount(
            budget=budget,
            total=total,
            recent=counter.count(render(rec, (), None)) if rec else 0,
            history=counter.count(render((), hist, None)) if hist else 0,
            query=paid_query,
            recent_omitted=sum(
                1 for s in window if s.item.seq not in recent.keys() | history.keys()
            ),
            encoding=counter.encoding,
        ),
    )
