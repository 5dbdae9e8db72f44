"""How full an agent's LLM context is: the models table, context limits and the usage figure."""

from __future__ import annotations

from contextwm.domain.active import ActiveTotals
from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.usage import ContextLimits, Models, Reported, Usage


def check_model(settings: ConversationSettings, models: Models) -> None:
    """Raises InvalidArgument when the settings name a model the table does not have."""
    if settings.model and settings.model not in models:
        known = ", ".join(sorted(models)) or "none configured"
        raise InvalidArgument(
            f"unknown model {settings.model!r}; the server's models table has: {known}"
        )


def context_limits(settings: ConversationSettings, models: Models) -> ContextLimits:
    """The conversation's own values where set, else its model's."""
    spec = models.get(settings.model) if settings.model else None
    limit = settings.context_limit or (spec.context_limit if spec else 0)
    reserved = settings.reserved_reply_tokens or (spec.reserved_reply_tokens if spec else 0)
    return ContextLimits(limit, min(reserved, limit))


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
