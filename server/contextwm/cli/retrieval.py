"""The retrieval commands: context (the enhanced context for a query) and search."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from contextwm_client import CategoryOptions, Client

from contextwm.cli import render


def context(client: Client, args: argparse.Namespace) -> int:
    categories: CategoryOptions | bool = args.categories
    if args.budgets or args.weights or args.files:
        categories = CategoryOptions(
            budgets=tuple(args.budgets),
            contributor_weights=dict(args.weights),
            files=tuple(args.files),
        )
    result = client.get_context(
        args.conversation,
        args.query,
        max_tokens=args.max_tokens,
        recent_share=args.recent_share,
        max_history_items=args.max_history_items,
        include_neighbors=args.include_neighbors,
        categories=categories,
        **_ranking(args),
    )
    if args.json:
        print(render.to_json(result))
        return 0
    print(result.text)
    if result.allocation is not None:  # on stderr: stdout stays the text for a prompt
        render.print_allocation(result.allocation, sys.stderr)
    return 0


def search(client: Client, args: argparse.Namespace) -> int:
    result = client.search(
        args.query,
        conversation_id=args.conversation,
        top_k=args.top_k,
        include_window=args.include_window,
        roles=args.roles,
        flags=args.flags,
        since=args.since,
        until=args.until,
        metadata=dict(args.metadata) or None,
        **_ranking(args),
    )
    if args.json:
        print(render.to_json(result))
    elif not result.hits:
        where = "" if args.include_window else " in the archive (--include-window: the window too)"
        print(f"no hits{where}", file=sys.stderr)
    else:
        for hit in result.hits:
            print(render.scored_line(hit))
    return 0


def _ranking(args: argparse.Namespace) -> dict[str, Any]:
    """The ranking options context and search share, as the client takes them."""
    return {
        "mode": args.mode,
        "similarity_threshold": args.similarity_threshold,
        "as_of": args.as_of,
        "time_hints": args.time_hints,
    }
