"""Applying retention policies: each conversation's plan made from the store without its
lock, then carried out in small units of work that check every item again under the lock."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.validation import namespace_of
from contextwm.domain import deadlines
from contextwm.domain.errors import NotFound
from contextwm.domain.retention import RetentionPolicy
from contextwm.domain.scope import Scope
from contextwm.ports.checkpoint_store import CheckpointStore
from contextwm.ports.conversation_store import ConversationRecord, ConversationStore
from contextwm.ports.retention_store import ConversationActivity, RetentionStore
from contextwm.retention.outcomes import ConversationOutcome, RetentionReport
from contextwm.retention.plan import Reason, inactive, kept_for, plan_items, removable, too_old

log = logging.getLogger(__name__)

# Items removed per unit of work: each holds the conversation's lock for a few milliseconds,
# so appends and searches wait at most that long.
CHUNK_ITEMS = 500


def _chunks(seqs: Sequence[int], size: int) -> Iterator[Sequence[int]]:
    for start in range(0, len(seqs), size):
        yield seqs[start : start + size]


class PlanStore(ConversationStore, CheckpointStore, RetentionStore, Protocol):
    """What a plan is made from: the conversations' activity and counts, their archived rows
    and the checkpoints that keep items."""


class Retention:
    """Thread-safe: every removal is a unit of work on its conversation."""

    def __init__(self, engine: ContextEngine, *, chunk_items: int = CHUNK_ITEMS) -> None:
        """Args:
        engine: the conversations, their store and the namespaces' policies.
        chunk_items: items removed per unit of work (the conversation's lock is let go
            between them).
        """
        self._engine = engine
        self._store: PlanStore = engine.store
        self._model = engine.embedder.model_name
        self._chunk = chunk_items

    def apply(
        self,
        scope: Scope,
        *,
        dry_run: bool,
        stop: Callable[[], bool] = lambda: False,
        keep_going: bool = False,
    ) -> RetentionReport:
        """Applies each conversation's policy in the scope, or says what it would remove.

        A real run counts what it removes on the engine's retention_counters.

        Args:
            scope: the conversations.
            dry_run: change nothing; report what a run now would remove.
            stop: asked between conversations and steps; True ends the run there.
            keep_going: log an unexpected failure on one conversation and go on with the
                next (the run counts as failed), rather than raise it.

        Returns:
            The conversations that lost items or went whole.

        Raises:
            NotFound: the scope names a conversation that does not exist.
            DeadlineExceeded: the caller's deadline passed (what was removed stays removed).
        """
        conversations = self._conversations(scope)
        now = self._engine.clock()
        outcomes: list[ConversationOutcome] = []
        checked = 0
        failed = False
        counters = self._engine.retention_counters
        try:
            for n, activity in enumerate(conversations, start=1):
                if stop():
                    break
                deadlines.check(f"applying retention to conversation {n} of {len(conversations)}")
                checked += 1
                try:
                    outcome = self._conversation(activity, now, dry_run, stop)
                except Exception:
                    if not keep_going:
                        raise
                    failed = True
                    record = activity.record
                    log.exception(
                        "retention of conversation %s/%s failed; going on with the next",
                        record.namespace,
                        record.conversation_id,
                    )
                    continue
                if outcome is not None:
                    outcomes.append(outcome)
        except Exception:
            failed = True
            raise
        finally:
            if not dry_run:
                counters.run_ended(failed=failed)
        return RetentionReport(dry_run, tuple(outcomes), checked)

    def _conversations(self, scope: Scope) -> list[ConversationActivity]:
        if scope.conversation_id is None:
            return self._store.conversation_activity(scope.namespace)
        ns, cid = namespace_of(scope.namespace or ""), scope.conversation_id
        record = self._store.get_conversation(ns, cid)
        last = None if record is None else self._store.last_active(record.key)
        if record is None or last is None:
            raise NotFound(f"conversation {cid!r} not found in namespace {ns!r}")
        return [ConversationActivity(record, last)]

    def _policy(self, record: ConversationRecord) -> RetentionPolicy:
        return self._engine.retention_policies.for_conversation(
            record.namespace, record.settings.retention
        )

    def _conversation(
        self, activity: ConversationActivity, now: float, dry_run: bool, stop: Callable[[], bool]
    ) -> ConversationOutcome | None:
        record = activity.record
        policy = self._policy(record)
        if policy.is_off:
            return None
        if inactive(activity.last_active, policy, now):
            return self._remove_conversation(record, policy, now, dry_run)
        if not policy.removes_items:
            return None
        rows = self._store.archived_rows(record.key, self._model)
        if not rows:
            return None
        kept = kept_for(record.active_start, self._store.checkpoints(record.key))
        plan = plan_items(rows, policy, kept, now)
        if not (plan.by_age or plan.by_count):
            return None
        ns, cid = record.namespace, record.conversation_id
        if dry_run:
            return ConversationOutcome.of_items(ns, cid, policy, plan.by_age, plan.by_count)
        # Age first: what it removes no longer counts towards the item limit.
        by_age = self._remove_items(record, plan.by_age, Reason.AGE, now, stop)
        by_count = self._remove_items(record, plan.by_count, Reason.COUNT, now, stop)
        if not (by_age or by_count):
            return None
        self._engine.retention_counters.add(items=len(by_age) + len(by_count))
        log.info(
            "retention removed %d items of %s/%s (%d by age, %d by count)",
            len(by_age) + len(by_count),
            ns,
            cid,
            len(by_age),
            len(by_count),
        )
        return ConversationOutcome.of_items(ns, cid, policy, by_age, by_count)

    def _remove_items(
        self,
        record: ConversationRecord,
        seqs: Sequence[int],
        reason: Reason,
        now: float,
        stop: Callable[[], bool],
    ) -> list[int]:
        """Removes the planned items a chunk at a time, each checked again under the lock
        (the conversation may have changed since the plan); returns the seqs removed."""
        engine = self._engine
        removed: list[int] = []
        for chunk in _chunks(seqs, self._chunk):
            if stop():
                break
            try:
                with engine.change(record.namespace, record.conversation_id) as change:
                    rt = change.rt
                    policy = self._policy(rt.record)  # its settings may have changed
                    kept = kept_for(rt.active_start, self._store.checkpoints(rt.key))
                    found = {
                        r.seq: r for r in self._store.archived_rows(rt.key, self._model, chunk)
                    }
                    rows = [
                        found[s]
                        for s in chunk
                        if s in found
                        and removable(found[s], policy, kept)
                        and (reason is not Reason.AGE or too_old(found[s], policy, now))
                    ]
                    if reason is Reason.COUNT:
                        # Never below the limit, whatever was archived or restored meanwhile.
                        limit = policy.max_archived_items or 0
                        rows = rows[: max(0, rt.archived - limit)] if limit else []
                    engine.removals.remove(change, rows)
            except NotFound:  # deleted meanwhile
                break
            removed += [r.seq for r in rows]
        return sorted(removed)

    def _remove_conversation(
        self, record: ConversationRecord, policy: RetentionPolicy, now: float, dry_run: bool
    ) -> ConversationOutcome | None:
        ns, cid = record.namespace, record.conversation_id
        if dry_run:
            items = self._store.counts(record.key, self._model).total
            return ConversationOutcome(ns, cid, policy, True, by_inactivity=items)
        engine = self._engine
        try:
            with engine.holding(ns, cid) as rt:
                # Checked again under the lock: an append or a new policy since the plan keeps
                # it. delete_conversation takes the same lock again (it is reentrant), so
                # nothing comes in between.
                policy = self._policy(rt.record)
                last = self._store.last_active(rt.key)
                if last is None or not inactive(last, policy, now):
                    return None
                items = engine.delete_conversation(ns, cid)
        except NotFound:  # deleted meanwhile
            return None
        engine.retention_counters.add(items=items, conversations=1)
        log.info(
            "retention removed conversation %s/%s (%d items; no append for %.0f s)",
            ns,
            cid,
            items,
            now - last,
        )
        return ConversationOutcome(ns, cid, policy, True, by_inactivity=items)
