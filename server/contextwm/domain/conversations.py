"""A conversation's settings and how a request changes them, its state, its window's size."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from contextwm.domain.categories import (
    DEFAULT_BUDGETS,
    DEFAULT_CONTRIBUTOR_WEIGHTS,
    BudgetPatch,
    Category,
    CategoryBudget,
    ContributorType,
    patch_budgets,
    patch_contributor_weights,
)
from contextwm.domain.checks import check_range
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.items import FLAG_BY_NAME, ROLES, Flag, flag_names
from contextwm.domain.retention import RetentionPolicy, check_policy

ENCODINGS: tuple[str, ...] = ("cl100k_base", "o200k_base")


class ConversationState(enum.Enum):
    """What the conversation is about, detected from its recent items; the adaptive window
    sizes itself by it."""

    GENERAL = "general"
    CODING = "coding"
    DEBUGGING = "debugging"
    RESEARCH = "research"


DEFAULT_IMPORTANCE: Mapping[str, float] = MappingProxyType(
    {"pinned": 0.8, "error": 0.6, "code": 0.4, "question": 0.5, "solution": 0.7}
)


DEFAULT_ROLE_BIAS: Mapping[str, float] = MappingProxyType(
    {"user": 0.3, "assistant": 0.2, "error": 0.4, "file": 0.1, "system": 0.1, "tool": 0.0}
)


@dataclass(frozen=True, slots=True)
class ScoringWeights:
    """Weights of the relevance score that decides eviction: recency x decay + the importance
    of each flag + similarity x cosine to the focus + the role's bias."""

    recency: float = 0.3
    similarity: float = 0.4
    importance: Mapping[str, float] = field(default_factory=lambda: DEFAULT_IMPORTANCE)
    role: Mapping[str, float] = field(default_factory=lambda: DEFAULT_ROLE_BIAS)
    # The importance of each of the 32 flag combinations, worked out once.
    _by_flags: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        table = tuple(
            sum(self.importance.get(name, 0.0) for name in flag_names(Flag(bits)))
            for bits in range(32)
        )
        object.__setattr__(self, "_by_flags", table)

    def importance_of(self, flags: Flag) -> float:
        return self._by_flags[int(flags) & 31]


@dataclass(frozen=True, slots=True)
class ConversationSettings:
    """Effective per-conversation settings; every field has a default."""

    window_max_tokens: int = 8000
    window_max_items: int = 100
    encoding: str = "cl100k_base"
    recency_half_life_seconds: float = 86400.0
    recency_half_life_items: float = 50.0
    focus_items: int = 3
    similarity_threshold: float = 0.3
    # The newest window items every enhanced context keeps, whatever the query.
    recent_min_items: int = 2
    # The newest items no append evicts: at most this many, while they take at most this
    # share of the window's item and token limits (the newest item always). Eviction
    # chooses among the rest.
    protected_tail_items: int = 20
    protected_tail_share: float = 0.5
    adaptive_window: bool = False
    detect_importance: bool = True
    weights: ScoringWeights = ScoringWeights()
    # The agent loop: the LLM's context limit and when to ask for a summary.
    model: str = ""
    context_limit: int = 0  # 0: the model's, or none
    reserved_reply_tokens: int = 0  # 0: the model's, or none
    compaction_threshold: float = 0.85
    compaction_enabled: bool = True
    mask_tool_outputs_after_turns: int = 10
    replace_duplicate_reads: bool = True
    # Category budgets and contributors, for requests that ask for categories.
    workspace_root: str = ""  # "": the server's default workspace, if any
    category_budgets: Mapping[Category, CategoryBudget] = field(
        default_factory=lambda: DEFAULT_BUDGETS
    )
    contributor_weights: Mapping[ContributorType, float] = field(
        default_factory=lambda: DEFAULT_CONTRIBUTOR_WEIGHTS
    )
    # The conversation's own retention fields; unset ones are its namespace's.
    retention: RetentionPolicy = field(default_factory=RetentionPolicy)


@dataclass(frozen=True, slots=True)
class WeightsPatch:
    recency: float | None = None
    similarity: float | None = None
    importance: Mapping[str, float] = field(default_factory=dict)
    role: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SettingsPatch:
    """Settings as a request states them: None leaves a field as it is."""

    window_max_tokens: int | None = None
    window_max_items: int | None = None
    encoding: str | None = None
    recency_half_life_seconds: float | None = None
    recency_half_life_items: float | None = None
    focus_items: int | None = None
    similarity_threshold: float | None = None
    recent_min_items: int | None = None
    protected_tail_items: int | None = None
    protected_tail_share: float | None = None
    adaptive_window: bool | None = None
    detect_importance: bool | None = None
    weights: WeightsPatch | None = None
    model: str | None = None
    context_limit: int | None = None
    reserved_reply_tokens: int | None = None
    compaction_threshold: float | None = None
    compaction_enabled: bool | None = None
    mask_tool_outputs_after_turns: int | None = None
    replace_duplicate_reads: bool | None = None
    workspace_root: str | None = None
    category_budgets: Mapping[Category, BudgetPatch] | None = None
    contributor_weights: Mapping[ContributorType, float] | None = None
    retention: RetentionPolicy | None = None


# Patched field by field rather than replaced.
_MERGED = frozenset({"weights", "category_budgets", "contributor_weights", "retention"})


def apply_patch(base: ConversationSettings, patch: SettingsPatch) -> ConversationSettings:
    """Returns base with the patch's set fields applied, after validating them.

    Raises:
        InvalidArgument: naming the first field out of range.
    """
    changes: dict[str, object] = {}
    for f in dataclasses.fields(SettingsPatch):
        value = getattr(patch, f.name)
        if value is not None and f.name not in _MERGED:
            changes[f.name] = value
    merged = dataclasses.replace(base, **changes)  # type: ignore[arg-type]
    check_range("window_max_tokens", merged.window_max_tokens, 1, 10_000_000)
    check_range("window_max_items", merged.window_max_items, 1, 1_000_000)
    if merged.encoding not in ENCODINGS:
        raise InvalidArgument(
            f"unknown encoding {merged.encoding!r}; supported: {', '.join(ENCODINGS)}"
        )
    check_range("recency_half_life_seconds", merged.recency_half_life_seconds, 1e-3, 1e12)
    check_range("recency_half_life_items", merged.recency_half_life_items, 0, 1e12)
    check_range("focus_items", merged.focus_items, 1, 1000)
    check_range("similarity_threshold", merged.similarity_threshold, -1.0, 1.0)
    check_range("recent_min_items", merged.recent_min_items, 0, 1000)
    check_range("protected_tail_items", merged.protected_tail_items, 1, 1_000_000)
    check_range("protected_tail_share", merged.protected_tail_share, 0.0, 1.0)
    check_range("context_limit", merged.context_limit, 0, 100_000_000)
    check_range("reserved_reply_tokens", merged.reserved_reply_tokens, 0, 100_000_000)
    if merged.context_limit and merged.reserved_reply_tokens >= merged.context_limit:
        raise InvalidArgument(
            f"reserved_reply_tokens ({merged.reserved_reply_tokens}) must be below"
            f" context_limit ({merged.context_limit})"
        )
    if not (0.0 < merged.compaction_threshold <= 1.0):
        raise InvalidArgument(
            "compaction_threshold must be above 0 and at most 1 (a share of the usable"
            f" context), got {merged.compaction_threshold!r}; set compaction_enabled=false"
            " to switch it off"
        )
    check_range("mask_tool_outputs_after_turns", merged.mask_tool_outputs_after_turns, 0, 1e6)
    if len(merged.model) > 200:
        raise InvalidArgument("model must be at most 200 characters")
    if len(merged.workspace_root) > 4096 or "\0" in merged.workspace_root:
        raise InvalidArgument("workspace_root must be a path of at most 4096 characters")
    if patch.weights is not None:
        merged = dataclasses.replace(merged, weights=_apply_weights(merged.weights, patch.weights))
    if patch.category_budgets:
        merged = dataclasses.replace(
            merged, category_budgets=patch_budgets(merged.category_budgets, patch.category_budgets)
        )
    if patch.contributor_weights:
        merged = dataclasses.replace(
            merged,
            contributor_weights=patch_contributor_weights(
                merged.contributor_weights, patch.contributor_weights
            ),
        )
    if patch.retention is not None:
        check_policy(patch.retention, "retention")
        merged = dataclasses.replace(merged, retention=patch.retention.over(merged.retention))
    return merged


def _apply_weights(base: ScoringWeights, patch: WeightsPatch) -> ScoringWeights:
    for name, value in (("recency", patch.recency), ("similarity", patch.similarity)):
        if value is not None:
            check_range(f"weights.{name}", value, 0.0, 100.0)
    for key, value in patch.importance.items():
        if key not in FLAG_BY_NAME:
            raise InvalidArgument(f"weights.importance: unknown flag {key!r}")
        check_range(f"weights.importance[{key}]", value, -100.0, 100.0)
    for key, value in patch.role.items():
        if key not in ROLES:
            raise InvalidArgument(f"weights.role: unknown role {key!r}")
        check_range(f"weights.role[{key}]", value, -100.0, 100.0)
    importance = dict(base.importance)
    for key, value in patch.importance.items():
        importance["pinned" if key == "user_starred" else key] = value
    return ScoringWeights(
        recency=base.recency if patch.recency is None else patch.recency,
        similarity=base.similarity if patch.similarity is None else patch.similarity,
        importance=MappingProxyType(importance),
        role=MappingProxyType({**base.role, **patch.role}),
    )


@dataclass(frozen=True, slots=True)
class WindowStats:
    item_count: int
    token_count: int
    token_limit: int
    item_limit: int
