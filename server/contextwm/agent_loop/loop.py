"""The agent loop (seeds 001 and 003): usage, active context, compaction, truncation,
checkpoints and event watching, on the engine's conversation runtimes.

Every change follows the engine's rule: memory is updated, the events describing the new
state are numbered, all of it is committed in one transaction, and a failed commit reloads
memory from the store.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from contextwm.agent_loop.compaction_text import extractive_summary, marker_text, summary_request
from contextwm.agent_loop.events import Subscription
from contextwm.agent_loop.truncation import TruncationStrategy, truncation_range
from contextwm.agent_loop.usage import context_limits
from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.conversations.validation import check_item_tokens, page_size_of, page_token_seq
from contextwm.domain.active import ActiveEntry, ActiveRow, ActiveTotals
from contextwm.domain.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
)
from contextwm.domain.history import (
    Checkpoint,
    CheckpointChange,
    CompactionRecord,
    ContextEdit,
    EditKind,
    Event,
    EventKind,
    EventPayload,
)
from contextwm.domain.items import Flag, Item, ItemState
from contextwm.domain.usage import ContextLimits, Reported, Usage
from contextwm.window.window import WindowEntry

# The ledger's share of a summary request or marker: enough for instructions and paths,
# small next to any context limit worth managing.
LEDGER_MIN_TOKENS = 300
LEDGER_MAX_TOKENS = 2000
LEDGER_SHARE = 0.05
# An extractive summary gets at most this much, and at most a quarter of what it replaces.
EXTRACTIVE_MAX_TOKENS = 4000
_CHECKPOINT_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,128}$")


@dataclass(frozen=True, slots=True)
class ActiveView:
    """A row of the active context with its stored item (None for a truncation notice)."""

    row: ActiveRow
    item: Item | None


@dataclass(frozen=True, slots=True)
class ActivePage:
    views: tuple[ActiveView, ...]
    next_page_token: str
    total_rows: int
    usage: Usage


@dataclass(frozen=True, slots=True)
class CompactOutcome:
    compaction: CompactionRecord
    usage: Usage


@dataclass(frozen=True, slots=True)
class TruncateOutcome:
    seqs: tuple[int, ...]
    tokens_removed: int
    usage: Usage


@dataclass(frozen=True, slots=True)
class RestoreOutcome:
    checkpoint: Checkpoint
    reverted_items: int
    undone_edits: int
    usage: Usage


class AgentLoop:
    """Thread-safe: every operation holds its conversation's lock."""

    def __init__(self, engine: ContextEngine) -> None:
        self.engine = engine
        self.store = engine.store

    # ------------------------------------------------------------ usage and active context

    def usage(self, namespace: str, conversation_id: str, reported: int | None = None) -> Usage:
        """The usage figure, with the summary request when should_compact is set.

        Args:
            reported: the provider's count of its last request (input + cache-read input
                tokens), kept until the active context shrinks.
        """
        if reported is not None and reported < 0:
            raise InvalidArgument(f"reported tokens must be at least 0, got {reported}")
        rt = self.engine.locked(namespace, conversation_id)
        try:
            if reported is not None:
                rt.reported = Reported(reported, rt.active.totals().tokens)
                self.store.set_reported(rt.key, rt.reported)
            return self._usage(rt, with_request=True)
        finally:
            rt.lock.release()

    def _usage(self, rt: ConversationRuntime, *, with_request: bool = False) -> Usage:
        usage = self.engine.usage_of(rt)
        if not (with_request and usage.should_compact):
            return usage
        counter = self.engine.counters(rt.record.settings.encoding)
        ledger = rt.ledger.render(counter, _ledger_budget(usage.limits))
        return dataclasses.replace(usage, summary_request=summary_request(ledger))

    def active_context(
        self, namespace: str, conversation_id: str, page_size: int, page_token: str
    ) -> ActivePage:
        """One page of the active context, rows in order, with their stored items."""
        size = page_size_of(page_size, self.engine.limits)
        start = page_token_seq(page_token)
        rt = self.engine.locked(namespace, conversation_id)
        try:
            total = rt.active.row_count()
            rows = rt.active.rows(start, start + size)
            items = self.store.get_items(rt.key, [r.seq for r in rows if r.seq is not None])
            views = tuple(
                ActiveView(r, items.get(r.seq) if r.seq is not None else None) for r in rows
            )
            more = start + size < total
            return ActivePage(views, str(start + size) if more else "", total, self._usage(rt))
        finally:
            rt.lock.release()

    # ------------------------------------------------------------ compaction

    def compact(self, namespace: str, conversation_id: str, summary: str | None) -> CompactOutcome:
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
        engine = self.engine
        rt = engine.locked(namespace, conversation_id)
        try:
            settings = rt.record.settings
            counter = engine.counters(settings.encoding)
            before = rt.active.totals()
            seqs = rt.active.item_seqs()
            if len(seqs) <= (1 if rt.active_start else 0):
                raise FailedPrecondition(
                    "nothing to compact: the active context holds no items after its last"
                    " compaction marker"
                )
            limits = context_limits(settings, engine.models)
            # The ledger may take a quarter of what is compacted, so that it cannot be the
            # reason a compaction fails to shrink the context.
            ledger = rt.ledger.render(counter, min(_ledger_budget(limits), before.tokens // 4))
            extractive = summary is None
            if summary is None:
                budget = min(EXTRACTIVE_MAX_TOKENS, max(64, before.tokens // 4))
                active_items = engine.store.get_items(rt.key, seqs)
                summary = extractive_summary(
                    [active_items[s] for s in seqs if s in active_items], counter, budget
                )
            number = rt.compactions + 1
            text = marker_text(number, summary.strip(), ledger, extractive=extractive)
            tokens = counter.count(text)
            check_item_tokens(tokens, engine.limits)
            _check_shrinks(
                tokens,
                before,
                limits,
                settings.compaction_threshold,
                settings.compaction_enabled,
            )
            now = engine.clock()
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
            try:
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
                events = engine.number_events(
                    rt, [(EventKind.COMPACTION, record), (EventKind.USAGE, engine.usage_of(rt))]
                )
                self.store.commit_compaction(rt.key, marker, record, edit, evicted, events)
            except BaseException:
                engine.reload(rt)
                raise
            engine.archive(rt, old_window)  # compacted: out of the window, into the index
            rt.archived += len(evicted)
            if not evicted:
                rt.window.add(WindowEntry(marker))
            rt.last_seq = marker.seq
            rt.last_ts = marker.timestamp
            rt.total += 1
            rt.tokens += marker.token_count
            rt.pending += 1
            rt.last_edit += 1
            rt.last_event = events[-1].number
            engine.on_append()
            engine.events.publish(rt.key, events)
            return CompactOutcome(record, self._usage(rt))
        finally:
            rt.lock.release()

    # ------------------------------------------------------------ truncation

    def truncate(self, namespace: str, conversation_id: str, strategy: str) -> TruncateOutcome:
        """Removes rows after the first user/assistant pair from the active context.

        Raises:
            InvalidArgument: an unknown strategy. FailedPrecondition: nothing to remove.
        """
        try:
            how = TruncationStrategy(strategy.strip().lower())
        except ValueError:
            known = ", ".join(s.value for s in TruncationStrategy)
            raise InvalidArgument(
                f"unknown truncation strategy {strategy!r}; known: {known}"
            ) from None
        engine = self.engine
        rt = engine.locked(namespace, conversation_id)
        try:
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
            now = engine.clock()
            try:
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
                events = engine.number_events(
                    rt, [(EventKind.TRUNCATION, edit), (EventKind.USAGE, engine.usage_of(rt))]
                )
                self.store.commit_truncation(rt.key, edit, in_window, events)
            except BaseException:
                engine.reload(rt)
                raise
            engine.archive(rt, in_window)
            rt.last_edit += 1
            rt.last_event = events[-1].number
            engine.events.publish(rt.key, events)
            return TruncateOutcome(removed, removed_tokens, self._usage(rt))
        finally:
            rt.lock.release()

    # ------------------------------------------------------------ checkpoints

    def create_checkpoint(self, namespace: str, conversation_id: str, name: str) -> Checkpoint:
        """Raises InvalidArgument for a bad name, AlreadyExists for one in use."""
        if not _CHECKPOINT_NAME.match(name):
            raise InvalidArgument(
                f"invalid checkpoint name {name!r}: use 1..128 characters, no control characters"
            )
        engine = self.engine
        rt = engine.locked(namespace, conversation_id)
        try:
            checkpoint = Checkpoint(
                name=name,
                at=engine.clock(),
                last_seq=rt.last_seq,
                active_tokens=rt.active.totals().tokens,
                compactions=rt.compactions,
                edit_id=rt.last_edit,
                active_start=rt.active_start,
                token_limit=rt.token_limit,
                state=rt.state.value,
                states=tuple(self.store.item_state_runs(rt.key)),
                reported=rt.reported,
            )
            events = engine.number_events(
                rt, [(EventKind.CHECKPOINT_CREATED, CheckpointChange(checkpoint))]
            )
            self.store.add_checkpoint(rt.key, checkpoint, events)
            rt.last_event = events[-1].number
            engine.events.publish(rt.key, events)
            return checkpoint
        finally:
            rt.lock.release()

    def list_checkpoints(self, namespace: str, conversation_id: str) -> list[Checkpoint]:
        rt = self.engine.runtime(namespace, conversation_id)
        return self.store.checkpoints(rt.key)

    def restore_checkpoint(self, namespace: str, conversation_id: str, name: str) -> RestoreOutcome:
        """Window, archive, active context and usage as they were at the checkpoint; later
        items stay stored but are reverted, later edits and compactions are undone.

        Raises:
            NotFound: no such checkpoint.
        """
        engine = self.engine
        rt = engine.locked(namespace, conversation_id)
        try:
            checkpoint = self.store.checkpoint(rt.key, name)
            if checkpoint is None:
                known = ", ".join(repr(c.name) for c in self.store.checkpoints(rt.key))
                raise NotFound(
                    f"conversation {conversation_id!r} has no checkpoint {name!r}"
                    f" (it has: {known or 'none'})"
                )
            reverted, undone = self.store.commit_restore(rt.key, checkpoint, engine.clock(), ())
            engine.reload(rt)
            if rt.deleted:
                raise NotFound(f"conversation {conversation_id!r} was deleted")
            # Settings are not part of a checkpoint: the restored window must fit today's.
            settings = rt.record.settings
            if not settings.adaptive_window:
                rt.token_limit = settings.window_max_tokens
            evicted = engine.evict_to_fit(rt)
            usage = self._usage(rt)
            # Recorded after the restore: a crash in between loses these two events, never
            # the restore itself (whose outcome the next usage call reports anyway).
            payloads: list[tuple[EventKind, EventPayload]] = [
                (EventKind.CHECKPOINT_RESTORED, CheckpointChange(checkpoint, reverted))
            ]
            if evicted:
                payloads.append((EventKind.EVICTION, tuple(evicted)))
            events = engine.number_events(rt, [*payloads, (EventKind.USAGE, usage)])
            self.store.record_events(rt.key, events)
            rt.last_event = events[-1].number
            engine.events.publish(rt.key, events)
            return RestoreOutcome(checkpoint, reverted, undone, usage)
        finally:
            rt.lock.release()

    # ------------------------------------------------------------ history and events

    def list_edits(
        self, namespace: str, conversation_id: str, page_size: int, page_token: str
    ) -> tuple[list[ContextEdit], str]:
        size = page_size_of(page_size, self.engine.limits)
        after = page_token_seq(page_token)
        rt = self.engine.runtime(namespace, conversation_id)
        edits = self.store.edits(rt.key, after_id=after, limit=size + 1)
        more = len(edits) > size
        return edits[:size], (str(edits[size - 1].id) if more else "")

    def list_items(
        self,
        namespace: str,
        conversation_id: str,
        page_size: int,
        page_token: str,
        states: Sequence[ItemState],
    ) -> tuple[list[Item], str, dict[int, CompactionRecord]]:
        """The full history: a page of items in seq order with their states, and the
        compaction records of the markers among them, by marker seq."""
        items, token = self.engine.list_items(
            namespace, conversation_id, page_size, page_token, states
        )
        markers = [i.seq for i in items if i.kind == "compaction"]
        if not markers:
            return items, token, {}
        rt = self.engine.runtime(namespace, conversation_id)
        return items, token, {c.marker_seq: c for c in self.store.compactions(rt.key, markers)}

    def watch(self, namespace: str, conversation_id: str, after: int) -> Watch:
        """A stream of the conversation's events after event number `after`.

        Raises:
            ResourceExhausted: over limits.max_watchers streams at once.
        """
        engine = self.engine
        if after < 0:
            raise InvalidArgument(f"after_event_id must be at least 0, got {after}")
        rt = engine.runtime(namespace, conversation_id)
        if engine.events.count() >= engine.limits.max_watchers:
            raise ResourceExhausted(
                f"{engine.limits.max_watchers} watch streams are open already"
                " (setting limits.max_watchers; each holds a server worker thread)"
            )
        subscription = engine.events.subscribe(rt.key)
        with rt.lock:
            current = rt.last_event
        return Watch(self, rt, subscription, after, current)


class Watch:
    """Replays kept events after `after`, then yields new ones until closed."""

    def __init__(
        self,
        loop: AgentLoop,
        rt: ConversationRuntime,
        subscription: Subscription,
        after: int,
        current: int,
    ) -> None:
        self._loop = loop
        self._rt = rt
        self._subscription = subscription
        self._after = after
        self._current = current

    def close(self) -> None:
        self._subscription.close()

    def __iter__(self) -> Iterator[Event]:
        store = self._loop.store
        last = self._after
        if self._current > last:
            first = store.first_event_number(self._rt.key)
            kept_from = first if first is not None else self._current + 1
            if kept_from > last + 1:
                missed = kept_from - 1 - last
                yield Event(kept_from - 1, self._loop.engine.clock(), EventKind.GAP, missed)
                last = kept_from - 1
            while last < self._current and not self._subscription.closed.is_set():
                page = store.events_after(self._rt.key, last, 500)
                if not page:
                    break
                for event in page:
                    if event.number > self._current:
                        break
                    yield event
                    last = event.number
                else:
                    continue
                break
        for event in self._subscription:
            if event.number > last:
                yield event
                last = event.number


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
