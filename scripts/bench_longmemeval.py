"""Retrieval quality on real conversations: LongMemEval questions against simple selectors.

``datasets/longmemeval_dev`` holds 48 LongMemEval questions, each with its own haystack of
about 48 chat sessions (about 490 turns, 100k tokens): each haystack is one conversation,
replayed with the session dates as the items' timestamps, and its question is asked when the
data set says it is. A selector's turn costs ``role: content`` plus 4 tokens. How the run
goes, and the options it shares with the other conversation benchmarks, is in
``bench_conversations.py``; ``--haystack-tokens`` also cuts haystacks to a size where the
window holds a larger share.

Run (from the repository root)::

    scripts/bench longmemeval                       # about 16 minutes
    scripts/bench longmemeval --compare-ref a4438ca --json lme.json
    scripts/bench longmemeval --variant recent_share=0.5 --haystack-tokens 20000
    scripts/bench longmemeval --cached-server --keep-data /tmp/lme   # development loop
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_conversations import ROOT, Conversation, DataSet, Question, arguments, run
from contextwm.cli.evaluation.selectors import TURN_OVERHEAD, Turn
from contextwm_client import Role

DATA = ROOT / "datasets" / "longmemeval_dev"


def _date(text: str) -> datetime:
    return datetime.strptime(text, "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)


def load(data: Path, counter: Any, *, haystack_tokens: int = 0) -> DataSet:
    """Every question with its haystack as a conversation of its own."""
    by_question: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with gzip.open(data / "turns.jsonl.gz", "rt") as f:
        for line in f:
            t = json.loads(line)
            by_question[t["question_id"]].append(t)
    conversations: list[Conversation] = []
    questions: list[Question] = []
    with gzip.open(data / "questions.jsonl.gz", "rt") as f:
        for line in f:
            q = json.loads(line)
            rows = sorted(by_question[q["question_id"]], key=lambda t: t["order"])
            if haystack_tokens:
                rows = _trim(q, rows, counter, haystack_tokens)
            position = {(t["session_index"], t["turn_index"]): i for i, t in enumerate(rows)}
            cid = f"lme-{q['question_id']}"
            questions.append(
                Question(
                    q["question_id"],
                    cid,
                    q["question_type"],
                    q["question"],
                    _date(q["question_date"]),
                    tuple(sorted(position[(s, t)] for s, t in q["evidence"])),
                )
            )
            conversations.append(
                Conversation(
                    cid,
                    tuple(_turn(t, counter) for t in rows),
                    tuple(_date(t["session_date"]) for t in rows),
                )
            )
    return DataSet(tuple(conversations), tuple(questions))


def _turn(t: dict[str, Any], counter: Any) -> Turn:
    cost = counter.count(f"{t['role']}: {t['content']}") + TURN_OVERHEAD
    return Turn(cast(Role, t["role"]), t["content"], cost)


def _trim(
    q: dict[str, Any], rows: Sequence[dict[str, Any]], counter: Any, max_tokens: int
) -> list[dict[str, Any]]:
    """The haystack cut to about max_tokens: the sessions holding evidence, and other
    sessions drawn at random (seeded by the question) while they fit, in their order."""
    evidence = {s for s, _ in q["evidence"]}
    size: dict[int, int] = defaultdict(int)
    for t in rows:
        size[t["session_index"]] += _turn(t, counter).cost
    kept = set(evidence)
    total = sum(size[x] for x in kept)
    others = sorted(set(size) - kept)
    random.Random(q["question_id"]).shuffle(others)
    for session in others:
        if total + size[session] <= max_tokens:
            kept.add(session)
            total += size[session]
    return [t for t in rows if t["session_index"] in kept]


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__.split("\n\n")[0], DATA)
    parser.add_argument(
        "--haystack-tokens",
        type=int,
        default=0,
        help="cut each haystack to about this many tokens (its evidence sessions kept)",
    )
    args = parser.parse_args(argv)
    cut = args.haystack_tokens
    return run(args, lambda data, counter: load(data, counter, haystack_tokens=cut))


if __name__ == "__main__":
    sys.exit(main())
