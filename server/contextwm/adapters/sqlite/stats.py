"""The statistics: items, tokens, vectors and item times per conversation and for a scope,
counted by a few aggregate queries over covering indexes, from one snapshot."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from contextwm.adapters.sqlite.database import Database
from contextwm.adapters.stats_rows import StatsRow, store_stats
from contextwm.domain.scope import Scope
from contextwm.domain.stats import ConversationStats, ScopeStats
from contextwm.ports.stats_store import StatsStore

# Per group: items, tokens, oldest and newest timestamps, items with a vector of the model.
# items_stats covers the items' part. INDEXED BY because the planner would rather look
# each vector up by its rowid, which reads its 1.5 KiB row; vectors_model answers alone.
_FIGURES = (
    "count(*), coalesce(sum(i.tokens), 0), min(i.ts), max(i.ts), count(v.item)"
    " FROM items i LEFT JOIN vectors v INDEXED BY vectors_model"
    " ON v.model = ? AND v.item = i.id"
)

_ORDER = "ORDER BY c.namespace, c.conversation_id"


class StatsTables(Database, StatsStore):
    """The statistics of a scope, per conversation and in total."""

    def stats(self, scope: Scope, model: str, after: tuple[str, str], limit: int) -> ScopeStats:
        in_scope, scope_params = _scope(scope)
        on_page, page_params = _page(scope, after)
        page_sql = f"FROM conversations c WHERE {on_page} {_ORDER} LIMIT ?"
        with self._snapshot() as db:
            page = db.execute(
                f"SELECT c.id, c.namespace, c.conversation_id {page_sql}", (*page_params, limit)
            ).fetchall()
            rows: dict[int, list[StatsRow]] = defaultdict(list)
            for conv, *group in db.execute(
                f"SELECT i.conv, i.state, {_FIGURES} WHERE i.conv IN (SELECT c.id {page_sql})"
                " GROUP BY i.conv, i.state",
                (model, *page_params, limit),
            ):
                state, items, tokens, oldest, newest, vectors = group
                rows[conv].append((state, items, tokens, oldest, newest, vectors))
            scope_sql = f"SELECT c.id FROM conversations c WHERE {in_scope}"
            keys = db.execute(scope_sql, scope_params).fetchall()
            # Every item belongs to a conversation: the whole store needs no conversations.
            of_scope = "" if scope.namespace is None else f"WHERE i.conv IN ({scope_sql})"
            total = db.execute(
                f"SELECT i.state, {_FIGURES} {of_scope} GROUP BY i.state", (model, *scope_params)
            ).fetchall()
        return ScopeStats(
            conversations=tuple(
                ConversationStats(key, namespace, conversation_id, store_stats(rows[key]))
                for key, namespace, conversation_id in page
            ),
            total=store_stats(total),
            keys=tuple(key for (key,) in keys),
        )

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """This thread's reader inside one read transaction: every query sees the store as
        it was at the first, so a page and the totals agree while appends go on."""
        db = self._reader()
        db.execute("BEGIN")
        try:
            yield db
        finally:
            db.execute("COMMIT")


def _scope(scope: Scope) -> tuple[str, tuple[str, ...]]:
    """The scope's conversations, as a condition on `conversations c` and its parameters."""
    if scope.namespace is None:
        return "1", ()
    if scope.conversation_id is None:
        return "c.namespace = ?", (scope.namespace,)
    return "c.namespace = ? AND c.conversation_id = ?", (scope.namespace, scope.conversation_id)


def _page(scope: Scope, after: tuple[str, str]) -> tuple[str, tuple[str, ...]]:
    """The scope's conversations after (namespace, conversation id), in a condition each
    scope's index search can start from."""
    if scope.namespace is None:
        return "(c.namespace, c.conversation_id) > (?, ?)", after
    if scope.conversation_id is None:
        return "c.namespace = ? AND c.conversation_id > ?", (scope.namespace, after[1])
    return _scope(scope)
