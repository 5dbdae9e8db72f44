"""How full an agent's LLM context is: the models table, context limits and the usage figure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from contextwm.agent_loop.active_context import ActiveTotals
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.model import ENCODINGS, ConversationSettings


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One row of the server's models table (seed 001's models.json)."""

    name: str
    context_limit: int
    reserved_reply_tokens: int = 0
    encoding: str = "cl100k_base"

    def __post_init__(self) -> None:
        if self.context_limit <= 0:
            raise ValueError(f"model {self.name!r}: context_limit must be positive")
        if not (0 <= self.reserved_reply_tokens < self.context_limit):
            raise ValueError(
                f"model {self.name!r}: reserved_reply_tokens must be at least 0 and below"
                " context_limit"
            )
        if self.encoding not in ENCODINGS:
            raise ValueError(
                f"model {self.name!r}: unknown encoding {self.encoding!r};"
                f" supported: {', '.join(ENCODINGS)}"
            )


Models = Mapping[str, ModelSpec]


def check_model(settings: ConversationSettings, models: Models) -> None:
    """Raises InvalidArgument when the settings name a model the table does not have."""
    if settings.model and settings.model not in models:
        known = ", ".join(sorted(models)) or "none configured"
        raise InvalidArgument(
            f"unknown model {settings.model!r}; the server's models table has: {known}"
        )


@dataclass(frozen=True, slots=True)
class ContextLimits:
    """A conversation's effective limit; limit 0 means none (no automatic management)."""

    limit: int
    reserved: int

    @property
    def usable(self) -> int:
        return max(0, self.limit - self.reserved)


def context_limits(settings: ConversationSettings, models: Models) -> ContextLimits:
    """The conversation's own values where set, else its model's."""
    spec = models.get(settings.model) if settings.model else None
    limit = settings.context_limit or (spec.context_limit if spec else 0)
    reserved = settings.reserved_reply_tokens or (spec.reserved_reply_tokens if spec else 0)
    return ContextLimits(limit, min(reserved, limit))


@dataclass(frozen=True, slots=True)
class Reported:
    """The provider's count at some moment, and the server's count at that moment: what was
    appended since is added to it, so a report stays useful until the context shrinks."""

    tokens: int
    server_tokens: int


@dataclass(frozen=True, slots=True)
class Usage:
    active_tokens: int
    reported_tokens: int
    used_tokens: int
    source: str
    limits: ContextLimits
    fill_ratio: float
    threshold: float
    compaction_enabled: bool
    should_compact: bool
    summary_request: str
    compactions: int
    active_items: int
    model: str
    totals: ActiveTotals


def measure(
    settings: ConversationSettings,
    models: Models,
    totals: ActiveTotals,
    reported: Reported | None,
    *,
    compactions: int,
    compactable: bool,
) -> Usage:
    """The usage figure; summary_request is left empty for the caller to fill.

    Args:
        compactable: whether a compaction could shrink the active context (it holds more
            than a compaction marker); should_compact is never set when it could not, so an
            agent cannot loop on compactions that are refused.
    """
    limits = context_limits(settings, models)
    reported_now = 0
    if reported is not None:
        reported_now = max(0, reported.tokens + totals.tokens - reported.server_tokens)
    used = max(totals.tokens, reported_now)
    fill = used / limits.usable if limits.usable else 0.0
    should = (
        settings.compaction_enabled
        and limits.limit > 0
        and compactable
        and fill >= settings.compaction_threshold
    )
    return Usage(
        active_tokens=totals.tokens,
        reported_tokens=reported_now,
        used_tokens=used,
        source="reported" if reported_now > totals.tokens else "server",
        limits=limits,
        fill_ratio=fill,
        threshold=settings.compaction_threshold,
        compaction_enabled=settings.compaction_enabled,
        should_compact=should,
        summary_request="",
        compactions=compactions,
        active_items=totals.items,
        model=settings.model,
        totals=totals,
    )
