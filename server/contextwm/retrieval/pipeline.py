"""The enhanced context's one pipeline: a layout chooses items, this module renders them,
fits the text to the budget exactly and accounts for its tokens.

Every layout (relevance packing, the fixed recent share, category budgets) shares the same
text: sections under "# " headings, items as "role: content" lines in time order under one
"## " heading per day, and the query last. A layout is a strategy: it packs with the
costs given here, lists its sections, and says which part to drop when the exact count of
the text is over budget.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, Protocol

from contextwm.domain.errors import InvalidArgument
from contextwm.domain.items import ScoredItem
from contextwm.ports.tokens import TokenCounter
from contextwm.retrieval.paragraph_tokens import PARAGRAPH_TOKENS, SEPARATOR

SYSTEM_HEADING = "# System"
HISTORY_HEADING = "# Relevant Historical Context"
CONTEXT_HEADING = "# Relevant Context"  # history among workspace pieces (category budgets)
HISTORY_SUBHEADING = "## Relevant history"
RECENT_HEADING = "# Recent Context"
QUERY_HEADING = "# Current Query"
# A line's first word is looked at within this many characters (the counter caches texts
# this short).
SEAM_CHARS = 48
# Seams of line starts seen, by encoding and the start's hash; cleared when this many.
MAX_SEAMS = 100_000
_SEAMS: dict[tuple[str, int], int] = {}

SectionName = Literal["system", "history", "recent"]


@dataclass(frozen=True, slots=True)
class TokenAccount:
    """Where the text's tokens went; system + history + recent + query == total."""

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


@dataclass(frozen=True, slots=True)
class Section:
    """A part of the text: its heading, blocks of text rendered as they are, then items
    (under subheading, when blocks precede them)."""

    name: SectionName
    heading: str
    items: Sequence[ScoredItem] = ()
    blocks: Sequence[str] = ()
    subheading: str = ""
    dated: bool = True  # items under one heading per day


def line(s: ScoredItem) -> str:
    """One item as it is rendered: its role, then its content."""
    return f"{s.item.role}: {s.item.content}"


def day_of(timestamp: float) -> int:
    """The day a timestamp falls on, in UTC (the conversation's own clock), as a number."""
    return int(timestamp // 86_400)


def day_heading(timestamp: float) -> str:
    """The heading over a day's items, without its year (see item_lines)."""
    return _day_heading(day_of(timestamp))


def year_of(timestamp: float) -> int:
    return _year(day_of(timestamp))


# By day, not by timestamp: every item of a day shares them, and each is asked for per item.
@functools.lru_cache(maxsize=4096)
def _day_heading(day: int) -> str:
    date = datetime.fromtimestamp(day * 86_400, UTC)
    return f"## {date:%a} {date.day} {date:%b}"


@functools.lru_cache(maxsize=4096)
def _year(day: int) -> int:
    return datetime.fromtimestamp(day * 86_400, UTC).year


def item_lines(items: Sequence[ScoredItem], *, dated: bool = True) -> list[str]:
    """Items in time order (seq order between equal times: items may arrive out of time
    order), under one heading per day when dated; a heading names its year when it is the
    first or the year changed, as a reader carries it from the heading above."""
    parts: list[str] = []
    day: int | None = None
    year: int | None = None
    for s in sorted(items, key=lambda s: (s.item.timestamp, s.item.seq)):
        ts = s.item.timestamp
        if dated and day_of(ts) != day:
            day = day_of(ts)
            heading = day_heading(ts)
            if year_of(ts) != year:
                year = year_of(ts)
                heading = f"{heading} {year}"
            parts.append(heading)
        parts.append(line(s))
    return parts


def section_paragraphs(section: Section) -> list[str]:
    """A section as the paragraphs it is rendered in: its heading, its blocks, then its
    items (day headings among them)."""
    parts = [section.heading, *section.blocks]
    if section.items:
        if section.blocks and section.subheading:
            parts.append(section.subheading)
        parts.extend(item_lines(section.items, dated=section.dated))
    return parts


def query_section(query: str) -> str:
    return f"{QUERY_HEADING}{SEPARATOR}{query}"


def query_cost(counter: TokenCounter, query: str | None, budget: int) -> int:
    """Tokens of the query's section. Every other part is charged one separator token,
    which covers the one before the query.

    Raises:
        InvalidArgument: when the budget cannot hold the query itself.
    """
    cost = PARAGRAPH_TOKENS.shares(counter, [query_section(query)])[0] if query else 0
    if cost > budget:
        raise InvalidArgument(
            f"max_tokens={budget} cannot hold the query itself ({cost} tokens with its"
            " heading); raise max_tokens or shorten the query"
        )
    return cost


class LineCosts:
    """What parts of the text cost, counted apart: each part pays one separator ("\\n\\n" is
    one token in both encodings), and an item's line is priced from its stored token count
    with no re-encoding of its content. The encoder splits text into words before it merges,
    and a word takes the space before it: "user: Caroline" is "user", ":", " Caroline", one
    token fewer than "user: " and "Caroline" apart. So the line is priced as "role:", the
    content, and what the space changes in the content's first word."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._roles: dict[str, int] = {}

    def line(self, s: ScoredItem) -> int:
        role = s.item.role
        prefix = self._roles.get(role)
        if prefix is None:
            prefix = self._roles[role] = self.counter.count(f"{role}:")
        return prefix + self._seam(s.item.content) + s.item.token_count + 1

    def _seam(self, content: str) -> int:
        """Tokens that a space before content adds: what it adds to the first word, where
        the content starts with a short one; else its own token, an upper bound."""
        start = content[:SEAM_CHARS]
        # By the start's hash, which keeps no text: a collision only misprices a line,
        # which the exact count of the text then corrects.
        key = (self.counter.encoding, hash(start))
        seam = _SEAMS.get(key)
        if seam is None:
            words = start.split(maxsplit=1)
            if not words or start[0].isspace() or len(words[0]) == SEAM_CHARS:
                seam = 1
            else:
                seam = self.counter.count(f" {words[0]}") - self.counter.count(words[0])
            if len(_SEAMS) >= MAX_SEAMS:
                _SEAMS.clear()
            _SEAMS[key] = seam
        return seam

    def text(self, text: str) -> int:
        return self.counter.count(text) + 1

    def year(self, year: int) -> int:
        """What naming a year adds to a heading."""
        return self.counter.count(f" {year}")

    def lines(self, items: Sequence[ScoredItem]) -> int:
        """Items rendered together on their own, day headings included."""
        days = {day_of(s.item.timestamp): s.item.timestamp for s in items}
        return (
            sum(self.line(s) for s in items)
            + sum(self.text(day_heading(t)) for t in days.values())
            + sum(self.year(y) for y in {year_of(t) for t in days.values()})
        )


class Packer:
    """Greedy packing into sections: a section's heading and a day's heading are charged
    with the first item under them."""

    def __init__(self, costs: LineCosts, left: int) -> None:
        self.costs = costs
        self.left = left
        self.chosen: dict[int, tuple[SectionName, ScoredItem]] = {}
        self._days: set[tuple[SectionName, int]] = set()
        self._years: set[tuple[SectionName, int]] = set()
        self._sections: set[SectionName] = set()

    def cost(self, s: ScoredItem, section: SectionName, heading: str) -> int:
        c = self.costs.line(s)
        day = day_of(s.item.timestamp)
        if (section, day) not in self._days:
            c += self.costs.text(_day_heading(day))
            if (section, year := _year(day)) not in self._years:
                c += self.costs.year(year)
            if section not in self._sections:
                c += self.costs.text(heading)
        return c

    def take(
        self, s: ScoredItem, section: SectionName, heading: str, limit: int | None = None
    ) -> int:
        """Adds s when it fits (and costs at most limit); returns what it cost, 0 if not added."""
        if s.item.token_count >= self.left:
            # Cannot fit: a line costs its content, one token more for its role and
            # separator at least (the space the role adds saves one token at most).
            return 0
        c = self.cost(s, section, heading)
        if c > self.left or (limit is not None and c > limit):
            return 0
        self.left -= c
        self.chosen[s.item.seq] = (section, s)
        day = day_of(s.item.timestamp)
        self._days.add((section, day))
        self._years.add((section, _year(day)))
        self._sections.add(section)
        return c

    def items(self, section: SectionName) -> list[ScoredItem]:
        """The chosen items of a section, in seq order."""
        return [s for _, (n, s) in sorted(self.chosen.items()) if n == section]


class Layout(Protocol):
    """How a context is chosen; the pipeline renders, fits and accounts for it."""

    def pack(self, left: int, costs: LineCosts) -> None:
        """Chooses items (and blocks) costing at most left tokens, counted with costs."""
        ...

    def sections(self) -> list[Section]:
        """What is chosen, in the order it is rendered."""
        ...

    def drop_weakest(self) -> bool:
        """Drops the part least worth keeping; False when nothing can be dropped."""
        ...

    def omitted(self) -> int:
        """How many window items the context leaves out."""
        ...


@dataclass(frozen=True, slots=True)
class Fitted:
    sections: tuple[Section, ...]
    text: str
    tokens: TokenAccount

    def items(self, name: SectionName) -> tuple[ScoredItem, ...]:
        """A section's items, in seq order."""
        found = [s for section in self.sections if section.name == name for s in section.items]
        return tuple(sorted(found, key=lambda s: s.item.seq))


def assemble(layout: Layout, *, query: str | None, budget: int, counter: TokenCounter) -> Fitted:
    """Packs with the layout, renders, and drops its weakest parts until the exact count of
    the text fits the budget (rarely any: parts were counted apart, and a BPE merge across
    a seam can only rarely add a token).

    Raises:
        InvalidArgument: when the budget cannot hold the query itself.
    """
    paid_query = query_cost(counter, query, budget)
    layout.pack(budget - paid_query, LineCosts(counter))
    while True:
        sections = [s for s in layout.sections() if s.items or s.blocks]
        paragraphs = [section_paragraphs(s) for s in sections]
        if query:
            paragraphs.append([query_section(query)])
        shares = PARAGRAPH_TOKENS.shares(counter, [p for ps in paragraphs for p in ps])
        total = sum(shares)
        if total <= budget or not layout.drop_weakest():
            break
    # Each section is charged its paragraphs with the separators after them; the query, last,
    # has none after it. The shares add up to the text's exact count.
    parts = {"system": 0, "history": 0, "recent": 0}
    at = 0
    for s, ps in zip(sections, paragraphs, strict=False):
        parts[s.name] += sum(shares[at : at + len(ps)])
        at += len(ps)
    tokens = TokenAccount(
        budget=budget,
        total=total,
        recent=parts["recent"],
        history=parts["history"],
        query=total - sum(parts.values()),
        recent_omitted=layout.omitted(),
        encoding=counter.encoding,
        system=parts["system"],
    )
    text = SEPARATOR.join(p for ps in paragraphs for p in ps)
    return Fitted(tuple(sections), text, tokens)
