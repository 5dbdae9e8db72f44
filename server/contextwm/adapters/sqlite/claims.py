"""Claims of items to embed, on a store only one server uses: there is no one to claim them
from, so claiming is reading the pending items."""

from __future__ import annotations

from collections.abc import Sequence

from contextwm.adapters.sqlite.database import Database
from contextwm.adapters.sqlite.vectors import pending_rows
from contextwm.ports.vector_claims import VectorClaims
from contextwm.ports.vector_store import PendingVector


class ClaimTables(Database, VectorClaims):
    """Claims nothing: the pending items are this server's alone."""

    def claim_pending(
        self, model: str, limit: int, after_id: int, owner: str, lease_seconds: float
    ) -> list[PendingVector]:
        return pending_rows(self._reader(), model, "i.id > ?", "i.id", after_id, limit)

    def claim_pending_of(
        self, model: str, key: int, limit: int, owner: str, lease_seconds: float
    ) -> list[PendingVector]:
        # Newest first along the (conv, seq) index: what readers wait for is the newest.
        return pending_rows(self._reader(), model, "i.conv = ?", "i.seq DESC", key, limit)

    def release_claims(self, owner: str, item_ids: Sequence[int] | None = None) -> None:
        """Nothing to release: what failed is still pending."""
