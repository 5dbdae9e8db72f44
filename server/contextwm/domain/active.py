"""The rows of an agent's active context and their totals, as values."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from contextwm.domain.items import tool_of


@dataclass(frozen=True, slots=True)
class ActiveEntry:
    """An item of the active context, as much of it as the view needs."""

    seq: int
    role: str
    tokens: int
    tool: str | None = None  # tool name, for a tool output's placeholder
    kind: str = "message"  # "compaction" for a marker

    @classmethod
    def of(
        cls, seq: int, role: str, tokens: int, kind: str, metadata: Mapping[str, str]
    ) -> ActiveEntry:
        """The entry of a stored item (a tool output with the tool it came from)."""
        return cls(seq, role, tokens, tool_of(metadata) if role == "tool" else None, kind)


@dataclass(frozen=True, slots=True)
class Replacement:
    """A duplicate-read notice shown instead of a superseded item, and its token count."""

    seq: int
    text: str
    tokens: int


class Treatment(enum.StrEnum):
    AS_IS = "as_is"
    MASKED = "masked"
    DUPLICATE_READ = "duplicate_read"
    TRUNCATION_NOTICE = "truncation_notice"


@dataclass(frozen=True, slots=True)
class ActiveRow:
    """One row of the view: an item, or the notice standing for a run of removed items."""

    seq: int | None  # None for a truncation notice
    role: str
    tokens: int  # as sent
    original_tokens: int  # the stored item's tokens (a notice: the tokens it stands for)
    treatment: Treatment
    text: str | None  # None: send the item's own content


@dataclass(frozen=True, slots=True)
class ActiveTotals:
    tokens: int  # sum of ActiveRow.tokens: what the agent sends
    items: int  # item rows (not notices)
    stored_tokens: int  # stored tokens of those items
    masked_items: int
    masked_saved: int  # original minus placeholder tokens
    duplicate_items: int
    duplicate_saved: int
    truncated_items: int  # removed by truncations (notice tokens are in `tokens`)
    truncated_tokens: int
