"""The export format: JSON Lines, one conversation after another, each a `conversation` line,
then a line per stored row, then an `end` line that counts the rows and carries a digest of
them, so that a file cut short or changed by hand is refused rather than half restored.

    {"type": "conversation", "format": 1, "namespace": "...", "conversation_id": "...", <columns>}
    {"type": "item", "seq": 1, "role": "user", "content": "...", ...}
    {"type": "compaction" | "fact" | "edit" | "checkpoint" | "event" | "session", ...}
    {"type": "end", "rows": {"item": 12, ...}, "digest": "sha256:..."}
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from contextwm.domain.errors import InvalidArgument
from contextwm.ports.conversation_transfer import ConversationDump

FORMAT = 1
CONVERSATION, END = "conversation", "end"
_HEAD_FIELDS = ("type", "format", "namespace", "conversation_id")


def row_type(table: str) -> str:
    """A row's type: its table's name in the singular (every table's name is a plural)."""
    return table.removesuffix("s")


def encode(record: dict[str, Any]) -> str:
    """One line (without its newline): JSON escapes NUL and line breaks inside strings."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _canonical(record: dict[str, Any]) -> bytes:
    return json.dumps(record, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def dump_lines(dump: ConversationDump) -> Iterator[str]:
    """A conversation as the lines of an export (vectors are not exported: a restore embeds
    the items again, with the model the server runs)."""
    digest = hashlib.sha256()
    counts: dict[str, int] = {}

    def line(record: dict[str, Any]) -> str:
        digest.update(_canonical(record))
        return encode(record)

    yield line(
        {
            "type": CONVERSATION,
            "format": FORMAT,
            "namespace": dump.namespace,
            "conversation_id": dump.conversation_id,
            **dump.conversation,
        }
    )
    for table, rows in dump.tables.items():
        kind = row_type(table)
        for row in rows:
            yield line({"type": kind, **row})
        counts[kind] = len(rows)
    yield encode({"type": END, "rows": counts, "digest": "sha256:" + digest.hexdigest()})


class DumpReader:
    """Reads an export a line at a time and hands back each conversation once its `end` line
    has checked it whole."""

    def __init__(self, tables: tuple[str, ...], namespace: str | None = None) -> None:
        """Args:
        tables: The tables a dump may carry rows of.
        namespace: Restores every conversation into this namespace instead of its own.
        """
        self._tables = {row_type(t): t for t in tables}
        self._namespace = namespace
        self._open: ConversationDump | None = None
        self._digest = hashlib.sha256()
        self._opened_at = 0

    def feed(self, line: str, number: int) -> ConversationDump | None:
        """Takes the input's line `number` (from 1); returns the conversation it ends, if any.

        Raises:
            InvalidArgument: for a line that is not part of an export, saying which and why.
        """
        if not line.strip():
            return None
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidArgument(f"line {number}: not JSON ({exc.msg})") from None
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == CONVERSATION:
            self._begin(record, number)
            return None
        if self._open is None:
            raise InvalidArgument(
                f"line {number}: a {kind!r} line before any conversation line: an export"
                ' starts each conversation with {"type": "conversation", ...}'
            )
        if kind == END:
            return self._end(record, number)
        table = self._tables.get(kind) if isinstance(kind, str) else None
        if table is None:
            raise InvalidArgument(
                f"line {number}: unknown type {kind!r}; expected one of"
                f" {sorted([CONVERSATION, END, *self._tables])}"
            )
        self._digest.update(_canonical(record))
        del record["type"]
        self._open.tables[table].append(record)
        return None

    def finish(self) -> None:
        """Raises InvalidArgument when the input ended inside a conversation."""
        if self._open is not None:
            raise InvalidArgument(
                f"the input ends inside conversation {self._open.conversation_id!r} (begun on"
                f" line {self._opened_at}) without its end line: it was cut short"
            )

    def _begin(self, record: dict[str, Any], number: int) -> None:
        if self._open is not None:
            raise InvalidArgument(
                f"line {number}: conversation {self._open.conversation_id!r} (line"
                f" {self._opened_at}) has no end line before the next conversation"
            )
        if record.get("format") != FORMAT:
            raise InvalidArgument(
                f"line {number}: export format {record.get('format')!r} is not one this server"
                f" reads ({FORMAT})"
            )
        namespace, conversation_id = record.get("namespace"), record.get("conversation_id")
        if not isinstance(namespace, str) or not isinstance(conversation_id, str):
            raise InvalidArgument(f"line {number}: namespace and conversation_id must be text")
        self._digest = hashlib.sha256(_canonical(record))
        self._opened_at = number
        self._open = ConversationDump(
            self._namespace or namespace,
            conversation_id,
            {k: v for k, v in record.items() if k not in _HEAD_FIELDS},
            {t: [] for t in self._tables.values()},
        )

    def _end(self, record: dict[str, Any], number: int) -> ConversationDump:
        dump = self._open
        assert dump is not None
        self._open = None
        counts = {row_type(t): len(rows) for t, rows in dump.tables.items() if rows}
        stated = {k: v for k, v in (record.get("rows") or {}).items() if v}
        if stated != counts:
            raise InvalidArgument(
                f"line {number}: conversation {dump.conversation_id!r} ends with rows {stated}"
                f" but has {counts}: lines are missing or added"
            )
        if record.get("digest") != "sha256:" + self._digest.hexdigest():
            raise InvalidArgument(
                f"line {number}: the digest of conversation {dump.conversation_id!r} does not"
                " match its lines: they were changed after the export"
            )
        return dump
