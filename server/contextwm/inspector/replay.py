"""A conversation's usage over its life, replayed from its items and context edits through the
active context's own rules (masking, replaced reads, truncation notices, compaction markers),
so that each point is what GetUsage counted after that item."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.domain.active import ActiveEntry, Replacement
from contextwm.llm_context.active_context import ActiveContext
from contextwm.ports.tokens import TokenCounter


@dataclass(frozen=True, slots=True)
class Rules:
    """The settings the active context follows, as the conversation has them now."""

    mask_after_turns: int
    replace_duplicate_reads: bool


def usage_points(
    items: Sequence[pb.Item],
    edits: Sequence[pb.ContextEdit],
    rules: Rules,
    counter: TokenCounter,
) -> list[dict[str, Any]]:
    """The active context's tokens after each item that was not reverted, with what dropped.

    Args:
        items: every item, in seq order.
        edits: the context edits a restore did not undo.
        rules: the conversation's masking and replaced-read settings.
        counter: the conversation's token counter (placeholders and notices are counted).

    Returns:
        One point per item: its seq, time (Unix seconds), tokens, and event ("" for none;
        compactions, truncations and replaced reads name themselves).
    """
    times = [_seconds(i.timestamp) for i in items]
    seqs = [i.seq for i in items]
    after: dict[int, list[pb.ContextEdit]] = {}
    for edit in edits:
        if edit.kind == "duplicate_read" and edit.seqs:
            # Made by the append of the later copy.
            after.setdefault(edit.related_seq, []).append(edit)
        elif edit.kind == "truncation" and edit.seqs:
            # Made when it was asked for: after the newest item then, and at the earliest
            # after the last item it removed.
            index = bisect.bisect_right(times, _seconds(edit.created_at)) - 1
            at = max(seqs[index] if index >= 0 else 0, max(edit.seqs))
            after.setdefault(at, []).append(edit)
    view = ActiveContext(counter, mask_after_turns=rules.mask_after_turns)
    points: list[dict[str, Any]] = []
    for item in items:
        if item.state == pb.ITEM_STATE_REVERTED:
            continue
        marker = item.kind == "compaction" and not item.compaction.undone
        view.append(
            ActiveEntry.of(
                item.seq,
                item.role,
                item.token_count,
                "compaction" if marker else "message",
                item.metadata,
            )
        )
        events = [f"compaction #{item.compaction.number}"] if marker else []
        for edit in after.get(item.seq, ()):
            if edit.kind == "truncation":
                view.truncate(edit.seqs)
                events.append(f"truncation: {edit.tokens_saved:,} tokens saved")
            elif rules.replace_duplicate_reads:
                view.replace(Replacement(edit.seqs[0], edit.detail, counter.count(edit.detail)))
                events.append(f"replaced read: {edit.tokens_saved:,} tokens saved")
        points.append(
            {
                "seq": item.seq,
                "time": _seconds(item.timestamp),
                "tokens": view.totals().tokens,
                "event": "; ".join(events),
            }
        )
    return points


def _seconds(stamp: Any) -> float:
    return float(stamp.seconds + stamp.nanos / 1e9)
