"""Where a data directory keeps what: the SQLite store, the index files, the server's lock."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STORE_FILE = "contextwm.sqlite3"
INDEX_DIR = "indexes"
LOCK_FILE = "contextwm.lock"
REPLICA_FILE = "replica-name"


@dataclass(frozen=True)
class DataDir:
    """A data directory (`--data-dir`) and the paths inside it."""

    root: Path

    @property
    def store(self) -> Path:
        """The SQLite file: everything the server knows (the index files are derived)."""
        return self.root / STORE_FILE

    @property
    def indexes(self) -> Path:
        """One folder per embedding model, one `<conversation key>.faiss` file in each."""
        return self.root / INDEX_DIR

    @property
    def lock(self) -> Path:
        return self.root / LOCK_FILE

    @property
    def replica_name(self) -> Path:
        """The name this directory's server claims work under in a shared store."""
        return self.root / REPLICA_FILE

    def index_dir(self, model_name: str) -> Path:
        return self.indexes / model_name
