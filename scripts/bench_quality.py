"""Retrieval quality on generated conversations: are the planted turns inside the context?

Generated conversations with planted facts flatter any ranking that rewards rare words; the
yardstick is real data (``scripts/bench_longmemeval.py``). This is the second table: it keeps
the rare-word / paraphrase split and adds multi-hop questions.

What it measures. ``bench_data.generate_corpus`` builds long conversations (600 turns by
default) with facts planted in the first 40% of the turns and one question per fact, asked
after the whole conversation is ingested. About half the questions share a rare word (a name,
an id, a code) with their answer turn; the rest paraphrase the fact. Every fact also has
distractor turns on the same topic with different details. ``multi_hop_questions`` adds five
questions per conversation that join two facts from sessions at least 100 turns apart: both
turns must come back.

The benchmark starts the real server in-process (gRPC on port 0, a temporary data directory,
default conversation settings: a window of 8000 tokens / 100 items, so most of a conversation
is archived), ingests every conversation through ``append_batch`` in batches of 100, waits until
every item is embedded, then asks every question through ``get_context`` at each token budget
and in each mode:

* ``dense``: embedding similarity only (cosine >= threshold, best first);
* ``hybrid (service default)``: what the service returns by default;
* ``hybrid, seed split``: the same ranking with a fixed half of the budget for the window
  (``recent_share=0.5``);
* ``lexical``: BM25 only;
* ``dense, no neighbours``: dense with ``include_neighbors=False`` (similarity alone, nothing
  added around the hits).

A question is a hit when every evidence turn (metadata ``turn``) is among the returned recent
or history items. The table gives recall overall, for rare-word, paraphrase and multi-hop
questions; further tables give the mean retrieval latency per mode, the ingest time, how often
a distractor turn came back without the answer, and why the misses missed: the answer was
below the similarity threshold, not among the 100 candidates, ranked past the candidates
used, or ranked among them but cut because the budget filled up with better evidence.

Run (from the repository root)::

    .venv/bin/python scripts/bench_quality.py            # 10 conversations x 600 turns x 20 q
    .venv/bin/python scripts/bench_quality.py --quick    # 2 x 500 x 10, about a minute
    .venv/bin/python scripts/bench_quality.py --details --json quality.json

The figures are deterministic for a given ``--seed`` (latencies and ingest times aside).
"""

from __future__ import annotations

import os

# Set before anything imports transformers or huggingface_hub: the model ships in a package.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import log, print_table
from bench_data import (
    MULTI_HOP,
    PARAPHRASE,
    RARE_WORD,
    BenchConversation,
    Question,
    generate_corpus,
    multi_hop_questions,
)
from bench_data import ingest_items as bench_ingest_items
from contextwm_client import Client, EnhancedContext, NewItem, RetrievalMode, ScoredItem

BATCH = 100
# The server's defaults that the miss analysis reasons with (ContextRequest and settings).
SIMILARITY_THRESHOLD = 0.3
MAX_HISTORY_ITEMS = 100
CANDIDATES = 100
KINDS = ("all", RARE_WORD, PARAPHRASE, MULTI_HOP)
KIND_LABEL = {"all": "all", RARE_WORD: "rare", PARAPHRASE: "para", MULTI_HOP: "multi"}
# Multi-hop questions added per conversation (each joins two planted facts far apart).
MULTI_HOP_PER_CONVERSATION = 5


@dataclass(frozen=True, slots=True)
class ModeSpec:
    """One way of asking: a retrieval mode and a neighbour setting (None: server default)."""

    label: str
    mode: RetrievalMode
    include_neighbors: bool | None
    recent_share: float | None = None


MODES: tuple[ModeSpec, ...] = (
    ModeSpec("dense", "dense", None),
    ModeSpec("hybrid (service default)", "hybrid", None),
    ModeSpec("hybrid, seed split (recent_share=0.5)", "hybrid", None, 0.5),
    ModeSpec("lexical", "lexical", None),
    ModeSpec("dense, no neighbours", "dense", False),
)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Where the answer stands in a mode's ranking, independent of the budget."""

    rank: int | None  # 1-based among the first CANDIDATES hits of the same ranking; None: not there
    similarity: float  # cosine of the answer turn to the question
    lexical_match: bool  # BM25 matches the answer turn at all


@dataclass(slots=True)
class Outcome:
    """One question asked in one mode at one budget."""

    conv: str
    question: Question
    mode: str
    budget: int
    hit: bool
    distractor: bool  # a distractor turn of the question was returned
    distractor_only: bool  # ... and the answer was not
    history_hits: int  # primary history hits that fit (neighbours not counted)
    history_tokens: int
    best: str  # content of the best-scoring history hit, for --details
    cause: str = ""


@dataclass(slots=True)
class Run:
    outcomes: list[Outcome] = field(default_factory=list)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    append_seconds: float = 0.0
    embed_seconds: float = 0.0
    items: int = 0
    start_seconds: float = 0.0


def ingest(client: Client, convs: Sequence[BenchConversation], run: Run) -> None:
    began = time.perf_counter()
    for conv in convs:
        items = [
            NewItem(
                content=it["content"],
                role=it["role"],
                timestamp=it["timestamp"],
                metadata=it["metadata"],
            )
            for it in bench_ingest_items(conv)
        ]
        for start in range(0, len(items), BATCH):
            client.append_batch(conv.conversation_id, items[start : start + BATCH])
        run.items += len(items)
    run.append_seconds = time.perf_counter() - began
    log(f"appended {run.items} items in {run.append_seconds:.1f} s; waiting for embeddings")
    for conv in convs:
        while client.get_conversation(conv.conversation_id).pending_embeddings > 0:
            time.sleep(0.1)
    run.embed_seconds = time.perf_counter() - began
    log(f"all embedded after {run.embed_seconds:.1f} s")


# ------------------------------------------------------------------ asking


def _turn(s: ScoredItem) -> int | None:
    value = s.item.metadata.get("turn")
    return int(value) if value is not None else None


def judge(conv: str, q: Question, spec: ModeSpec, budget: int, ctx: EnhancedContext) -> Outcome:
    returned = {_turn(s) for s in (*ctx.recent, *ctx.history)}
    hit = set(q.evidence) <= returned
    distractor = any(t in returned for t in q.distractor_turns)
    primary = [s for s in ctx.history if s.neighbor_of is None]
    best = max(primary, key=lambda s: s.score).item.content if primary else ""
    return Outcome(
        conv=conv,
        question=q,
        mode=spec.label,
        budget=budget,
        hit=hit,
        distractor=distractor,
        distractor_only=distractor and not hit,
        history_hits=len(primary),
        history_tokens=ctx.tokens.history,
        best=best,
    )


def diagnose(client: Client, conv: str, q: Question, spec: ModeSpec) -> Diagnosis:
    """The answer's rank in the same ranking get_context uses, its cosine and BM25 match."""
    ranking = client.search(
        q.text, conversation_id=conv, top_k=CANDIDATES, include_window=True, mode=spec.mode
    )
    rank = next((i for i, s in enumerate(ranking.hits, 1) if _turn(s) == q.answer_turn), None)
    only = {"turn": str(q.answer_turn)}
    dense = client.search(
        q.text,
        conversation_id=conv,
        top_k=1,
        include_window=True,
        mode="dense",
        similarity_threshold=-1.0,
        metadata=only,
    )
    lexical = client.search(
        q.text, conversation_id=conv, top_k=1, include_window=True, mode="lexical", metadata=only
    )
    similarity = dense.hits[0].parts.similarity if dense.hits else float("nan")
    return Diagnosis(rank, similarity, bool(lexical.hits))


def cause_of(spec: ModeSpec, d: Diagnosis) -> str:
    """Why a miss missed, from the answer's place in the ranking."""
    if d.rank is None:
        if spec.mode == "lexical" and not d.lexical_match:
            return "no BM25 match"
        if spec.mode == "dense" and d.similarity < SIMILARITY_THRESHOLD:
            return "below threshold"
        return f"not in top {CANDIDATES}"
    if d.rank > MAX_HISTORY_ITEMS:
        return f"rank > {MAX_HISTORY_ITEMS}"
    return "cut by budget"


def ask_all(
    client: Client,
    convs: Sequence[BenchConversation],
    budgets: Sequence[int],
    run: Run,
    details: bool,
) -> None:
    for conv in convs:
        cid = conv.conversation_id
        extra = multi_hop_questions(conv, MULTI_HOP_PER_CONVERSATION, seed=len(conv.turns))
        for q in (*conv.questions, *extra):
            for spec in MODES:
                diagnosis: Diagnosis | None = None
                for budget in budgets:
                    began = time.perf_counter()
                    ctx = client.get_context(
                        cid,
                        q.text,
                        max_tokens=budget,
                        mode=spec.mode,
                        include_neighbors=spec.include_neighbors,
                        recent_share=spec.recent_share,
                    )
                    run.latencies.setdefault(spec.label, []).append(time.perf_counter() - began)
                    out = judge(cid, q, spec, budget, ctx)
                    if not out.hit:
                        diagnosis = diagnosis or diagnose(client, cid, q, spec)
                        out.cause = cause_of(spec, diagnosis)
                        if details:
                            print_miss(conv, out, diagnosis)
                    run.outcomes.append(out)
        log(f"asked {len(conv.questions) + len(extra)} questions of {cid}")


def _short(text: str, width: int = 110) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def print_miss(conv: BenchConversation, out: Outcome, d: Diagnosis) -> None:
    q = out.question
    rank = "-" if d.rank is None else str(d.rank)
    bm25 = "yes" if d.lexical_match else "no"
    extra = ", distractor returned" if out.distractor_only else ""
    print(
        f"MISS {out.conv} turn {q.answer_turn} [{q.kind}/{q.family}] {out.mode} @{out.budget}:"
        f" {out.cause}; rank {rank}, cos {d.similarity:.3f}, bm25 {bm25},"
        f" {out.history_hits} hits fit{extra}"
    )
    print(f"    Q: {q.text}")
    print(f"    A: {_short(conv.turns[q.answer_turn].content)}")
    if out.best:
        print(f"    top hit: {_short(out.best)}")


# ------------------------------------------------------------------ report


def _cell(hits: int, total: int) -> str:
    return f"{hits / total:.2f} ({hits}/{total})" if total else "-"


def summarise(run: Run, budgets: Sequence[int]) -> dict[str, Any]:
    recall: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    misses: dict[str, dict[str, dict[str, int]]] = {}
    distractors: dict[str, dict[str, dict[str, int]]] = {}
    for spec in MODES:
        for budget in budgets:
            outs = [o for o in run.outcomes if o.mode == spec.label and o.budget == budget]
            per_kind: dict[str, dict[str, float]] = {}
            for kind in KINDS:
                sel = [o for o in outs if kind == "all" or o.question.kind == kind]
                hits = sum(o.hit for o in sel)
                per_kind[kind] = {
                    "hits": hits,
                    "total": len(sel),
                    "recall": hits / len(sel) if sel else 0.0,
                }
            recall.setdefault(spec.label, {})[str(budget)] = per_kind
            causes: dict[str, int] = {}
            for o in outs:
                if not o.hit:
                    causes[o.cause] = causes.get(o.cause, 0) + 1
            misses.setdefault(spec.label, {})[str(budget)] = causes
            distractors.setdefault(spec.label, {})[str(budget)] = {
                "distractor_returned": sum(o.distractor for o in outs),
                "distractor_without_answer": sum(o.distractor_only for o in outs),
                "questions": len(outs),
            }
    latency = {
        label: {
            "mean_ms": 1000 * statistics.fmean(values),
            "p95_ms": 1000 * sorted(values)[max(0, round(0.95 * len(values)) - 1)],
            "calls": len(values),
        }
        for label, values in run.latencies.items()
    }
    return {
        "recall": recall,
        "miss_causes": misses,
        "distractors": distractors,
        "latency": latency,
        "ingest": {
            "items": run.items,
            "append_seconds": run.append_seconds,
            "embedded_seconds": run.embed_seconds,
            "items_per_second": run.items / run.embed_seconds if run.embed_seconds else 0.0,
            "server_start_seconds": run.start_seconds,
        },
    }


def report(summary: dict[str, Any], budgets: Sequence[int], header: str) -> None:
    print(header)
    headers = ["mode \\ budget"] + [f"{b} {KIND_LABEL[k]}" for b in budgets for k in KINDS]
    rows: list[list[object]] = []
    for spec in MODES:
        row: list[object] = [spec.label]
        for budget in budgets:
            for kind in KINDS:
                c = summary["recall"][spec.label][str(budget)][kind]
                row.append(_cell(int(c["hits"]), int(c["total"])))
        rows.append(row)
    print_table(
        "Recall: planted turns inside the returned context"
        " (all / rare-word / paraphrase / multi-hop: two facts from sessions far apart)",
        headers,
        rows,
    )

    cause_names = sorted(
        {c for m in summary["miss_causes"].values() for b in m.values() for c in b}
    )
    rows = []
    for spec in MODES:
        for budget in budgets:
            causes = summary["miss_causes"][spec.label][str(budget)]
            d = summary["distractors"][spec.label][str(budget)]
            rows.append(
                [f"{spec.label} @{budget}", sum(causes.values())]
                + [causes.get(c, 0) for c in cause_names]
                + [_cell(d["distractor_returned"], d["questions"])]
                + [_cell(d["distractor_without_answer"], d["questions"])]
            )
    print_table(
        "Misses by cause; questions with a distractor turn returned (any / without the answer)",
        ["mode @budget", "misses", *cause_names, "distractor returned", "distractor, no answer"],
        rows,
    )

    rows = [
        [
            spec.label,
            f"{summary['latency'][spec.label]['mean_ms']:.1f}",
            f"{summary['latency'][spec.label]['p95_ms']:.1f}",
            summary["latency"][spec.label]["calls"],
        ]
        for spec in MODES
    ]
    print_table("GetContext latency (client side, ms)", ["mode", "mean", "p95", "calls"], rows)
    ing = summary["ingest"]
    print(
        f"\n== Ingest: {ing['items']} items appended in {ing['append_seconds']:.1f} s, all embedded"
        f" after {ing['embedded_seconds']:.1f} s ({ing['items_per_second']:.0f} items/s);"
        f" server start {ing['server_start_seconds']:.1f} s"
    )


# ------------------------------------------------------------------ main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--conversations", type=int, default=10, help="conversations (default 10)")
    p.add_argument("--turns", type=int, default=600, help="turns per conversation (default 600)")
    p.add_argument("--questions", type=int, default=20, help="questions per conversation")
    p.add_argument("--seed", type=int, default=0, help="corpus seed (default 0)")
    p.add_argument("--budgets", default="1024,2048", help="comma-separated token budgets")
    p.add_argument("--quick", action="store_true", help="2 conversations, 500 turns, 10 questions")
    p.add_argument("--json", type=Path, metavar="PATH", help="write the figures as JSON")
    p.add_argument("--details", action="store_true", help="print every miss")
    args = p.parse_args(argv)
    if args.quick:
        args.conversations, args.turns, args.questions = 2, 500, 10
    args.budget_list = [int(b) for b in args.budgets.split(",") if b.strip()]
    if not args.budget_list or min(args.budget_list) <= 0:
        p.error("--budgets needs positive integers")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    from contextwm.app import Service
    from contextwm.settings import ServerSettings

    log(f"generating {args.conversations} conversations x {args.turns} turns, seed {args.seed}")
    convs = generate_corpus(
        args.conversations, seed=args.seed, turns=args.turns, questions=args.questions
    )
    run = Run()
    with tempfile.TemporaryDirectory(prefix="cwm-quality-") as tmp:
        began = time.perf_counter()
        service = Service.start(ServerSettings(port=0, data_dir=Path(tmp) / "data"))
        run.start_seconds = time.perf_counter() - began
        log(f"server on port {service.port} after {run.start_seconds:.1f} s")
        try:
            with Client(f"127.0.0.1:{service.port}", timeout=120.0) as client:
                ingest(client, convs, run)
                ask_all(client, convs, args.budget_list, run, args.details)
        finally:
            service.stop(grace=1.0)
    summary = summarise(run, args.budget_list)
    header = (
        f"\ncontextwm retrieval quality: {args.conversations} conversations x {args.turns} turns,"
        f" {args.questions} questions each, seed {args.seed}, budgets {args.budgets}"
    )
    report(summary, args.budget_list, header)
    if args.json is not None:
        config = {k: getattr(args, k) for k in ("conversations", "turns", "questions", "seed")}
        summary["config"] = {**config, "budgets": args.budget_list}
        args.json.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        log(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
