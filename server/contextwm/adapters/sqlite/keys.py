"""API keys: one row each, with the digest of its token, never the token."""

from __future__ import annotations

import sqlite3

from contextwm.adapters.key_rows import KEY_COLUMNS, key_row, stored_key_of
from contextwm.adapters.sqlite.database import Database
from contextwm.domain.access import StoredKey
from contextwm.domain.errors import AlreadyExists
from contextwm.ports.key_store import KeyStore

_SELECT = f"SELECT {', '.join(KEY_COLUMNS)} FROM api_keys"


class KeyTables(Database, KeyStore):
    """API keys: one row each, with the digest of its token, never the token."""

    def add_key(self, stored: StoredKey) -> None:
        marks = ", ".join("?" * len(KEY_COLUMNS))
        with self._transaction() as db:
            try:
                db.execute(
                    f"INSERT INTO api_keys ({', '.join(KEY_COLUMNS)}) VALUES ({marks})",
                    key_row(stored),
                )
            except sqlite3.IntegrityError:
                raise AlreadyExists(f"API key {stored.key.key_id!r} already exists") from None

    def get_key(self, key_id: str) -> StoredKey | None:
        row = self._reader().execute(f"{_SELECT} WHERE key_id = ?", (key_id,)).fetchone()
        return stored_key_of(row) if row else None

    def list_keys(self) -> list[StoredKey]:
        rows = self._reader().execute(f"{_SELECT} ORDER BY created_at, key_id").fetchall()
        return [stored_key_of(r) for r in rows]

    def revoke_key(self, key_id: str, at: float) -> StoredKey | None:
        with self._transaction() as db:
            # COALESCE: a second revocation keeps the first time, which is when it stopped.
            db.execute(
                "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE key_id = ?",
                (at, key_id),
            )
            row = db.execute(f"{_SELECT} WHERE key_id = ?", (key_id,)).fetchone()
        return stored_key_of(row) if row else None

    def replace_token(self, key_id: str, token_digest: str) -> StoredKey | None:
        with self._transaction() as db:
            changed = db.execute(
                "UPDATE api_keys SET token_digest = ? WHERE key_id = ? AND revoked_at IS NULL",
                (token_digest, key_id),
            ).rowcount
            row = (
                db.execute(f"{_SELECT} WHERE key_id = ?", (key_id,)).fetchone() if changed else None
            )
        return stored_key_of(row) if row else None
