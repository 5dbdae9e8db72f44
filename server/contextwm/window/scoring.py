"""The relevance score that decides eviction: recency decay, importance, similarity, role bias."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.items import Flag, ScoreParts

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Clock:
    """The conversation's own clock: its newest timestamp and seq (not wall time)."""

    now: float
    last_seq: int


def recency_many(
    settings: ConversationSettings, clock: Clock, timestamps: Floats, seqs: Floats
) -> Floats:
    """Decay in 0..1: halves every recency_half_life_seconds of conversation time and, when
    recency_half_life_items > 0, every that many items appended since.

    Time alone cannot order a live session whose items all share one minute, and position
    alone ignores that a day-old item is stale; the product keeps both.
    """
    # A tiny half-life overflows the exponent to inf, and 0.5**inf is the right answer: 0.
    with np.errstate(over="ignore"):
        age = np.maximum(0.0, clock.now - timestamps)
        decay: Floats = np.power(0.5, age / settings.recency_half_life_seconds)
        if settings.recency_half_life_items > 0:
            steps = np.maximum(0.0, clock.last_seq - seqs)
            decay = decay * np.power(0.5, steps / settings.recency_half_life_items)
    return decay


def recency(settings: ConversationSettings, clock: Clock, timestamp: float, seq: int) -> float:
    """recency_many for one item, without numpy's per-call overhead (ranking calls it for
    every candidate)."""
    age = max(0.0, clock.now - timestamp) / settings.recency_half_life_seconds
    decay = 0.0 if age > 2000 else 0.5**age  # 0.5**2000 is below the smallest double anyway
    if settings.recency_half_life_items > 0:
        steps = max(0.0, clock.last_seq - seq) / settings.recency_half_life_items
        decay *= 0.0 if steps > 2000 else 0.5**steps
    return decay


def relevance_many(
    settings: ConversationSettings,
    clock: Clock,
    *,
    timestamps: Floats,
    seqs: Floats,
    roles: Sequence[str],
    flags: Sequence[Flag],
    similarities: Floats,
) -> tuple[Floats, Floats, Floats, Floats]:
    """The relevance of many items at once, as arrays: (score, recency, importance, role).
    score = weights.recency x recency + importance + weights.similarity x similarity + role.
    The eviction path scores the whole window on every append; one numpy pass is most of an
    append's CPU time saved over a Python call per item.

    The sum is not capped at 1.0: a cap makes every important item tie, and the eviction
    order among them would then be arbitrary.
    """
    w = settings.weights
    decay = recency_many(settings, clock, timestamps, seqs)
    importance_of, role_of = w.importance_of, w.role.get
    importance = np.array([importance_of(f) for f in flags], dtype=np.float64)
    role = np.array([role_of(r, 0.0) for r in roles], dtype=np.float64)
    score: Floats = w.recency * decay + importance + w.similarity * similarities + role
    return score, decay, importance, role


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
    """relevance_many for one item, with its parts."""
    score, decay, importance, role_bias = relevance_many(
        settings,
        clock,
        timestamps=np.array([timestamp]),
        seqs=np.array([float(seq)]),
        roles=[role],
        flags=[flags],
        similarities=np.array([similarity]),
    )
    parts = ScoreParts(
        recency=float(decay[0]),
        importance=float(importance[0]),
        similarity=similarity,
        role=float(role_bias[0]),
    )
    return float(score[0]), parts
