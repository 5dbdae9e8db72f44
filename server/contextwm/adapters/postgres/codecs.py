"""What PostgreSQL asks of values beyond the shared row codecs: user text with NUL characters
(which its text type refuses) and item filters as SQL."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from contextwm.adapters.store_rows import item_of, metadata_patterns
from contextwm.domain.items import Item, ItemFilter

_ESCAPE = "\x01"
_ESCAPED = re.compile("\x01(.)", re.DOTALL)


def text_in(text: str) -> str:
    """User text as a text column holds it: NUL, which PostgreSQL refuses and SQLite keeps,
    becomes \\x01 0, and \\x01 itself doubles, so text_out gives back exactly what came in."""
    if "\x00" not in text and _ESCAPE not in text:
        return text
    return text.replace(_ESCAPE, _ESCAPE * 2).replace("\x00", _ESCAPE + "0")


def text_out(text: str) -> str:
    """The user text text_in was given."""
    if _ESCAPE not in text:
        return text
    return _ESCAPED.sub(lambda m: "\x00" if m[1] == "0" else m[1], text)


def optional_in(text: str | None) -> str | None:
    return None if text is None else text_in(text)


def optional_out(text: str | None) -> str | None:
    return None if text is None else text_out(text)


def stored_item(row: Sequence[Any]) -> Item:
    """An item from a row of ITEM_COLUMNS, its content and file path decoded."""
    fields = list(row)
    fields[3] = text_out(fields[3])
    fields[8] = optional_out(fields[8])
    return item_of(fields)


def filter_sql(flt: ItemFilter | None) -> tuple[str, list[Any]]:
    """SQL conditions on items alias i for a filter: ' AND ...' and its parameters."""
    if flt is None or flt.empty:
        return "", []
    sql: list[str] = []
    params: list[Any] = []
    if flt.roles:
        sql.append("i.role = ANY(%s)")
        params.append(sorted(flt.roles))
    if flt.flags:
        sql.append("(i.flags & %s) = %s")
        params.extend([int(flt.flags), int(flt.flags)])
    if flt.since is not None:
        sql.append("i.ts >= %s")
        params.append(flt.since)
    if flt.until is not None:
        sql.append("i.ts < %s")
        params.append(flt.until)
    for k, v in sorted(flt.metadata.items()):
        sql.append("(" + " OR ".join(["strpos(i.metadata, %s) > 0"] * 4) + ")")
        params.extend(metadata_patterns(k, v))
    return " AND " + " AND ".join(sql), params
