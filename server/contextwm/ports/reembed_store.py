"""Re-embedding in the store after a change of model: what is stale, and the switch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from contextwm.ports.vector_store import PendingVector


@dataclass(frozen=True, slots=True)
class StaleConversation:
    """A conversation whose stored vectors come from another model than the server's."""

    key: int
    namespace: str
    conversation_id: str
    model: str  # the model its vectors come from


class ReembedStore(Protocol):
    """Finds conversations embedded by another model and moves them to this one."""

    def stale_conversations(self, model: str, namespace: str | None) -> list[StaleConversation]:
        """Conversations whose vectors come from another model than model, of one namespace
        (None: every namespace), by namespace and id."""
        ...

    def unembedded_items(
        self, key: int, model: str, after_seq: int, limit: int
    ) -> list[PendingVector]:
        """One conversation's items after after_seq without a vector of model, in seq order,
        whatever model its other vectors come from."""
        ...

    def finish_reembed(self, key: int, model: str) -> int:
        """Drops the conversation's vectors of other models and records that its vectors come
        from model, in one transaction; returns how many vectors were dropped."""
        ...
