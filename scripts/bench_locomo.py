"""Retrieval quality on real conversations of a second kind: LoCoMo questions against simple
selectors.

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents",
ACL 2024; snap-research/LoCoMo, ``data/locomo10.json``) holds long chats between two named
people over months: 19-32 sessions, 369-680 short turns each, and questions about either
person that often need turns from several sessions. Its licence (CC BY-NC 4.0) keeps it out
of this repository: ``--data`` names a directory holding ``turns.jsonl.gz`` and
``questions.jsonl.gz`` in the layout of the LongMemEval dev split's (``conversation_id``,
``dia_id``, ``speaker``, ``text``, ``timestamp``, ``order``; ``question``, ``category_name``,
``evidence`` as dia_ids).

Each conversation is replayed once with ``speaker: text`` as content, the first speaker as
role user and the other as assistant, the session's time as the timestamp; every question is
asked after the last turn. A selector's turn costs ``speaker: text`` plus 4 tokens. How the
run goes, and its options, is in ``bench_conversations.py``.

Run (from the repository root)::

    scripts/bench locomo --data ../shared/data/locomo_dev     # about 5 minutes
    scripts/bench locomo --data DIR --cached-server --keep-data /tmp/locomo
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_conversations import Conversation, DataSet, Question, arguments, run
from contextwm.cli.evaluation.selectors import TURN_OVERHEAD, Turn
from contextwm_client import Item


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def load(data: Path, counter: Any) -> DataSet:
    """Every conversation, and every question asked after its last turn."""
    by_conversation: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with gzip.open(data / "turns.jsonl.gz", "rt") as f:
        for line in f:
            t = json.loads(line)
            by_conversation[t["conversation_id"]].append(t)
    conversations: dict[str, Conversation] = {}
    positions: dict[str, dict[str, int]] = {}
    for name, rows in sorted(by_conversation.items()):
        rows.sort(key=lambda t: t["order"])
        first = rows[0]["speaker"]
        turns = []
        for t in rows:
            content = f"{t['speaker']}: {t['text']}"
            cost = counter.count(content) + TURN_OVERHEAD
            turns.append(Turn("user" if t["speaker"] == first else "assistant", content, cost))
        conversations[name] = Conversation(
            f"locomo-{name}", tuple(turns), tuple(_time(t["timestamp"]) for t in rows)
        )
        positions[name] = {t["dia_id"]: i for i, t in enumerate(rows)}
    questions: list[Question] = []
    with gzip.open(data / "questions.jsonl.gz", "rt") as f:
        for line in f:
            q = json.loads(line)
            c = conversations[q["conversation_id"]]
            position = positions[q["conversation_id"]]
            questions.append(
                Question(
                    f"{q['conversation_id']}/{q['qa_index']}",
                    c.cid,
                    q["category_name"],
                    q["question"],
                    c.times[-1],
                    tuple(sorted(position[e] for e in q["evidence"])),
                )
            )
    return DataSet(tuple(conversations.values()), tuple(questions))


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(__doc__.split("\n\n")[0], None).parse_args(argv)
    return run(args, load, cost=_cost)


def _cost(item: Item, counter: Any) -> int:
    """A turn's cost to a selector: its content (``speaker: text``) plus TURN_OVERHEAD."""
    return int(counter.count(item.content)) + TURN_OVERHEAD


if __name__ == "__main__":
    sys.exit(main())
