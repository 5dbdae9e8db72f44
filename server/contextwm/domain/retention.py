"""Retention policies: what the server removes by itself, set per namespace and per
conversation, field by field."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from contextwm.domain.checks import INT64_MAX, check_range

# Ages up to 31,000 years: far enough for any policy, near enough to stay exact in a float.
MAX_SECONDS = 1e12


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """Limits on what a conversation keeps. None leaves a field to the wider policy (the
    conversation's to its namespace's, the namespace's to the default); 0 switches a limit
    off.

    Attributes:
        max_age_seconds: archived and compacted items whose timestamp is older than this
            are removed.
        max_archived_items: beyond this many archived and compacted items, the oldest go.
        inactive_seconds: a conversation with no append for this long is removed whole.
        remove_pinned: whether the item limits may remove pinned items (unset: no).
    """

    max_age_seconds: float | None = None
    max_archived_items: int | None = None
    inactive_seconds: float | None = None
    remove_pinned: bool | None = None

    def over(self, base: RetentionPolicy) -> RetentionPolicy:
        """This policy's set fields, the base's for the others."""
        changes = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None
        }
        return dataclasses.replace(base, **changes)

    def resolved(self) -> RetentionPolicy:
        """Every field set: unset limits are off (0), unset remove_pinned is False."""
        return RetentionPolicy(
            max_age_seconds=self.max_age_seconds or 0.0,
            max_archived_items=self.max_archived_items or 0,
            inactive_seconds=self.inactive_seconds or 0.0,
            remove_pinned=bool(self.remove_pinned),
        )

    @property
    def removes_items(self) -> bool:
        """Whether an item limit is on."""
        return bool(self.max_age_seconds or self.max_archived_items)

    @property
    def is_off(self) -> bool:
        """Whether nothing is ever removed under it."""
        return not (self.removes_items or self.inactive_seconds)


def check_policy(policy: RetentionPolicy, where: str) -> None:
    """Raises InvalidArgument naming the first field out of range (as where.field).

    Args:
        policy: the policy.
        where: the name of the policy in messages, e.g. "retention".
    """
    if policy.max_age_seconds is not None:
        check_range(f"{where}.max_age_seconds", policy.max_age_seconds, 0, MAX_SECONDS)
    if policy.max_archived_items is not None:
        check_range(f"{where}.max_archived_items", policy.max_archived_items, 0, INT64_MAX)
    if policy.inactive_seconds is not None:
        check_range(f"{where}.inactive_seconds", policy.inactive_seconds, 0, MAX_SECONDS)


@dataclass(frozen=True, slots=True)
class RetentionPolicies:
    """The server's policies: the default, and per namespace the fields that differ."""

    default: RetentionPolicy = RetentionPolicy()
    namespaces: Mapping[str, RetentionPolicy] = field(default_factory=dict)

    def for_namespace(self, namespace: str) -> RetentionPolicy:
        """The namespace's own fields over the default's (fields may stay unset)."""
        own = self.namespaces.get(namespace)
        return self.default if own is None else own.over(self.default)

    def for_conversation(self, namespace: str, own: RetentionPolicy) -> RetentionPolicy:
        """The policy that applies to a conversation: its own fields over its namespace's,
        resolved (every field set)."""
        return own.over(self.for_namespace(namespace)).resolved()
