"""A re-embed's progress: what it set out to do, what it has done, and how fast."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReembedProgress:
    """One progress report; see the ReembedProgress message of the proto."""

    model: str
    conversations_done: int
    conversations_total: int
    items_done: int
    items_total: int
    items_reused: int
    items_per_second: float
    namespace: str
    conversation_id: str
    finished: bool = False


class Tally:
    """The counts of one run, turned into ReembedProgress reports."""

    def __init__(self, model: str, conversations: int) -> None:
        self.model = model
        self.conversations_total = conversations
        self.conversations_done = 0
        self.items_done = 0
        self.items_total = 0
        self.items_reused = 0
        self.namespace = ""
        self.conversation_id = ""
        self._started = time.monotonic()
        # Items the current conversation was planned with; appends during the run add more.
        self._planned = 0
        self._embedded = 0

    def plan(self, missing: int, reused: int) -> None:
        """Adds a conversation's items still missing a vector, and those that have one."""
        self.items_total += missing
        self.items_reused += reused

    def start(self, namespace: str, conversation_id: str, planned: int) -> None:
        self.namespace, self.conversation_id = namespace, conversation_id
        self._planned, self._embedded = planned, 0

    def embedded(self, n: int) -> None:
        """n more items of the current conversation embedded; the total grows with items
        appended to it since the plan."""
        self.items_done += n
        self._embedded += n
        if self._embedded > self._planned:
            self.items_total += self._embedded - self._planned
            self._planned = self._embedded

    def dropped(self) -> None:
        """The current conversation was deleted: what it had left to do is done with."""
        self.items_total -= self._planned - self._embedded
        self._planned = self._embedded

    def report(self, *, finished: bool = False) -> ReembedProgress:
        elapsed = time.monotonic() - self._started
        return ReembedProgress(
            model=self.model,
            conversations_done=self.conversations_done,
            conversations_total=self.conversations_total,
            items_done=self.items_done,
            items_total=self.items_total,
            items_reused=self.items_reused,
            items_per_second=self.items_done / elapsed if elapsed > 0 else 0.0,
            namespace=self.namespace,
            conversation_id=self.conversation_id,
            finished=finished,
        )
