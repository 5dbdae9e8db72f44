"""What the store holds, counted for a scope from one snapshot of it."""

from __future__ import annotations

from typing import Protocol

from contextwm.domain.scope import Scope
from contextwm.domain.stats import ScopeStats


class StatsStore(Protocol):
    """Read only; safe to call from several threads."""

    def stats(self, scope: Scope, model: str, after: tuple[str, str], limit: int) -> ScopeStats:
        """From one snapshot of the store: up to limit conversations of the scope after
        `after` (namespace, conversation id; ("", "") for the first), in that order, with
        their figures, the whole scope's figures, and the keys of all its conversations.
        Vectors are counted for model; index bytes are left at 0."""
        ...
