"""Retrieval quality on real conversations: LongMemEval questions against simple selectors.

What it measures. ``datasets/longmemeval_dev`` holds 48 LongMemEval questions, each with its
own haystack of about 48 chat sessions (about 490 turns, 100k tokens). Every haystack is
replayed through a real contextwm server as one conversation, in order, with the session
dates as the items' timestamps and the server's default conversation settings. Then each
question is asked through ``GetContext`` at each budget with the default options (and
``as_of`` set to when the question is asked). A question is a hit when every evidence turn is
among the returned items (recent or history).

In the same run, on the same turns, four simple selectors fill the same budget with whole
turns in rank order (``role: content`` plus 4 tokens a turn, cl100k_base): recency, BM25,
dense cosine (all-MiniLM-L6-v2) and BM25 + dense reciprocal-rank fusion (k = 60). The
service is judged on its own rendered text, whose exact count is never above the budget.

``--compare-ref REV`` also replays everything through a second server built from an earlier
commit (a temporary git worktree run with this virtual environment), so an old and a new
default are compared in one run.

The data set's few empty turns are not replayed (the service refuses empty items); the
selectors see them, at no gain. ``--variant`` asks again with other options in the same run,
``--haystack-tokens`` cuts haystacks to a size where the window holds a larger share.

Run (from the repository root)::

    scripts/bench longmemeval                       # about 16 minutes
    scripts/bench longmemeval --compare-ref a4438ca --json lme.json
    scripts/bench longmemeval --variant recent_share=0.5 --haystack-tokens 20000

The selectors' vectors are cached under ``.cache/`` (keyed by text); the server always embeds
with its own model. ``--cached-server`` runs the server in this process with those cached
vectors instead (same model, same vectors, minutes faster): a development shortcut.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import argparse
import contextlib
import dataclasses
import gzip
import hashlib
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import ServerProcess, log, print_table
from bench_selectors import Turn, fill, selectors
from contextwm_client import Client, NewItem, Role

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "datasets" / "longmemeval_dev"
CACHE = ROOT / ".cache" / "bench-vectors"
BUDGETS = (1024, 2048, 4096)
ENCODING = "cl100k_base"
BATCH = 100
SERVICE = "contextwm (default)"


@dataclass(frozen=True, slots=True)
class Question:
    qid: str
    kind: str
    text: str
    asked: datetime
    evidence: tuple[int, ...]  # 0-based turn positions in replay order


@dataclass(frozen=True, slots=True)
class Haystack:
    question: Question
    turns: tuple[Turn, ...]
    times: tuple[datetime, ...]
    sessions: tuple[int, ...]  # each turn's session


def trim(h: Haystack, max_tokens: int) -> Haystack:
    """The haystack cut to about max_tokens: the sessions holding evidence, and other
    sessions drawn at random (seeded by the question) while they fit, in their order."""
    evidence = {h.sessions[i] for i in h.question.evidence}
    size: dict[int, int] = defaultdict(int)
    for t, session in zip(h.turns, h.sessions, strict=True):
        size[session] += t.cost
    kept = set(evidence)
    total = sum(size[x] for x in kept)
    others = sorted(set(size) - kept)
    random.Random(h.question.qid).shuffle(others)
    for session in others:
        if total + size[session] <= max_tokens:
            kept.add(session)
            total += size[session]
    rows = [i for i, session in enumerate(h.sessions) if session in kept]
    position = {old: new for new, old in enumerate(rows)}
    question = dataclasses.replace(
        h.question, evidence=tuple(position[i] for i in h.question.evidence)
    )
    return Haystack(
        question,
        tuple(h.turns[i] for i in rows),
        tuple(h.times[i] for i in rows),
        tuple(h.sessions[i] for i in rows),
    )


def _date(text: str) -> datetime:
    return datetime.strptime(text, "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC)


def load(data: Path, counter: Any) -> list[Haystack]:
    """Every question with its haystack, turns in replay order with their selector costs."""
    by_question: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with gzip.open(data / "turns.jsonl.gz", "rt") as f:
        for line in f:
            t = json.loads(line)
            by_question[t["question_id"]].append(t)
    out: list[Haystack] = []
    with gzip.open(data / "questions.jsonl.gz", "rt") as f:
        for line in f:
            q = json.loads(line)
            rows = sorted(by_question[q["question_id"]], key=lambda t: t["order"])
            position = {(t["session_index"], t["turn_index"]): i for i, t in enumerate(rows)}
            question = Question(
                q["question_id"],
                q["question_type"],
                q["question"],
                _date(q["question_date"]),
                tuple(sorted(position[(s, t)] for s, t in q["evidence"])),
            )
            turns = tuple(
                Turn(
                    cast(Role, t["role"]),
                    t["content"],
                    counter.count(f"{t['role']}: {t['content']}") + 4,
                )
                for t in rows
            )
            times = tuple(_date(t["session_date"]) for t in rows)
            out.append(Haystack(question, turns, times, tuple(t["session_index"] for t in rows)))
    return out


# ------------------------------------------------------------------ vectors


class VectorCache:
    """Vectors of texts by SHA-256, kept in one .npy file and a key list beside it."""

    def __init__(self, directory: Path, model: str) -> None:
        self._npy = directory / f"{model}.npy"
        self._keys = directory / f"{model}.keys.json"
        self._rows: dict[str, int] = {}
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        if self._npy.exists() and self._keys.exists():
            self._matrix = np.load(self._npy)
            self._rows = {k: i for i, k in enumerate(json.loads(self._keys.read_text()))}

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, text: str) -> npt.NDArray[np.float32] | None:
        row = self._rows.get(self.key(text))
        return None if row is None else self._matrix[row]

    def fill(self, texts: Sequence[str], embed: Any) -> None:
        """Embeds and stores the texts not cached yet."""
        missing = sorted({t for t in texts if self.key(t) not in self._rows})
        if not missing:
            return
        log(f"embedding {len(missing)} texts for the selectors (cached for later runs)")
        began = time.perf_counter()
        parts = []
        for start in range(0, len(missing), 512):
            parts.append(embed(missing[start : start + 512]))
            log(f"  {start + len(parts[-1])}/{len(missing)} in {time.perf_counter() - began:.0f} s")
        new = np.concatenate(parts).astype(np.float32)
        self._matrix = new if self._matrix.size == 0 else np.concatenate([self._matrix, new])
        for text in missing:
            self._rows[self.key(text)] = len(self._rows)
        self._npy.parent.mkdir(parents=True, exist_ok=True)
        np.save(self._npy, self._matrix)
        self._keys.write_text(json.dumps(list(self._rows)))


class CachedEmbedder:
    """The real embedder behind a VectorCache: cached texts skip the model."""

    def __init__(self, inner: Any, cache: VectorCache) -> None:
        self._inner = inner
        self._cache = cache

    @property
    def model_name(self) -> str:
        return str(self._inner.model_name)

    @property
    def dimension(self) -> int:
        return int(self._inner.dimension)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        missing = []
        for i, text in enumerate(texts):
            v = self._cache.get(text)
            if v is None:
                missing.append(i)
            else:
                out[i] = v
        if missing:
            out[missing] = self._inner.embed([texts[i] for i in missing])
        return out


# ------------------------------------------------------------------ servers


@contextlib.contextmanager
def subprocess_server(work: Path, ref: str | None) -> Iterator[str]:
    """A `contextwm serve` child process; ref: run the server code of that git revision."""
    extra_env: dict[str, str] = {}
    tree: Path | None = None
    if ref is not None:
        tree = work / f"tree-{ref}"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), ref],
            check=True,
            capture_output=True,
        )
        extra_env["PYTHONPATH"] = f"{tree / 'server'}:{tree / 'client'}"
    data = work / f"data-{ref or 'head'}"
    data.mkdir()
    server = ServerProcess(data, env=extra_env)
    try:
        with server:
            yield server.target
    finally:
        if tree is not None:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                check=False,
                capture_output=True,
            )


@contextlib.contextmanager
def cached_server(work: Path, cache: VectorCache) -> Iterator[str]:
    """This checkout's server in-process, embedding through the selectors' vector cache."""
    from contextwm.adapters.embedder_st import SentenceTransformerEmbedder
    from contextwm.app import Service
    from contextwm.settings import ServerSettings

    settings = ServerSettings(port=0, data_dir=work / "data-cached", indexer_process=False)
    service = Service.start(settings, embedder=CachedEmbedder(SentenceTransformerEmbedder(), cache))
    try:
        yield f"127.0.0.1:{service.port}"
    finally:
        service.stop(grace=0)


# ------------------------------------------------------------------ the run


def stored(h: Haystack) -> list[int]:
    """The turn positions replayed, in order (so seq n is position stored[n - 1]): the few
    empty turns of the data set are left out, as the service refuses empty items."""
    return [i for i, t in enumerate(h.turns) if t.content.strip()]


def replay(client: Client, haystacks: Sequence[Haystack]) -> float:
    """Appends every haystack as its own conversation; returns seconds until all are embedded."""
    began = time.perf_counter()
    for h in haystacks:
        items = [
            NewItem(content=h.turns[i].content, role=h.turns[i].role, timestamp=h.times[i])
            for i in stored(h)
        ]
        for start in range(0, len(items), BATCH):
            client.append_batch(f"lme-{h.question.qid}", items[start : start + BATCH])
    log(f"appended {sum(len(h.turns) for h in haystacks)} turns; waiting for embeddings")
    for h in haystacks:
        while client.get_conversation(f"lme-{h.question.qid}").pending_embeddings > 0:
            time.sleep(0.2)
    return time.perf_counter() - began


def ask_service(
    client: Client, h: Haystack, budget: int, options: dict[str, Any]
) -> tuple[bool, int, float]:
    """(hit, tokens returned, seconds) for the service's context with these options."""
    began = time.perf_counter()
    ctx = client.get_context(
        f"lme-{h.question.qid}",
        h.question.text,
        max_tokens=budget,
        as_of=h.question.asked,
        **options,
    )
    seconds = time.perf_counter() - began
    if ctx.total_tokens > budget:
        raise AssertionError(f"{h.question.qid}: {ctx.total_tokens} tokens over {budget}")
    position = stored(h)
    returned = {position[s.item.seq - 1] for s in (*ctx.recent, *ctx.history)}
    return set(h.question.evidence) <= returned, ctx.total_tokens, seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    parser.add_argument(
        "--haystack-tokens",
        type=int,
        default=0,
        help="cut each haystack to about this many tokens (its evidence sessions kept)",
    )
    parser.add_argument("--compare-ref", help="also run the server of this git revision")
    parser.add_argument("--cached-server", action="store_true", help="see the module doc")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    parser.add_argument(
        "--variant",
        type=_variant,
        action="append",
        default=[],
        metavar="OPTION=VALUE[,...]",
        help="also ask with these get_context options, e.g. recent_share=0.5",
    )
    args = parser.parse_args(argv)

    from contextwm.adapters.embedder_st import SentenceTransformerEmbedder
    from contextwm.adapters.tokens_bpe import token_counter

    haystacks = load(args.data, token_counter(ENCODING))
    if args.limit:
        haystacks = haystacks[: args.limit]
    if args.haystack_tokens:
        haystacks = [trim(h, args.haystack_tokens) for h in haystacks]
    log(f"{len(haystacks)} questions, {sum(len(h.turns) for h in haystacks)} turns")
    model = SentenceTransformerEmbedder()
    cache = VectorCache(CACHE, model.model_name)
    cache.fill(
        [t.content for h in haystacks for t in h.turns] + [h.question.text for h in haystacks],
        model.embed,
    )

    outcomes: list[dict[str, Any]] = []
    for h in haystacks:
        vectors = np.stack([cache.get(t.content) for t in h.turns])  # type: ignore[misc]
        qvec = cache.get(h.question.text)
        assert qvec is not None
        for name, rank in selectors(h.turns, vectors).items():
            ranking = rank(h.question.text, qvec)
            for budget in args.budgets:
                taken = fill(ranking, h.turns, budget)
                hit = set(h.question.evidence) <= taken
                outcomes.append(_outcome(h, name, budget, hit))

    servers: list[tuple[str, Any]] = []
    shown: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cwm-lme-") as tmp:
        work = Path(tmp)
        if args.cached_server:
            servers.append((SERVICE + " [cached vectors]", cached_server(work, cache)))
        else:
            servers.append((SERVICE, subprocess_server(work, None)))
        if args.compare_ref:
            servers.append(
                (
                    f"contextwm {args.compare_ref} (default)",
                    subprocess_server(work, args.compare_ref),
                )
            )
        for name, make in servers:
            with make as target, Client(target, timeout=600) as client:
                seconds = replay(client, haystacks)
                log(f"{name}: replayed and embedded in {seconds:.0f} s")
                for label, options in [("", {}), *args.variant]:
                    who = f"{name} {label}".strip()
                    shown.append(who)
                    latencies: list[float] = []
                    for h in haystacks:
                        for budget in args.budgets:
                            hit, tokens, took = ask_service(client, h, budget, options)
                            latencies.append(took)
                            outcomes.append(_outcome(h, who, budget, hit, tokens=tokens))
                    latencies.sort()
                    log(f"{who}: GetContext p50 {1000 * latencies[len(latencies) // 2]:.1f} ms")
    report(outcomes, args.budgets, shown)
    if args.json:
        args.json.write_text(json.dumps(outcomes, indent=1))
    return 0


def _variant(text: str) -> tuple[str, dict[str, Any]]:
    """ "recent_share=0.5,mode=dense" -> ("[recent_share=0.5,mode=dense]", options)."""
    options: dict[str, Any] = {}
    for pair in text.split(","):
        key, _, value = pair.partition("=")
        options[key.strip()] = (
            json.loads(value) if value not in ("hybrid", "dense", "lexical") else value
        )
    return f"[{text}]", options


def _outcome(h: Haystack, who: str, budget: int, hit: bool, tokens: int = 0) -> dict[str, Any]:
    return {
        "question": h.question.qid,
        "type": h.question.kind,
        "who": who,
        "budget": budget,
        "hit": hit,
        "tokens": tokens,
    }


def report(
    outcomes: Sequence[dict[str, Any]], budgets: Sequence[int], services: Sequence[str]
) -> None:
    who = [*services, "recency", "BM25", "dense", "BM25+dense RRF"]
    kinds = sorted({o["type"] for o in outcomes})
    cells: dict[tuple[str, int, str], list[bool]] = defaultdict(list)
    for o in outcomes:
        cells[(o["who"], o["budget"], "all")].append(o["hit"])
        cells[(o["who"], o["budget"], o["type"])].append(o["hit"])

    def pct(key: tuple[str, int, str]) -> str:
        hits = cells[key]
        return f"{100 * sum(hits) / len(hits):.0f} %" if hits else "-"

    n = len(cells[(who[-1], budgets[0], "all")])
    print_table(
        f"Hit rate: every evidence turn returned ({n} questions)",
        ["selector", *(f"{b} tokens" for b in budgets)],
        [[w, *(pct((w, b, "all")) for b in budgets)] for w in who],
    )
    for budget in budgets:
        print_table(
            f"Hit rate by question type at {budget} tokens",
            ["selector", *kinds],
            [[w, *(pct((w, budget, k)) for k in kinds)] for w in who],
        )


if __name__ == "__main__":
    sys.exit(main())
