"""The embedded store on SQLite."""

from contextwm.adapters.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
