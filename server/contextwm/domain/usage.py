"""The models table and how full an agent's LLM context is, as values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from contextwm.domain.active import ActiveTotals
from contextwm.domain.conversations import ENCODINGS


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One row of the server's models table (`[models.<name>]` in the settings file): a model's
    context limit, the tokens kept for its reply, and its encoding."""

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


@dataclass(frozen=True, slots=True)
class ContextLimits:
    """A conversation's effective limit; limit 0 means none (no automatic management)."""

    limit: int
    reserved: int

    @property
    def usable(self) -> int:
        return max(0, self.limit - self.reserved)


# A provider's report above this is a bug on the caller's side (no model's context comes
# near it); the bound keeps every sum of token counts well inside int64.
MAX_REPORTED_TOKENS = 1_000_000_000


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
