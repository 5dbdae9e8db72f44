"""Items to embed, claimed by one server at a time: servers sharing a store embed each item
once, and a server that dies leaves its claims to the others once their lease runs out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from contextwm.ports.vector_store import PendingVector


class VectorClaims(Protocol):
    """A claim lasts until the item's vector is written (put_vectors ends it), it is
    released, or lease_seconds pass; then any server may claim the item again. A store only
    one server uses claims nothing: claiming is reading the pending items."""

    def claim_pending(
        self, model: str, limit: int, after_id: int, owner: str, lease_seconds: float
    ) -> list[PendingVector]:
        """Claims for owner up to limit items without a vector for model that no one else
        holds, in id order: those with ids above after_id, and those whose claim ran out
        (whatever their id: a cursor has passed them)."""
        ...

    def claim_pending_of(
        self, model: str, key: int, limit: int, owner: str, lease_seconds: float
    ) -> list[PendingVector]:
        """Claims like claim_pending one conversation's pending items, newest first."""
        ...

    def release_claims(self, owner: str, item_ids: Sequence[int] | None = None) -> None:
        """Ends owner's claims of these items (their embedding failed), or of every item
        (owner's previous process died holding them), at once: any server's next claim may
        take them."""
        ...
