"""The conversation commands: append, pin and unpin, create, update, get, list, delete (with its
receipt, if asked), items."""

from __future__ import annotations

import argparse
import sys

from contextwm_client import Client, ConversationSettings, RetentionPolicy, ScoringWeights

from contextwm.cli import erasure, render


def append(client: Client, args: argparse.Namespace) -> int:
    content = sys.stdin.read() if args.content == "-" else args.content
    result = client.append(
        args.conversation,
        content,
        role=args.role,
        timestamp=args.timestamp,
        flags=args.flags,
        metadata=dict(args.metadata),
        idempotency_key=args.idempotency_key,
    )
    flags = f"; flags: {', '.join(result.flags)}" if result.flags else ""
    duplicate = " (duplicate: returned the earlier append)" if result.duplicate else ""
    print(f"appended seq {result.seq} ({result.token_count} tokens{flags}){duplicate}")
    if result.out_of_order:
        print("note: its timestamp is before that of an earlier item (kept as given)")
    if result.evicted_seqs:
        print(f"archived: {', '.join(str(seq) for seq in result.evicted_seqs)}")
    print(f"window: {render.window_text(result.window)}")
    return 0


def pin(client: Client, args: argparse.Namespace) -> int:
    item = client.pin(args.conversation, args.seq)
    print(f"pinned {item.conversation_id}#{item.seq}")
    return 0


def unpin(client: Client, args: argparse.Namespace) -> int:
    item = client.unpin(args.conversation, args.seq)
    print(f"unpinned {item.conversation_id}#{item.seq}")
    return 0


def _settings(args: argparse.Namespace) -> ConversationSettings:
    """The settings given as flags of create or update; those not given stay None."""
    return ConversationSettings(
        window_max_tokens=args.window_max_tokens,
        window_max_items=args.window_max_items,
        encoding=args.encoding,
        adaptive_window=args.adaptive_window,
        model=args.model,
        context_limit=args.context_limit,
        reserved_reply_tokens=args.reserved_reply_tokens,
        compaction_threshold=args.compaction_threshold,
        compaction_enabled=args.compaction,
        workspace_root=args.workspace_root,
        category_budgets=tuple(args.budgets) or None,
        contributor_weights=dict(args.weights) or None,
        recency_half_life_seconds=args.recency_half_life_seconds,
        recency_half_life_items=args.recency_half_life_items,
        focus_items=args.focus_items,
        similarity_threshold=args.similarity_threshold,
        detect_importance=args.detect_importance,
        weights=_weights(args),
        mask_tool_outputs_after_turns=args.mask_tool_outputs_after_turns,
        replace_duplicate_reads=args.replace_duplicate_reads,
        recent_min_items=args.recent_min_items,
        protected_tail_items=args.protected_tail_items,
        protected_tail_share=args.protected_tail_share,
        retention=_retention(args),
    )


def _weights(args: argparse.Namespace) -> ScoringWeights | None:
    if args.recency_weight is None and args.similarity_weight is None:
        return None
    return ScoringWeights(recency=args.recency_weight, similarity=args.similarity_weight)


def _retention(args: argparse.Namespace) -> RetentionPolicy | None:
    policy = RetentionPolicy(
        max_age_seconds=args.retention_max_age_seconds,
        max_archived_items=args.retention_max_archived_items,
        inactive_seconds=args.retention_inactive_seconds,
        remove_pinned=args.retention_remove_pinned,
    )
    return None if policy == RetentionPolicy() else policy


def create(client: Client, args: argparse.Namespace) -> int:
    conversation = client.create_conversation(args.conversation, settings=_settings(args))
    render.print_conversation(conversation)
    return 0


def update(client: Client, args: argparse.Namespace) -> int:
    render.print_conversation(client.update_conversation(args.conversation, _settings(args)))
    return 0


def get(client: Client, args: argparse.Namespace) -> int:
    render.print_conversation(client.get_conversation(args.conversation))
    return 0


def list_conversations(client: Client, args: argparse.Namespace) -> int:
    for conversation in client.iter_conversations():
        print(render.conversation_line(conversation))
    return 0


def delete(client: Client, args: argparse.Namespace) -> int:
    receipt = client.erase_conversation(args.conversation)
    print(f"deleted {args.conversation} ({render.counted(receipt.counts.items, 'item')})")
    if args.receipt:
        erasure.print_receipt(receipt)
    return 0


def items(client: Client, args: argparse.Namespace) -> int:
    shown = 0
    for item in client.iter_items(args.conversation, states=args.states):
        print(render.item_line(item))
        shown += 1
    if not shown:
        # On stderr, as search's "no hits": stdout stays empty for a script that counts lines.
        which = " or ".join(dict.fromkeys(args.states))
        print(f"no {which + ' ' if which else ''}items in {args.conversation}", file=sys.stderr)
    return 0
