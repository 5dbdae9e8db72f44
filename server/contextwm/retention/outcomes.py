"""What a retention run covers and what it removed (or, in a dry run, would remove)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextwm.domain.retention import RetentionPolicy

# Seqs listed per conversation; the rest are counted.
SEQS_SHOWN = 100


@dataclass(frozen=True, slots=True)
class ConversationOutcome:
    """What one conversation lost.

    Attributes:
        policy: the policy that applied (resolved: 0 is off).
        conversation_removed: it was inactive and went whole.
        by_age, by_count, by_inactivity: items removed for each reason.
        seqs: the removed items' seqs, ascending, at most SEQS_SHOWN (none when the whole
            conversation went); more_seqs counts the rest.
    """

    namespace: str
    conversation_id: str
    policy: RetentionPolicy
    conversation_removed: bool = False
    by_age: int = 0
    by_count: int = 0
    by_inactivity: int = 0
    seqs: tuple[int, ...] = ()
    more_seqs: int = 0

    @classmethod
    def of_items(
        cls,
        namespace: str,
        conversation_id: str,
        policy: RetentionPolicy,
        by_age: Sequence[int],
        by_count: Sequence[int],
    ) -> ConversationOutcome:
        seqs = sorted((*by_age, *by_count))
        return cls(
            namespace,
            conversation_id,
            policy,
            by_age=len(by_age),
            by_count=len(by_count),
            seqs=tuple(seqs[:SEQS_SHOWN]),
            more_seqs=max(0, len(seqs) - SEQS_SHOWN),
        )

    @property
    def items(self) -> int:
        return self.by_age + self.by_count + self.by_inactivity


@dataclass(frozen=True, slots=True)
class RetentionReport:
    """A run's outcome: the conversations that lost something, by namespace and id."""

    dry_run: bool
    conversations: tuple[ConversationOutcome, ...]
    checked: int  # conversations whose policy was applied

    @property
    def items_removed(self) -> int:
        return sum(c.items for c in self.conversations)

    @property
    def conversations_removed(self) -> int:
        return sum(c.conversation_removed for c in self.conversations)
