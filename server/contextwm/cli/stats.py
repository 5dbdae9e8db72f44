"""The stats command: what the server's store holds, per conversation and in total."""

from __future__ import annotations

import argparse
import dataclasses

from contextwm_client import Client, StatsResult

from contextwm.cli import render


def stats(client: Client, args: argparse.Namespace) -> int:
    if args.all_namespaces and args.conversation:
        raise ValueError("--all-namespaces covers every conversation: name no CONVERSATION")
    if args.all_namespaces and args.namespace not in (None, "default"):
        raise ValueError("--all-namespaces covers every namespace: leave out --namespace")
    result = _every_page(client, args.conversation, args.all_namespaces)
    if args.json:
        print(render.to_json(result))
        return 0
    for line in render.stats_table(
        result, namespaces=args.all_namespaces, total=args.conversation is None
    ):
        print(line)
    return 0


def _every_page(client: Client, conversation: str | None, all_namespaces: bool) -> StatsResult:
    """Every page's conversations in one result, with the totals of the last page read (each
    page carries the whole scope's)."""
    pages: list[StatsResult] = []
    token = ""
    while True:
        pages.append(
            client.get_stats(conversation, all_namespaces=all_namespaces, page_token=token)
        )
        token = pages[-1].next_page_token
        if not token:
            break
    rows = tuple(row for page in pages for row in page.conversations)
    return dataclasses.replace(pages[-1], conversations=rows)
