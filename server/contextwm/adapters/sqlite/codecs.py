"""Item filters and full-text queries as SQLite SQL."""

from __future__ import annotations

from typing import Any

from contextwm.adapters.store_rows import metadata_patterns
from contextwm.domain.items import ItemFilter


def filter_sql(flt: ItemFilter | None) -> tuple[str, list[Any]]:
    """SQL conditions on items alias i for a filter: ' AND ...' and its parameters."""
    if flt is None or flt.empty:
        return "", []
    sql: list[str] = []
    params: list[Any] = []
    if flt.roles:
        sql.append(f"i.role IN ({','.join('?' * len(flt.roles))})")
        params.extend(sorted(flt.roles))
    if flt.flags:
        sql.append("(i.flags & ?) = ?")
        params.extend([int(flt.flags), int(flt.flags)])
    if flt.since is not None:
        sql.append("i.ts >= ?")
        params.append(flt.since)
    if flt.until is not None:
        sql.append("i.ts < ?")
        params.append(flt.until)
    for k, v in sorted(flt.metadata.items()):
        sql.append("(" + " OR ".join(["instr(i.metadata, ?) > 0"] * 4) + ")")
        params.extend(metadata_patterns(k, v))
    return " AND " + " AND ".join(sql), params


def fts_query(term: str, key: int) -> str:
    # The term is quoted, so no user text is ever parsed as FTS5 syntax, and scoped to the
    # content column, so it never matches a conversation tag.
    quoted = '"' + term.replace("\x00", "").replace('"', '""') + '"'
    return f'tag:"c{key}" AND content:{quoted}'
