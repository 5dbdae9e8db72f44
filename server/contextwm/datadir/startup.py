"""What a server checks in its data directory before it serves: the store is sound, and it
is not missing while the files derived from it are there."""

from __future__ import annotations

from contextwm.adapters.sqlite.guard import UnusableStore, verify_store_file
from contextwm.datadir.layout import DataDir


def refuse_unusable(data: DataDir) -> None:
    """Raises UnusableStore when the directory's store must not be served: never start empty
    where a store was, never write into a damaged one."""
    store = data.store
    missing = not store.exists() and not store.is_symlink()
    if missing and data.indexes.is_dir() and any(data.indexes.rglob("*.faiss")):
        raise UnusableStore(
            f"{store} is missing, but {data.indexes} holds index files: this directory had a"
            f" store. Restore {store.name} from a backup; to start afresh instead, delete"
            f" {data.indexes} as well."
        )
    verify_store_file(store)
