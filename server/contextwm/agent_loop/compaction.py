"""Compaction: the active context replaced by one marker (a summary and the fact ledger);
what it replaced is archived, never deleted. And the usage figure that asks for it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from contextwm.agent_loop.parts import LoopParts
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.conversations.validation import check_item_tokens
from contextwm.domain.active import ActiveEntry, ActiveTotals
from contextwm.domain.errors import FailedPrecondition, InvalidArgument
from contextwm.domain.history import CompactionRecord, ContextEdit, EditKind, EventKind
from contextwm.domain.items import Flag, Item, ItemState
from contextwm.domain.usage import ContextLimits, Usage
from contextwm.llm_context.compaction_text import extractive_summary, marker_text, summary_request
from contextwm.llm_context.usage import context_limits
from contextwm.window.window import WindowEntry

# The ledger's share of a summary request or marker: enough for instructions and paths,
# small next to any context limit worth managing.
LEDGER_MIN_TOKENS = 300
LEDGER_MAX_TOKENS = 2000
LEDGER_SHARE = 0.05
# An extractive summary gets at most this much, and at most a quarter of what it replaces.
EXTRACTIVE_MAX_TOKENS = 4000


@dataclass(frozen=True, slots=True)
class CompactOutcome:
    compaction: CompactionRecord
    usage: Usage


def usage_now(parts: LoopParts, rt: ConversationRuntime, *, with_request: bool = False) -> Usage:
    """The usage figure (rt.lock held), with the summary request when with_request is set
    and the context should be compacted."""
    usage = rt.usage(parts.models)
    if not (with_request and usage.should_compact):
        return usage
    counter = parts.counters(rt.record.settings.encoding)
    ledger = rt.ledger.render(counter, _ledger_budget(usage.limits))
    return dataclasses.replace(usage, summary_request=summary_request(ledger))


def compact(
    parts: LoopParts, namespace: str, conversation_id: str, summary: str | None
) -> CompactOutcome:
    """Records a compaction with the given summary, or an extractive one when None.

    Raises:
        InvalidArgument: a blank summary.
        FailedPrecondition: nothing to compact, or a marker that would not make the active
            context smaller or would leave it at or over the threshold (the agent would be
            asked to compact again at once).
        ResourceExhausted: a marker over limits.max_item_tokens.
    """
    if summary is not None and not summary.strip():
        raise InvalidArgument(
            "summary is blank: send the summary your LLM wrote, or leave summary unset"
            " and the server writes an extractive one"
        )
    with parts.change(namespace, conversation_id) as change:
        rt = change.rt
        settings = rt.record.settings
        counter = parts.counters(settings.encoding)
        before = rt.active.totals()
        seqs = rt.active.item_seqs()
        if len(seqs) <= (1 if rt.active_start else 0):
            raise FailedPrecondition(
                "nothing to compact: the active context holds no items after its last"
                " compaction marker"
            )
        limits = context_limits(settings, parts.models)
        # The ledger may take a quarter of what is compacted, so that it cannot be the
        # reason a compaction fails to shrink the context.
        ledger = rt.ledger.render(counter, min(_ledger_budget(limits), before.tokens // 4))
        extractive = summary is None
        if summary is None:
            budget = min(EXTRACTIVE_MAX_TOKENS, max(64, before.tokens // 4))
            active_items = parts.store.get_items(rt.key, seqs)
            summary = extractive_summary(
                [active_items[s] for s in seqs if s in active_items], counter, budget
            )
        number = rt.compactions + 1
        text = marker_text(number, summary.strip(), ledger, extractive=extractive)
        tokens = counter.count(text)
        check_item_tokens(tokens, parts.limits)
        _check_shrinks(
            tokens, before, limits, settings.compaction_threshold, settings.compaction_enabled
        )
        now = parts.clock()
        marker = Item(
            conversation_id=rt.record.conversation_id,
            seq=rt.last_seq + 1,
            role="user",
            content=text,
            # On the conversation's own clock, so that historic data keeps its recency.
            timestamp=rt.last_ts if rt.last_ts is not None else now,
            token_count=tokens,
            flags=Flag.PINNED,
            metadata={"compaction": str(number)},
            file=None,
            state=ItemState.WINDOW,
            kind="compaction",
        )
        old_window = [e.item.seq for e in rt.window]
        evicted = [marker.seq] if tokens > rt.token_limit else []
        change.touch()
        rt.active.reset([ActiveEntry(marker.seq, "user", tokens, None, "compaction")])
        rt.active_start = marker.seq
        rt.compactions = number
        rt.reported = None
        record = CompactionRecord(
            number=number,
            at=now,
            summary=summary.strip(),
            extractive=extractive,
            marker_seq=marker.seq,
            items_archived=before.items,
            tokens_before=before.tokens,
            tokens_after=rt.active.totals().tokens,
            ledger=ledger,
            facts=tuple(rt.ledger.facts()),
        )
        edit = ContextEdit(
            rt.last_edit + 1,
            now,
            EditKind.COMPACTION,
            tuple(seqs),
            related_seq=marker.seq,
            tokens_saved=before.tokens - record.tokens_after,
            detail=f"compaction {number}" + (" (extractive)" if extractive else ""),
        )
        change.emit(EventKind.COMPACTION, record)
        change.emit(EventKind.USAGE, rt.usage(parts.models))
        change.commit(
            lambda events: parts.store.commit_compaction(
                rt.key, marker, record, edit, evicted, events
            )
        )
        parts.vectors.archive(rt, old_window)  # compacted: out of the window, into the index
        rt.archived += len(evicted)
        if not evicted:
            rt.window.add(WindowEntry(marker))
        rt.last_seq = marker.seq
        rt.last_ts = marker.timestamp
        rt.total += 1
        rt.tokens += marker.token_count
        rt.pending += 1
        rt.last_edit += 1
        parts.appends.on_append()
        return CompactOutcome(record, usage_now(parts, rt))


def _ledger_budget(limits: ContextLimits) -> int:
    if not limits.usable:
        return LEDGER_MAX_TOKENS
    return max(LEDGER_MIN_TOKENS, min(LEDGER_MAX_TOKENS, int(limits.usable * LEDGER_SHARE)))


def _check_shrinks(
    tokens: int, before: ActiveTotals, limits: ContextLimits, threshold: float, enabled: bool
) -> None:
    """A compaction must leave the active context smaller, and below the threshold: one that
    did not would be asked for again at once, and an agent loop could cycle forever."""
    if tokens >= before.tokens:
        raise FailedPrecondition(
            f"the compaction would not make the active context smaller: its marker (summary"
            f" and fact ledger) has {tokens} tokens, the active context {before.tokens};"
            " shorten the summary"
        )
    if enabled and limits.usable and tokens >= threshold * limits.usable:
        raise FailedPrecondition(
            f"the compaction would leave the context at {tokens / limits.usable:.0%} of its"
            f" usable {limits.usable} tokens, at or over the threshold {threshold:.0%}, so it"
            " would be asked for again at once; shorten the summary"
        )
