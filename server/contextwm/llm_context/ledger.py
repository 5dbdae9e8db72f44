"""The fact ledger: files, commands, errors and user instructions, kept without an LLM."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Iterator

from contextwm.domain.facts import Fact, FactKind
from contextwm.domain.items import Flag, Item, tool_of
from contextwm.ports.tokens import TokenCounter

LEDGER_HEADING = "## Facts recorded by contextwm"
MAX_INSTRUCTION_CHARS = 1000
MAX_ERROR_CHARS = 300


_FILE_KIND = {"read": FactKind.FILE_READ, "write": FactKind.FILE_WRITE}  # mentions: no fact
_READ_TOOL = re.compile(r"read|view|cat|open", re.IGNORECASE)
_WRITE_TOOL = re.compile(r"write|edit|create|patch|replace", re.IGNORECASE)
_EXIT = re.compile(r"exit (?:code|status)[:= ]*(\d+)", re.IGNORECASE)
_TRACEBACK = "Traceback (most recent call last)"
_ERROR_LINE = re.compile(
    r"(?-i:\b[A-Z]\w*(?:Error|Exception)\b|FAILED)|\b(?:error|exception|fatal|panic)\b",
    re.IGNORECASE,
)
# "must not" and "please don't" are covered by "must" and "don't".
_DIRECTIVE = re.compile(
    r"\b(?:always|never|don['’]t|do not|must|make sure|remember to|from now on|instead of"
    r"|avoid|prefer|please use|only use)\b"
    r"|^(?:please\s+)?(?:stop|keep)\b"
    r"|^[*_]*(?:important|note)[*_]*\s*:",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])[ \t]+")


def extract_facts(item: Item) -> list[Fact]:
    """The facts one item states, found by rules (no LLM).

    Rules:
        - Files: item.file of kind "read" or "write" (mentions are not facts); and metadata
          "path" (or "file") with "tool" (or "tool_name"): a tool name containing
          write/edit/create/patch/replace is a write, read/view/cat/open a read.
        - Commands: metadata "command"; else, for tool and assistant items, a first non-empty
          line starting with "$ ". Outcome: metadata "exit_code" as "exit N"; else
          "exit code|status N" in the content; else "failed" for an ERROR-flagged item.
        - Errors: an ERROR-flagged item of any role but user gives its most telling line: a
          traceback's exception line, else the first error-ish line, else the first line
          (at most 300 characters).
        - Instructions: the sentences of a user item that carry a directive marker (always,
          never, don't, must, make sure, from now on, instead of, avoid, prefer, please use,
          only use, stop/keep at the start, "Important:"/"Note:"), verbatim, questions
          excepted. Sentences end at ". ", "! ", "? " and line ends; a bullet line is one
          sentence, stored without its bullet.
        - A compaction marker states no facts of its own (its ledger was recorded already).

    Args:
        item: the stored item.

    Returns:
        Its facts, all with the item's seq; files first, then command, error, instructions.
    """
    if item.kind == "compaction":
        return []
    facts = [Fact(kind, path, item.seq) for kind, path in _files(item)]
    command = _command(item)
    if command:
        facts.append(Fact(FactKind.COMMAND, command, item.seq, _outcome(item)))
    if item.flags & Flag.ERROR and item.role != "user":
        line = _error_line(item.content)
        if line:
            facts.append(Fact(FactKind.ERROR, line, item.seq))
    if item.role == "user":
        for s in _sentences(item.content):
            if not s.endswith("?") and _DIRECTIVE.search(s):
                facts.append(Fact(FactKind.INSTRUCTION, _cut(s, MAX_INSTRUCTION_CHARS), item.seq))
    return facts


def _sentences(text: str) -> Iterator[str]:
    for line in text.splitlines():
        bullet = _BULLET.match(line)
        # A bullet stays whole: numbered ones ("1. Always ...") would be cut by the ". " rule.
        parts = [line[bullet.end() :]] if bullet else _SENTENCE_END.split(line.strip())
        yield from (p.strip() for p in parts if p.strip())


def _files(item: Item) -> list[tuple[FactKind, str]]:
    found: list[tuple[FactKind, str]] = []
    kind = _FILE_KIND.get(item.file.kind) if item.file is not None and item.file.path else None
    if item.file is not None and kind is not None:
        found.append((kind, item.file.path))
    path = (item.metadata.get("path") or item.metadata.get("file") or "").strip()
    tool = tool_of(item.metadata) or ""
    if path and tool:
        # Writes first: "create" contains "cat", and a write is the fact worth keeping.
        if _WRITE_TOOL.search(tool):
            found.append((FactKind.FILE_WRITE, path))
        elif _READ_TOOL.search(tool):
            found.append((FactKind.FILE_READ, path))
    return list(dict.fromkeys(found))


def _command(item: Item) -> str:
    command = item.metadata.get("command", "").strip()
    if command or item.role not in ("tool", "assistant"):
        return command
    first = next((line.strip() for line in item.content.splitlines() if line.strip()), "")
    return first[2:].strip() if first.startswith("$ ") else ""


def _outcome(item: Item) -> str:
    match = _EXIT.search(item.content)
    code = item.metadata.get("exit_code", "").strip() or (match.group(1) if match else "")
    if code:
        return f"exit {code}"
    return "failed" if item.flags & Flag.ERROR else ""


def _error_line(content: str) -> str:
    lines = [x.strip() for x in content.splitlines() if x.strip()]
    start = content.rfind(_TRACEBACK)
    # A traceback's verdict is the first unindented line after its (last) header.
    after = content[start:].splitlines()[1:] if start >= 0 else []
    verdict = [x.strip() for x in after if x.strip() and not x[0].isspace()]
    errorish = [x for x in lines if _ERROR_LINE.search(x)]
    return _cut([*verdict, *errorish, *lines, ""][0], MAX_ERROR_CHARS)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Ledger:
    """The facts of one conversation, deduplicated, newest last."""

    def __init__(self, facts: Iterable[Fact] = ()) -> None:
        self._facts: list[Fact] = []
        self._view: list[Fact] | None = None  # facts(), worked out once per change
        self.add(facts)

    def add(self, facts: Iterable[Fact]) -> None:
        """Records facts (usually extract_facts of a new item)."""
        self._facts.extend(facts)
        self._view = None

    def drop_after(self, seq: int) -> None:
        """Forgets the facts of items after seq: a checkpoint restore reverts them."""
        self._facts = [f for f in self._facts if f.seq <= seq]
        self._view = None

    def facts(self) -> list[Fact]:
        """The deduplicated facts in seq order: instructions by text at their first
        occurrence; files by (kind, path), commands and errors by text at their latest."""
        if self._view is None:
            self._view = _deduplicate(self._facts)
        return list(self._view)

    def render(self, counter: TokenCounter, max_tokens: int) -> str:
        """The ledger as a Markdown section of at most max_tokens tokens.

        Over budget, the oldest files, commands and errors go first, whatever their kind (so
        the newest of each stay), and the oldest instructions only last.

        Args:
            counter: the conversation's token counter.
            max_tokens: the most tokens the section may have.

        Returns:
            The section, or "" when there are no facts or not one fits with the heading.
        """
        facts = self.facts()
        lines = [_line(f) for f in facts]
        # Every line ends in a newline and starts with "-" or "#", so no token spans two
        # lines and the sum of per-line counts is the text's count (+1 at most for the last
        # newline, which the text lacks): a linear plan, checked once on the final text.
        costs = [counter.count(line + "\n") for line in lines]
        heading_cost = {kind: counter.count(title + "\n") for kind, title in _SECTIONS}
        kept = [True] * len(facts)
        per_kind = Counter(f.kind for f in facts)
        estimate = counter.count(LEDGER_HEADING + "\n") + sum(costs)
        estimate += sum(heading_cost[kind] for kind in per_kind)
        # facts are in seq order, so each group's queue runs oldest first.
        queue = [i for group in _DROP_ORDER for i, f in enumerate(facts) if f.kind in group]
        budget, dropped = max_tokens + 1, 0  # +1: the last newline is counted but not written
        while True:
            while estimate > budget and dropped < len(queue):
                i = queue[dropped]
                dropped += 1
                kept[i] = False
                per_kind[facts[i].kind] -= 1
                estimate -= costs[i] + (
                    0 if per_kind[facts[i].kind] else heading_cost[facts[i].kind]
                )
            if dropped == len(queue):
                return ""
            text = _compose(facts, lines, kept)
            actual = counter.count(text)
            if actual <= max_tokens:
                return text
            # The plan fell short by the overshoot at least: ask for that much less.
            budget = min(budget, estimate) - (actual - max_tokens)


_SECTIONS: tuple[tuple[FactKind, str], ...] = (
    (FactKind.INSTRUCTION, "### User instructions (verbatim)"),
    (FactKind.FILE_READ, "### Files read"),
    (FactKind.FILE_WRITE, "### Files written"),
    (FactKind.COMMAND, "### Commands"),
    (FactKind.ERROR, "### Errors"),
)
# What goes first over budget: the oldest files, commands and errors, by age alone (what an
# agent did last matters most, of every kind); instructions last, since they exist only in
# the user's words and are the hardest to recover.
_DROP_ORDER: tuple[frozenset[FactKind], ...] = (
    frozenset({FactKind.COMMAND, FactKind.ERROR, FactKind.FILE_READ, FactKind.FILE_WRITE}),
    frozenset({FactKind.INSTRUCTION}),
)


def _deduplicate(facts: list[Fact]) -> list[Fact]:
    best: dict[tuple[FactKind, str], tuple[int, int]] = {}  # key -> (seq, index) of the winner
    for index, f in enumerate(facts):
        held = best.get((f.kind, f.text))
        first_wins = f.kind is FactKind.INSTRUCTION
        if held is None or (f.seq < held[0] if first_wins else f.seq >= held[0]):
            best[(f.kind, f.text)] = (f.seq, index)
    return [facts[index] for _, index in sorted(best.values())]


def _line(fact: Fact) -> str:
    text = _one_line(fact.text)
    if fact.kind is not FactKind.COMMAND:
        return f"- {text}"
    # A fence longer than any backtick run inside keeps the command one code span.
    fence = "`" * (max(map(len, re.findall(r"`+", text)), default=0) + 1)
    code = f"{fence} {text} {fence}" if len(fence) > 1 else f"`{text}`"
    return f"- {code} -> {fact.outcome}" if fact.outcome else f"- {code}"


def _one_line(text: str) -> str:
    """Keeps one fact to one line, so per-line counting holds; multi-line commands are rare."""
    return " ↵ ".join(part.strip() for part in text.splitlines() if part.strip())


def _compose(facts: list[Fact], lines: list[str], kept: list[bool]) -> str:
    by_kind: dict[FactKind, list[str]] = {kind: [] for kind, _ in _SECTIONS}
    for f, line in itertools.compress(zip(facts, lines, strict=True), kept):
        by_kind[f.kind].append(line)
    out = [LEDGER_HEADING]
    for kind, title in _SECTIONS:
        out.extend([title, *by_kind[kind]] if by_kind[kind] else [])
    return "\n".join(out)
