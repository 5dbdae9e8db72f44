"""The conversations of the store: their records, settings, item counts and clocks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.usage import Reported


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """A stored conversation; key is the store's own id, used by every other call."""

    key: int
    namespace: str
    conversation_id: str
    settings: ConversationSettings
    created_at: float
    last_seq: int
    token_limit: int | None
    state: str
    # The agent loop: where the active context starts (the last compaction marker, or 0),
    # the provider's last reported count, and the last event number.
    active_start: int = 0
    reported: Reported | None = None
    last_event: int = 0
    # The embedding model its stored vectors come from; None until it has any.
    embed_model: str | None = None


@dataclass(frozen=True, slots=True)
class ItemCounts:
    total: int
    archived: int  # archived or compacted: in the index
    pending_vectors: int
    reverted: int = 0
    tokens: int = 0  # summed token counts of every item


class ConversationStore(Protocol):
    """Creates, finds, lists, updates and deletes conversations; durable once a call returns."""

    def create_conversation(
        self, namespace: str, conversation_id: str, settings: ConversationSettings, now: float
    ) -> ConversationRecord: ...

    def get_conversation(
        self, namespace: str, conversation_id: str
    ) -> ConversationRecord | None: ...

    def conversation_record(self, key: int) -> ConversationRecord | None: ...

    def list_conversations(
        self, namespace: str, after: str, limit: int
    ) -> list[ConversationRecord]: ...

    def conversation_keys(self, namespace: str) -> list[tuple[int, str]]: ...

    def update_settings(
        self, key: int, settings: ConversationSettings, token_limit: int
    ) -> None: ...

    def delete_conversation(self, key: int) -> int: ...

    def counts(self, key: int, model: str) -> ItemCounts: ...

    def clock_bounds(self, key: int) -> tuple[float | None, float | None]:
        """Timestamps of the conversation's oldest and newest items."""
        ...
