"""The rows of one conversation, column for column, as both stores hold them: which columns a
dump reads and a load writes, in what order, and how the JSON ones are written, so that a
conversation copied from one store into the other is stored byte for byte as the first kept
it."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from contextwm.adapters.history_rows import checkpoint_of, decode_payload, fact_of, seqs_json
from contextwm.adapters.session_rows import session_of
from contextwm.adapters.store_rows import metadata_json, settings_from_json
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.facts import FactKind
from contextwm.domain.history import EditKind, EventKind
from contextwm.domain.items import ItemState
from contextwm.ports.conversation_transfer import DUMP_TABLES, ConversationDump


def _plain(value: Any) -> str:
    return json.dumps(value)


def _sorted(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


# What a column holds, checked when a dump comes from outside (a file): "?" allows null.
INT, FLOAT, TEXT, JSON = "int", "float", "text", "json"


@dataclass(frozen=True, slots=True)
class Table:
    """One table of a conversation's rows.

    Attributes:
        name: The table.
        kinds: The columns a dump carries (never the store's own ids), in order, and what
            each holds (INT, FLOAT, TEXT or JSON; "?" after it: may be null).
        order: The columns its rows are read in order of.
        insertion: Whether the store's insertion order (its rowid or identity column) comes
            after them.
        text: User text columns (PostgreSQL escapes NUL in them).
        json: JSON text columns, and how the stores write each: a dump carries them decoded
            and a load encodes them again the same way, giving the same text.
    """

    name: str
    kinds: Mapping[str, str]
    order: tuple[str, ...] = ()
    insertion: bool = False
    text: frozenset[str] = frozenset()
    json: Mapping[str, Callable[[Any], str | None]] = field(default_factory=dict)

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.kinds)


CONVERSATION = Table(
    "conversations",
    {
        "settings": JSON,
        "created_at": FLOAT,
        "last_seq": INT,
        "token_limit": INT + "?",
        "state": TEXT,
        "active_start": INT,
        "reported_tokens": INT + "?",
        "reported_server_tokens": INT + "?",
        "last_event": INT,
        "last_append_at": FLOAT + "?",
        "removed_items": INT,
        "embed_model": TEXT + "?",
    },
    json={"settings": _sorted},
)

TABLES: tuple[Table, ...] = (
    Table(
        "items",
        {
            "seq": INT,
            "role": TEXT,
            "content": TEXT,
            "ts": FLOAT,
            "tokens": INT,
            "flags": INT,
            "metadata": JSON + "?",
            "file_path": TEXT + "?",
            "file_kind": TEXT + "?",
            "state": INT,
            "idem": TEXT + "?",
            "kind": TEXT,
            "whole_file": INT + "?",
        },
        order=("seq",),
        text=frozenset({"content", "file_path", "idem"}),
        json={"metadata": metadata_json},
    ),
    Table(
        "compactions",
        {
            "number": INT,
            "at": FLOAT,
            "summary": TEXT,
            "extractive": INT,
            "marker_seq": INT,
            "items_archived": INT,
            "tokens_before": INT,
            "tokens_after": INT,
            "ledger": TEXT,
            "facts": JSON,
            "undone_at": FLOAT + "?",
        },
        insertion=True,
        text=frozenset({"summary", "ledger"}),
        json={"facts": _plain},
    ),
    Table(
        "facts",
        {"seq": INT, "kind": TEXT, "text": TEXT, "outcome": TEXT},
        order=("seq",),
        insertion=True,
        text=frozenset({"text", "outcome"}),
    ),
    Table(
        "edits",
        {
            "id": INT,
            "at": FLOAT,
            "kind": TEXT,
            "seqs": JSON,
            "related_seq": INT,
            "tokens_saved": INT,
            "detail": TEXT,
            "undone_at": FLOAT + "?",
        },
        order=("id",),
        text=frozenset({"detail"}),
        json={"seqs": seqs_json},
    ),
    Table(
        "checkpoints",
        {"name": TEXT, "at": FLOAT, "snapshot": JSON},
        insertion=True,
        json={"snapshot": _plain},
    ),
    Table(
        "events",
        {"number": INT, "at": FLOAT, "kind": TEXT, "payload": JSON},
        order=("number",),
        json={"payload": _plain},
    ),
    Table("sessions", {"doc": JSON}, json={"doc": _plain}),
)

assert tuple(t.name for t in TABLES) == DUMP_TABLES


def select_sql(table: Table, insertion_column: str, mark: str) -> str:
    """The query of a conversation's rows of `table`, its key bound to `mark`."""
    order = [*table.order, *([insertion_column] if table.insertion else [])]
    return f"SELECT {', '.join(table.columns)} FROM {table.name} WHERE conv = {mark}" + (
        f" ORDER BY {', '.join(order)}" if order else ""
    )


def decoded(
    table: Table, row: Sequence[Any], text_out: Callable[[str], str] | None = None
) -> dict[str, Any]:
    """A stored row by column name: JSON columns decoded and, given text_out, user text as
    the user wrote it."""
    out: dict[str, Any] = {}
    for column, value in zip(table.columns, row, strict=True):
        if value is not None:
            if column in table.json:
                value = json.loads(value)
            elif text_out is not None and column in table.text:
                value = text_out(value)
        out[column] = value
    return out


def encoded(
    table: Table, row: Mapping[str, Any], text_in: Callable[[str], str] | None = None
) -> tuple[Any, ...]:
    """The values a store writes for a row of `decoded`'s shape, in the table's column order."""
    out: list[Any] = []
    for column in table.columns:
        value = row.get(column)
        if value is not None:
            if column in table.json:
                value = table.json[column](value)
            elif text_in is not None and column in table.text:
                value = text_in(value)
        out.append(value)
    return tuple(out)


def vectors_by_model(
    dump: ConversationDump,
) -> dict[str, tuple[list[int], list[npt.NDArray[np.float32]]]]:
    """A dump's vectors as the stores write them: the seqs and vectors of each model."""
    out: dict[str, tuple[list[int], list[npt.NDArray[np.float32]]]] = {}
    for v in dump.vectors or ():
        seqs, vectors = out.setdefault(v.model, ([], []))
        seqs.append(v.seq)
        vectors.append(np.frombuffer(v.vector, dtype=np.float32))
    return out


def check_dump(dump: ConversationDump) -> None:
    """Raises InvalidArgument, saying where, unless every row of a dump (which may come from
    a file someone edited) has the columns of its table, of their kinds, and decodes as the
    stores decode it: nothing is written that a later read would fail on."""
    _check_row(CONVERSATION, dump.conversation, "the conversation")
    unknown = set(dump.tables) - set(DUMP_TABLES)
    if unknown:
        raise InvalidArgument(f"unknown tables {sorted(unknown)}; known: {list(DUMP_TABLES)}")
    for table in TABLES:
        for n, row in enumerate(dump.tables.get(table.name, ()), 1):
            _check_row(table, row, f"{table.name} row {n}")
    where = "the conversation"
    try:
        settings_from_json(CONVERSATION.json["settings"](dump.conversation["settings"]))
        seqs = [r["seq"] for r in dump.tables.get("items", ())]
        if seqs != sorted(set(seqs)) or (
            seqs and (seqs[0] < 1 or seqs[-1] > dump.conversation["last_seq"])
        ):
            raise ValueError("item seqs must rise, from 1, up to the conversation's last_seq")
        for n, r in enumerate(dump.tables.get("items", ()), 1):
            where = f"items row {n}"
            ItemState(r["state"])
            if r["metadata"] is not None and not all(
                isinstance(k, str) and isinstance(v, str) for k, v in dict(r["metadata"]).items()
            ):
                raise ValueError("metadata must map text to text")
        for n, r in enumerate(dump.tables.get("compactions", ()), 1):
            where = f"compactions row {n}"
            [fact_of(f) for f in r["facts"]]
        for n, r in enumerate(dump.tables.get("facts", ()), 1):
            where = f"facts row {n}"
            FactKind(r["kind"])
        for n, r in enumerate(dump.tables.get("edits", ()), 1):
            where = f"edits row {n}"
            EditKind(r["kind"])
            [int(s) for s in r["seqs"]]
        for n, r in enumerate(dump.tables.get("checkpoints", ()), 1):
            where = f"checkpoints row {n}"
            checkpoint_of(copy.deepcopy(r["snapshot"]))
        for n, r in enumerate(dump.tables.get("events", ()), 1):
            where = f"events row {n}"
            decode_payload(EventKind(r["kind"]), copy.deepcopy(r["payload"]))
        for n, r in enumerate(dump.tables.get("sessions", ()), 1):
            where = f"sessions row {n}"
            session_of(copy.deepcopy(r["doc"]))
    except InvalidArgument:
        raise
    except Exception as exc:  # whatever a decoder raises on a malformed value
        raise InvalidArgument(
            f"conversation {dump.conversation_id!r}, {where}: cannot be read back"
            f" ({type(exc).__name__}: {exc})"
        ) from None


_KINDS: dict[str, tuple[type, ...]] = {
    INT: (int,),
    FLOAT: (float, int),
    TEXT: (str,),
    JSON: (dict, list, str, int, float, bool),
}


def _check_row(table: Table, row: Mapping[str, Any], where: str) -> None:
    if not isinstance(row, Mapping):
        raise InvalidArgument(f"{where}: expected an object of columns")
    missing = [c for c, k in table.kinds.items() if c not in row and not k.endswith("?")]
    extra = sorted(set(row) - set(table.kinds))
    if missing or extra:
        raise InvalidArgument(
            f"{where}: "
            + "; ".join(
                ([f"missing {missing}"] if missing else [])
                + ([f"unknown {extra}"] if extra else [])
            )
        )
    for column, kind in table.kinds.items():
        value = row.get(column)
        if value is None:
            if not kind.endswith("?"):
                raise InvalidArgument(f"{where}: {column} may not be null")
            continue
        wanted = _KINDS[kind.rstrip("?")]
        if isinstance(value, bool) or not isinstance(value, wanted):
            raise InvalidArgument(
                f"{where}: {column} must be {kind.rstrip('?')}, not {value!r:.60}"
            )
