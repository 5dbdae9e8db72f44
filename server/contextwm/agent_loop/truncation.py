"""Truncation: rows after the first user/assistant pair leave the active context under a
notice; the items stay stored and searchable."""

from __future__ import annotations

from dataclasses import dataclass

from contextwm.agent_loop.compaction import usage_now
from contextwm.agent_loop.parts import LoopParts
from contextwm.domain.errors import FailedPrecondition, InvalidArgument
from contextwm.domain.history import ContextEdit, EditKind, EventKind
from contextwm.domain.usage import Usage
from contextwm.llm_context.truncation_ranges import TruncationStrategy, truncation_range


@dataclass(frozen=True, slots=True)
class TruncateOutcome:
    seqs: tuple[int, ...]
    tokens_removed: int
    usage: Usage


def truncate(
    parts: LoopParts, namespace: str, conversation_id: str, strategy: str
) -> TruncateOutcome:
    """Removes rows after the first user/assistant pair from the active context.

    Raises:
        InvalidArgument: an unknown strategy. FailedPrecondition: nothing to remove.
    """
    try:
        how = TruncationStrategy(strategy.strip().lower())
    except ValueError:
        known = ", ".join(s.value for s in TruncationStrategy)
        raise InvalidArgument(f"unknown truncation strategy {strategy!r}; known: {known}") from None
    with parts.change(namespace, conversation_id) as change:
        rt = change.rt
        seqs = rt.active.item_seqs()
        removed = tuple(seqs[i] for i in truncation_range(rt.active.item_roles(), how))
        if not removed:
            raise FailedPrecondition(
                f"nothing to truncate with strategy {how.value}: the active context has"
                f" {len(seqs)} items, and a truncation keeps its first user/assistant pair"
                " and never separates a tool output from the turn that called it"
            )
        before = rt.active.totals()
        in_window = [s for s in removed if rt.window.get(s) is not None]
        now = parts.clock()
        change.touch()
        rt.active.truncate(removed)
        after = rt.active.totals()
        if after.tokens >= before.tokens:
            raise FailedPrecondition(
                f"truncating with strategy {how.value} would not make the active"
                f" context smaller: its {len(removed)} items hold fewer tokens than"
                " the notice that would replace them"
            )
        rt.reported = None
        removed_tokens = after.truncated_tokens - before.truncated_tokens
        edit = ContextEdit(
            rt.last_edit + 1,
            now,
            EditKind.TRUNCATION,
            removed,
            tokens_saved=before.tokens - after.tokens,
            detail=how.value,
        )
        change.emit(EventKind.TRUNCATION, edit)
        change.emit(EventKind.USAGE, rt.usage(parts.models))
        change.commit(lambda events: parts.store.commit_truncation(rt.key, edit, in_window, events))
        parts.vectors.archive(rt, in_window)
        rt.last_edit += 1
        return TruncateOutcome(removed, removed_tokens, usage_now(parts, rt))
