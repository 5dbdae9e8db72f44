"""The retention command: apply the policies now, or see what they would remove."""

from __future__ import annotations

import argparse

from contextwm_client import Client, ConversationRetention

from contextwm.cli import render


def retention(client: Client, args: argparse.Namespace) -> int:
    # No conversation and no namespace (before or after the command): every namespace.
    every = args.conversation is None and args.namespace is None
    report = client.apply_retention(
        args.conversation, dry_run=args.dry_run, every_namespace=every, namespace=args.namespace
    )
    if args.json:
        print(render.to_json(report))
        return 0
    for outcome in report.conversations:
        print(_outcome_line(outcome))
    verb = "would remove" if report.dry_run else "removed"
    print(
        f"{verb} {render.counted(report.items_removed, 'item')},"
        f" {report.conversations_removed} of them in whole conversations;"
        f" {render.counted(report.conversations_checked, 'conversation')} checked"
        + (" (dry run: nothing was removed)" if report.dry_run else "")
    )
    return 0


def _outcome_line(outcome: ConversationRetention) -> str:
    name = f"{outcome.namespace}/{outcome.conversation_id}"
    if outcome.conversation_removed:
        removed = render.counted(outcome.removed_by_inactivity, "item")
        return f"{name}: the whole conversation, {removed} (inactive)"
    more = f" and {outcome.more_seqs} more" if outcome.more_seqs else ""
    return (
        f"{name}: {render.counted(outcome.removed_by_age + outcome.removed_by_count, 'item')}"
        f" ({outcome.removed_by_age} by age, {outcome.removed_by_count} by count):"
        f" seqs {render.seq_ranges(outcome.seqs)}{more}"
    )
