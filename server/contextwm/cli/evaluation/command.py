"""`contextwm eval FILE`: the hit rate and recall of a user's labelled queries per budget,
beside BM25, dense and rank fusion on the same items."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from contextwm_client import Client

from contextwm.cli.evaluation.labels import read_labels
from contextwm.cli.evaluation.run import evaluate, report, rows

BUDGETS = (1024, 2048, 4096)


def add_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "file",
        type=Path,
        help="JSON Lines of labelled queries: conversation, query, and expected (seqs) or"
        ' expected_metadata ({"key": ["value", ...]}); optional namespace, as_of, kind, budgets',
    )
    sub.add_argument(
        "--budget",
        dest="budgets",
        type=int,
        action="append",
        default=[],
        metavar="TOKENS",
        help=f"a token budget, repeatable (default {', '.join(map(str, BUDGETS))})",
    )
    sub.add_argument(
        "--no-selectors", action="store_true", help="ask the service only, without the selectors"
    )
    sub.add_argument("--json", type=Path, metavar="PATH", help="also write every outcome here")


def run_eval(client: Client, args: argparse.Namespace) -> int:
    if any(b < 1 for b in args.budgets):
        raise ValueError("--budget: a budget is 1 token or more")
    try:
        text = args.file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {args.file}: {exc.strerror}") from None
    labels = read_labels(text.splitlines())
    budgets = tuple(args.budgets) or BUDGETS
    outcomes = evaluate(client, labels, budgets, selectors=not args.no_selectors)
    shown = sorted({o.budget for o in outcomes})
    report(outcomes, shown, sys.stdout)
    if args.json:
        args.json.write_text(json.dumps(rows(outcomes), indent=1) + "\n")
    return 0
