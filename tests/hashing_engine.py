"""The unit tests' engine: a ContextEngine on a SQLite file, with the hashing embedder's
vectors (fast, and the same for the same text)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.adapters.faiss_index import FaissIndexFiles
from contextwm.adapters.sqlite import SqliteStore
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.conversations.engine import ContextEngine


@contextlib.contextmanager
def hashing_engine(
    directory: Path, store: SqliteStore | None = None, **options: Any
) -> Iterator[ContextEngine]:
    """An engine on directory's db.sqlite3 (or on store, a SqliteStore of the test's own),
    its indexes under directory, with ContextEngine's keyword options; closes the store
    afterwards."""
    store = store or SqliteStore(directory / "db.sqlite3")
    embedder = HashingEmbedder(32)
    try:
        yield ContextEngine(
            store,
            embedder,
            FaissIndexFiles(directory / "indexes", embedder.dimension),
            token_counter,
            **options,
        )
    finally:
        store.close()
