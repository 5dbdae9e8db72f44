"""API keys: one row each, with the digest of its token, never the token."""

from __future__ import annotations

import psycopg

from contextwm.adapters.key_rows import KEY_COLUMNS, key_row, stored_key_of
from contextwm.adapters.postgres.database import Database
from contextwm.domain.access import StoredKey
from contextwm.domain.errors import AlreadyExists
from contextwm.ports.key_store import KeyStore

_COLUMNS = ", ".join(KEY_COLUMNS)


class KeyTables(Database, KeyStore):
    """API keys: one row each, with the digest of its token, never the token. Every call reads
    the database, so a revocation by one replica holds on all of them at once."""

    def add_key(self, stored: StoredKey) -> None:
        marks = ", ".join(["%s"] * len(KEY_COLUMNS))
        try:
            with self._transaction() as db:
                db.execute(f"INSERT INTO api_keys ({_COLUMNS}) VALUES ({marks})", key_row(stored))
        except psycopg.errors.UniqueViolation:
            raise AlreadyExists(f"API key {stored.key.key_id!r} already exists") from None

    def get_key(self, key_id: str) -> StoredKey | None:
        with self._read() as db:
            row = db.execute(
                f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = %s", (key_id,)
            ).fetchone()
        return stored_key_of(row) if row else None

    def list_keys(self) -> list[StoredKey]:
        with self._read() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, key_id"
            ).fetchall()
        return [stored_key_of(r) for r in rows]

    def revoke_key(self, key_id: str, at: float) -> StoredKey | None:
        with self._transaction() as db:
            # COALESCE: a second revocation keeps the first time, which is when it stopped.
            row = db.execute(
                "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, %s) WHERE key_id = %s"
                f" RETURNING {_COLUMNS}",
                (at, key_id),
            ).fetchone()
        return stored_key_of(row) if row else None

    def replace_token(self, key_id: str, token_digest: str) -> StoredKey | None:
        with self._transaction() as db:
            row = db.execute(
                "UPDATE api_keys SET token_digest = %s WHERE key_id = %s AND revoked_at IS NULL"
                f" RETURNING {_COLUMNS}",
                (token_digest, key_id),
            ).fetchone()
        return stored_key_of(row) if row else None
