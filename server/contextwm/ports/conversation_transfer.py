"""Copying a conversation out of a store and into one, row for row: what exports, restores
and moves between stores are built on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

# The tables a dump carries rows of, besides the conversation's own row.
DUMP_TABLES = ("items", "compactions", "facts", "edits", "checkpoints", "events", "sessions")


@dataclass(frozen=True, slots=True)
class StoredVector:
    """One item's stored vector: the model it comes from and its float32 bytes."""

    seq: int
    model: str
    vector: bytes


@dataclass(frozen=True, slots=True)
class ConversationDump:
    """Everything a store holds of one conversation, as both stores hold it.

    Attributes:
        namespace: Its namespace.
        conversation_id: Its id.
        conversation: Its own columns (settings, state, counters), by name; JSON columns
            decoded.
        tables: Its rows of every table of DUMP_TABLES, by table, each row by column
            name, in the order the store keeps them; JSON columns decoded. Derived rows
            (full-text postings, claims) are not part of it: a store derives them again.
        vectors: Its items' stored vectors, by seq; None when they were not asked for.
    """

    namespace: str
    conversation_id: str
    conversation: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    vectors: list[StoredVector] | None = None


class ConversationTransfer(Protocol):
    """Reads one conversation whole, from one snapshot, and writes one whole in one
    transaction: a copy is all there or not there at all."""

    def dump_conversation(self, key: int, vectors: bool = False) -> ConversationDump | None:
        """The conversation's rows as of one moment; None when it does not exist.

        Args:
            key: The conversation's key.
            vectors: Whether to read its stored vectors too.
        """
        ...

    def load_conversation(self, dump: ConversationDump) -> int:
        """Creates the conversation with exactly these rows (and vectors, if any); returns its
        key. Raises AlreadyExists when its namespace holds one of that id."""
        ...
