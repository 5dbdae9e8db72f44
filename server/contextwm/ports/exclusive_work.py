"""Background work that must run on one server at a time among those sharing the store."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol


class ExclusiveWork(Protocol):
    """Named work (retention's background run, a re-embed) done by one server at a time."""

    def exclusively(self, name: str) -> AbstractContextManager[bool]:
        """While the block runs, no other server sharing the store does the work of this name:
        yields True, or False at once when another server does it now (the caller skips it
        or says so). A store only one server uses always yields True."""
        ...
