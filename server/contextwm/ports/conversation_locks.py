"""Holding a conversation against the writers of other servers that share the store, and the
version that tells a server its memory of a conversation is out of date."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol


@dataclass(slots=True)
class Held:
    """A conversation held by hold(): its stored version when taken (None: it no longer
    exists), and once the block ended, the version its writes made."""

    version: int | None


class ConversationLocks(Protocol):
    """A store several servers share moves a conversation's version with every hold that
    wrote; a store only one server uses keeps every version at 0."""

    def hold(self, key: int) -> AbstractContextManager[Held]:
        """Holds the conversation until the block ends: other servers' holds of it wait, and
        every write of the block commits with it, or none. Reentrant for the same key."""
        ...

    def version(self, key: int) -> int | None:
        """The conversation's stored version (None: no such conversation)."""
        ...
