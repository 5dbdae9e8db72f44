"""Assembles the default enhanced context: the newest turns, then whatever serves the query
best per token, from the window or the archive, rendered compactly under the budget."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime

from contextwm.domain.items import ScoredItem
from contextwm.ports.tokens import TokenCounter
from contextwm.retrieval.assembly import (
    HISTORY_HEADING,
    QUERY_HEADING,
    RECENT_HEADING,
    SEPARATOR,
    Assembled,
    TokenAccount,
    query_cost,
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
LENGTH_PRIOR = 96


# No item line costs less (a role, one content token, the separator).
MIN_LINE_TOKENS = 3


def line(s: ScoredItem) -> str:
    """One item as it is rendered: its role, then its content."""
    return f"{s.item.role}: {s.item.content}"


@functools.lru_cache(maxsize=4096)
def day_heading(timestamp: float) -> str:
    """The heading over a day's items, in UTC (the conversation's own clock)."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("## %a %Y-%m-%d")


def render_section(heading: str, items: Sequence[ScoredItem]) -> str:
    """A section: its heading, then items in seq order under one heading per day."""
    parts = [heading]
    day = ""
    for s in sorted(items, key=lambda s: s.item.seq):
        h = day_heading(s.item.timestamp)
        if h != day:
            parts.append(h)
            day = h
        parts.append(line(s))
    return SEPARATOR.join(parts)


def render(recent: Sequence[ScoredItem], history: Sequence[ScoredItem], query: str | None) -> str:
    """History first and the recent window after it, so the text reads in time order up to
    the query; empty sections are left out."""
    sections = []
    if history:
        sections.append(render_section(HISTORY_HEADING, history))
    if recent:
        sections.append(render_section(RECENT_HEADING, recent))
    if query:
        sections.append(f"{QUERY_HEADING}{SEPARATOR}{query}")
    return SEPARATOR.join(sections)


class _Packer:
    """Greedy packing with per-part token costs (the exact count is checked on the text).

    Each part is charged one separator token ("\\n\\n" is one token in both encodings); a
    section's heading and a day's heading are charged with the first item under them.
    """

    def __init__(self, counter: TokenCounter, left: int, window: set[int]) -> None:
        self.counter = counter
        self.left = left
        self.window = window
        self.chosen: dict[int, ScoredItem] = {}
        self._days: set[tuple[bool, str]] = set()

    def cost(self, s: ScoredItem) -> int:
        in_window = s.item.seq in self.window
        c = self.counter.count(f"{s.item.role}: ") + s.item.token_count + 1
        day = (in_window, day_heading(s.item.timestamp))
        if day not in self._days:
            c += self.counter.count(day[1]) + 1
            if not any(w == in_window for w, _ in self._days):
                c += self.counter.count(RECENT_HEADING if in_window else HISTORY_HEADING) + 1
        return c

    def take(self, s: ScoredItem, limit: int | None = None) -> bool:
        """Adds s when it fits (and costs at most limit); returns whether it was added."""
        c = self.cost(s)
        if c > self.left or (limit is not None and c > limit):
            return False
        self.left -= c
        self.chosen[s.item.seq] = s
        self._days.add((s.item.seq in self.window, day_heading(s.item.timestamp)))
        return True


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
    paid_query = query_cost(counter, query, budget)
    in_window = {s.item.seq for s in window}
    packer = _Packer(counter, budget - paid_query, in_window)
    kept: set[int] = set()
    allowance = int(KEEP_SHARE * budget)
    for s in reversed(window[len(window) - keep_newest :] if keep_newest > 0 else []):
        before = packer.left
        if not packer.take(s, allowance):
            break
        allowance -= before - packer.left
        kept.add(s.item.seq)

    by_seq = {s.item.seq: s for s in window}
    for c in candidates:
        by_seq[c.item.seq] = c
    density = {
        seq: max(s.score, 0.0) / (s.item.token_count + LENGTH_PRIOR) for seq, s in by_seq.items()
    }
    eligible = [s for s in by_seq.values() if s.item.seq in in_window or s.score > 0]
    for s in sorted(eligible, key=lambda s: (-density[s.item.seq], -s.item.seq)):
        if packer.left < MIN_LINE_TOKENS:
            break
        if s.item.seq not in packer.chosen:
            packer.take(s)

    chosen = packer.chosen
    text, total = _fit(chosen, in_window, kept, density, query, budget, counter)
    recent = tuple(s for seq, s in sorted(chosen.items()) if seq in in_window)
    history = tuple(s for seq, s in sorted(chosen.items()) if seq not in in_window)
    # The parts add up to the total: the recent section (usually the shorter) is counted,
    # history is the rest, with the separators between sections; no second count of it all.
    recent_tokens = (
        counter.count(render_section(RECENT_HEADING, recent)) if recent and history else 0
    )
    if recent and not history:
        recent_tokens = total - paid_query
    return Assembled(
        recent=recent,
        history=history,
        text=text,
        tokens=TokenAccount(
            budget=budget,
            total=total,
            recent=recent_tokens,
            history=total - paid_query - recent_tokens if history else 0,
            query=paid_query,
            recent_omitted=len(in_window - chosen.keys()),
            encoding=counter.encoding,
        ),
    )


def _fit(
    chosen: dict[int, ScoredItem],
    in_window: set[int],
    kept: set[int],
    density: dict[int, float],
    query: str | None,
    budget: int,
    counter: TokenCounter,
) -> tuple[str, int]:
    """The rendered text and its exact count, dropping items until it fits (rarely any:
    costs were counted apart, and a BPE merge across a seam can only rarely add a token)."""
    while True:
        recent = [s for seq, s in chosen.items() if seq in in_window]
        history = [s for seq, s in chosen.items() if seq not in in_window]
        text = render(recent, history, query)
        total = counter.count(text)
        if total <= budget or not chosen:
            return text, total
        optional = [seq for seq in chosen if seq not in kept] or list(chosen)
        del chosen[min(optional, key=lambda seq: (density[seq], -seq))]
