"""What an operation over many conversations covers: one conversation, one namespace's
conversations, or every conversation of every namespace."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Scope:
    """namespace None: every namespace (conversation_id None too); conversation_id None:
    every conversation of the namespace."""

    namespace: str | None = None
    conversation_id: str | None = None

    def describe(self) -> str:
        if self.namespace is None:
            return "every namespace"
        if self.conversation_id is None:
            return f"namespace {self.namespace!r}"
        return f"conversation {self.conversation_id!r} of namespace {self.namespace!r}"
