"""Checkpoints: a named moment of a conversation, and going back to it (later items stay
stored but are reverted; later edits and compactions are undone)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from contextwm.agent_loop.compaction import usage_now
from contextwm.agent_loop.parts import LoopParts
from contextwm.domain.errors import InvalidArgument, NotFound
from contextwm.domain.history import Checkpoint, CheckpointChange, EventKind
from contextwm.domain.usage import Usage

_CHECKPOINT_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,128}$")


@dataclass(frozen=True, slots=True)
class RestoreOutcome:
    checkpoint: Checkpoint
    reverted_items: int
    undone_edits: int
    usage: Usage


def create_checkpoint(
    parts: LoopParts, namespace: str, conversation_id: str, name: str
) -> Checkpoint:
    """Raises InvalidArgument for a bad name, AlreadyExists for one in use."""
    if not _CHECKPOINT_NAME.match(name):
        raise InvalidArgument(
            f"invalid checkpoint name {name!r}: use 1..128 characters, no control characters"
        )
    with parts.change(namespace, conversation_id) as change:
        rt = change.rt
        checkpoint = Checkpoint(
            name=name,
            at=parts.clock(),
            last_seq=rt.last_seq,
            active_tokens=rt.active.totals().tokens,
            compactions=rt.compactions,
            edit_id=rt.last_edit,
            active_start=rt.active_start,
            token_limit=rt.token_limit,
            state=rt.state.value,
            states=tuple(parts.store.item_state_runs(rt.key)),
            reported=rt.reported,
        )
        change.emit(EventKind.CHECKPOINT_CREATED, CheckpointChange(checkpoint))
        change.commit(lambda events: parts.store.add_checkpoint(rt.key, checkpoint, events))
        return checkpoint


def restore_checkpoint(
    parts: LoopParts, namespace: str, conversation_id: str, name: str
) -> RestoreOutcome:
    """Window, archive, active context and usage as they were at the checkpoint.

    Raises:
        NotFound: no such checkpoint.
    """
    with parts.change(namespace, conversation_id) as change:
        rt = change.rt
        checkpoint = parts.store.checkpoint(rt.key, name)
        if checkpoint is None:
            known = ", ".join(repr(c.name) for c in parts.store.checkpoints(rt.key))
            raise NotFound(
                f"conversation {conversation_id!r} has no checkpoint {name!r}"
                f" (it has: {known or 'none'})"
            )
        reverted, undone = change.commit(
            lambda events: parts.store.commit_restore(rt.key, checkpoint, parts.clock(), events)
        )
        parts.runtimes.reload(rt)
        parts.runtimes.check_live(rt)
        # Settings are not part of a checkpoint: the restored window must fit today's.
        settings = rt.record.settings
        if not settings.adaptive_window:
            rt.token_limit = settings.window_max_tokens
        evicted = parts.appends.evict_to_fit(change)
        usage = usage_now(parts, rt)
        # Recorded after the restore: a crash in between loses these events, never the
        # restore itself (whose outcome the next usage call reports anyway).
        change.emit(EventKind.CHECKPOINT_RESTORED, CheckpointChange(checkpoint, reverted))
        if evicted:
            change.emit(EventKind.EVICTION, tuple(evicted))
        change.emit(EventKind.USAGE, usage)
        change.commit(lambda events: parts.store.record_events(rt.key, events))
        return RestoreOutcome(checkpoint, reverted, undone, usage)
