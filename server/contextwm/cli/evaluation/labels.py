"""Labelled queries: JSON Lines, one query a line, read with errors that name the line.

Each line: ``conversation`` and ``query``; the items that answer it as ``expected`` (seqs)
or ``expected_metadata`` (``{"key": ["value", ...]}``: the items whose metadata has one of
these values); optional ``namespace``, ``as_of`` (ISO 8601, when the query is asked; naive
is UTC), ``kind`` (a category reported apart) and ``budgets`` (token budgets for this line).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from contextwm.cli.render import not_json

FIELDS = frozenset(
    {
        "conversation",
        "query",
        "expected",
        "expected_metadata",
        "namespace",
        "as_of",
        "kind",
        "budgets",
    }
)


class LabelError(ValueError):
    """A labelled query that cannot be used; the message names its line."""


@dataclass(frozen=True, slots=True)
class Label:
    line: int
    conversation: str
    query: str
    expected: tuple[int, ...]  # seqs; empty when expected_metadata names the items
    expected_metadata: tuple[str, frozenset[str]] | None
    namespace: str | None = None
    as_of: datetime | None = None
    kind: str = ""
    budgets: tuple[int, ...] = ()

    def expected_seqs(self, metadata: Mapping[int, Mapping[str, str]]) -> set[int]:
        """The seqs this query expects, given each item's metadata by seq.

        Raises:
            LabelError: expected_metadata names no item of the conversation.
        """
        if self.expected_metadata is None:
            return set(self.expected)
        key, values = self.expected_metadata
        found = {seq for seq, meta in metadata.items() if meta.get(key) in values}
        if not found:
            shown = ", ".join(sorted(values))
            raise LabelError(
                f"line {self.line}: no item of conversation {self.conversation!r} has"
                f" metadata {key} = {shown}"
            )
        return found


def read_labels(lines: Iterable[str]) -> list[Label]:
    """Every labelled query of a JSON Lines text (blank lines skipped).

    Raises:
        LabelError: a line is not a JSON object or lacks what a label needs.
    """
    out: list[Label] = []
    for number, text in enumerate(lines, start=1):
        if text.strip():
            out.append(_label(number, text))
    if not out:
        raise LabelError("no labelled queries: the file is empty")
    return out


def _label(line: int, text: str) -> Label:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LabelError(f"line {line}: {not_json(exc)}") from None
    if not isinstance(row, dict):
        raise LabelError(f"line {line}: a labelled query is a JSON object")
    unknown = sorted(set(row) - FIELDS)
    if unknown:
        raise LabelError(
            f"line {line}: unknown field {unknown[0]!r}; fields are {', '.join(sorted(FIELDS))}"
        )
    conversation = _text(row, "conversation", line)
    query = _text(row, "query", line)
    expected: tuple[int, ...] = ()
    metadata: tuple[str, frozenset[str]] | None = None
    if ("expected" in row) == ("expected_metadata" in row):
        raise LabelError(f"line {line}: give either expected (seqs) or expected_metadata")
    if "expected" in row:
        seqs = row["expected"]
        if not _ints(seqs) or not seqs or min(seqs) < 1:
            raise LabelError(f"line {line}: expected is a non-empty list of seqs (1 or more)")
        expected = tuple(seqs)
    else:
        metadata = _metadata(row["expected_metadata"], line)
    budgets = row.get("budgets", [])
    if not _ints(budgets) or any(b < 1 for b in budgets):
        raise LabelError(f"line {line}: budgets is a list of token counts (1 or more)")
    return Label(
        line,
        conversation,
        query,
        expected,
        metadata,
        namespace=_text(row, "namespace", line) if "namespace" in row else None,
        as_of=_time(row["as_of"], line) if "as_of" in row else None,
        kind=_text(row, "kind", line) if "kind" in row else "",
        budgets=tuple(budgets),
    )


def _text(row: Mapping[str, Any], key: str, line: int) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise LabelError(f"line {line}: {key} is missing or not a non-empty string")
    return value


def _ints(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    )


def _metadata(value: Any, line: int) -> tuple[str, frozenset[str]]:
    if (
        not isinstance(value, dict)
        or len(value) != 1
        or not all(
            isinstance(v, list) and v and all(isinstance(s, str) for s in v) for v in value.values()
        )
    ):
        raise LabelError(
            f"line {line}: expected_metadata is one key with a list of values,"
            ' e.g. {"turn": ["D1:3", "D2:5"]}'
        )
    ((key, values),) = value.items()
    return key, frozenset(values)


def _time(value: Any, line: int) -> datetime:
    try:
        when = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        when = None
    if when is None:
        raise LabelError(f"line {line}: as_of is not an ISO 8601 time: {value!r}")
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
