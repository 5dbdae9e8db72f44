"""What `contextwm check` reads from a store file, without writing it: SQLite's own integrity
report, the schema version, and per conversation the figures its invariants are judged by."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from contextwm.adapters.sqlite.guard import read_only
from contextwm.adapters.sqlite.vectors import archived_ids, archived_vectors
from contextwm.adapters.store_rows import settings_from_json
from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.items import ItemState


@dataclass(frozen=True)
class ConversationFigures:
    """One conversation as stored."""

    key: int
    namespace: str
    conversation_id: str
    last_seq: int
    # None when the stored settings do not decode (settings_error says why).
    settings: ConversationSettings | None
    settings_error: str
    token_limit: int | None
    states: Mapping[int, int]  # stored state value -> items (unknown values included)
    items: int
    first_seq: int | None
    top_seq: int | None
    window_tokens: int
    vectors: Mapping[str, int]  # model -> items that have a vector of it
    removed: int = 0  # items retention removed: gaps in the seqs


class StoreSurvey:
    """Read-only queries on one store file; no server may have it open (see guard.read_only).

    Raises sqlite3.DatabaseError where the file is too damaged to answer.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = read_only(path)

    def close(self) -> None:
        self._db.close()

    def integrity(self, max_errors: int = 20) -> list[str]:
        """PRAGMA integrity_check: ["ok"], or up to max_errors lines of what is wrong. Unlike
        the start-up quick_check it also matches every index entry against its row."""
        return [r[0] for r in self._db.execute(f"PRAGMA integrity_check({int(max_errors)})")]

    def foreign_key_violations(self) -> int:
        """Rows pointing at a parent that is gone (items of no conversation, ...)."""
        return len(self._db.execute("PRAGMA foreign_key_check").fetchall())

    def tables(self) -> set[str]:
        return {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    def schema_version(self) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return None if row is None else str(row[0])

    def word_index_rows(self) -> tuple[int, int]:
        """(items, rows of the full-text index): one row per item, always."""
        items = self._db.execute("SELECT count(*) FROM items").fetchone()[0]
        rows = self._db.execute("SELECT count(*) FROM items_fts").fetchone()[0]
        return int(items), int(rows)

    def vector_widths(self) -> dict[str, dict[int, int]]:
        """Per model, how many stored vectors have each byte length (one length per model)."""
        widths: dict[str, dict[int, int]] = defaultdict(dict)
        for model, length, count in self._db.execute(
            "SELECT model, length(vec), count(*) FROM vectors GROUP BY model, length(vec)"
        ):
            widths[model][int(length)] = int(count)
        return dict(widths)

    def conversations(self) -> Iterator[ConversationFigures]:
        db = self._db
        by_state: dict[int, dict[int, int]] = defaultdict(dict)
        seqs: dict[int, tuple[int, int, int]] = {}
        window_tokens: dict[int, int] = {}
        for key, state, count, first, top, tokens in db.execute(
            "SELECT conv, state, count(*), min(seq), max(seq), sum(tokens) FROM items"
            " GROUP BY conv, state"
        ):
            by_state[key][state] = count
            total, low, high = seqs.get(key, (0, first, top))
            seqs[key] = (total + count, min(low, first), max(high, top))
            if state == int(ItemState.WINDOW):
                window_tokens[key] = int(tokens)
        vectors: dict[int, dict[str, int]] = defaultdict(dict)
        for key, model, count in db.execute(
            "SELECT i.conv, v.model, count(*) FROM items i JOIN vectors v ON v.item = i.id"
            " GROUP BY i.conv, v.model"
        ):
            vectors[key][model] = count
        columns = {r[1] for r in db.execute("PRAGMA table_info(conversations)")}
        # Files older than retention have no such column, and no removed items.
        removed = "removed_items" if "removed_items" in columns else "0"
        for key, namespace, conversation_id, settings, last_seq, token_limit, gone in db.execute(
            "SELECT id, namespace, conversation_id, settings, last_seq, token_limit,"
            f" {removed} FROM conversations ORDER BY namespace, conversation_id"
        ):
            try:
                decoded, error = settings_from_json(settings), ""
            except (ValueError, TypeError, KeyError) as exc:
                decoded, error = None, f"{type(exc).__name__}: {exc}"
            total, first, top = seqs.get(key, (0, None, None))
            yield ConversationFigures(
                key=key,
                namespace=namespace,
                conversation_id=conversation_id,
                last_seq=last_seq,
                settings=decoded,
                settings_error=error,
                token_limit=token_limit,
                states=by_state.get(key, {}),
                items=total,
                first_seq=first,
                top_seq=top,
                window_tokens=window_tokens.get(key, 0),
                vectors=vectors.get(key, {}),
                removed=gone,
            )

    def archived_ids(self, key: int, model: str) -> npt.NDArray[np.int64]:
        """What the conversation's index of this model must hold (as the server decides)."""
        return archived_ids(self._db, key, model)

    def archived_vectors(
        self, key: int, model: str
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The archived items' seqs and stored vectors of this model: the index's truth."""
        return archived_vectors(self._db, key, model)
