"""The relevance score that decides eviction: recency decay, importance, similarity, role bias."""

from __future__ import annotations

import math
from dataclasses import dataclass

from contextwm.core.model import ConversationSettings, Flag, ScoreParts


@dataclass(frozen=True, slots=True)
class Clock:
    """The conversation's own clock: its newest timestamp and seq (not wall time)."""

    now: float
    last_seq: int


def recency(settings: ConversationSettings, clock: Clock, timestamp: float, seq: int) -> float:
    """Decay in 0..1: halves every recency_half_life_seconds of conversation time and, when
    recency_half_life_items > 0, every that many items appended since.

    Time alone cannot order a live session whose items all share one minute, and position
    alone ignores that a day-old item is stale; the product keeps both (seed 004 used time only).
    """
    age = max(0.0, clock.now - timestamp)
    decay = math.pow(0.5, age / settings.recency_half_life_seconds)
    if settings.recency_half_life_items > 0:
        decay *= math.pow(0.5, max(0, clock.last_seq - seq) / settings.recency_half_life_items)
    return decay


def relevance(
    settings: ConversationSettings,
    clock: Clock,
    *,
    timestamp: float,
    seq: int,
    role: str,
    flags: Flag,
    similarity: float,
) -> tuple[float, ScoreParts]:
    """The seed-004 relevance score of a window item and its parts.

    Unlike the seed the sum is not capped at 1.0: a cap makes every important item tie, and
    the eviction order among them would then be arbitrary.
    """
    w = settings.weights
    parts = ScoreParts(
        recency=recency(settings, clock, timestamp, seq),
        importance=w.importance_of(flags),
        similarity=similarity,
        role=w.role.get(role, 0.0),
    )
    score = w.recency * parts.recency + parts.importance + w.similarity * similarity + parts.role
    return score, parts
