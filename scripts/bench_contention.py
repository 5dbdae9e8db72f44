"""Contention benchmark: GetContext and Search latency beside other work, the service's
overhead beyond the model, and how fast a backlog of embeddings drains under load and after
a crash.

Measures, in one run, through the real `contextwm_client.Client` over loopback against a
`contextwm serve` subprocess on its default settings (port 0, fresh temp data dir; the
indexer's model in a nice'd child process, as a sidecar user gets it), holding one
conversation of --archived archived items (default 10,000) plus a window of --window recent
items appended through the API and embedded by the server's indexer:

1. contention: GetContext(max_tokens=2048) and Search(top_k=10) of that conversation,
   alternating, --calls of each per block, with varied generated questions (the same set in
   every block, shuffled), in blocks of one condition each, in this order:
   quiet; beside one busy-loop process (`python -c "while True: pass"`, started before the
   block and killed after it); beside two; during a bulk import into another conversation of
   the same server (Client.import_items in a process of its own, chunks of 256, ended after
   the block; it has stored its first chunk before the block begins and is checked to be
   still streaming when the block ends); quiet again. p50 and p99 of each call, and their
   ratios to the first quiet block; the last quiet block, set against the first, shows how
   much the shared machine drifted. Each block starts once the server is idle (its
   processes under 5 % of a core over a second) and reports the CPU share of the server's
   process and of its children (the indexer's embedding process) while it ran.
2. overhead beyond the model: the first quiet block's GetContext p50 minus (p50 of embedding
   one query + p50 of one exact FAISS search, k=50, one thread, over the same archived
   vectors), both measured in this process with the server's own embedder
   (contextwm.adapters.embedders.make_embedder on the server's default `embedder` setting,
   so it follows whichever engine the server uses), with the server idle, right before and
   right after that block (bench_retrieval.measure_floor); the overhead is against the mean
   of the two.
3. the agent loop's pattern, on the quiet machine: each question asked alone, then again
   right after one user turn is appended to the big conversation, which the context waits to
   see embedded (read-your-writes); p50 and p99 of both, and of the append (no goal).
4. the backlog under load: while a GetContext loop runs against the big conversation (a
   thread of this process, calls back to back), --backlog items appended to a third
   conversation through AppendBatch (calls of 100); rate = items / time from the first append
   until its pending_embeddings is 0. Then the crash: another --backlog items appended the
   same way, the server SIGKILLed right after the last call is acknowledged (the indexer
   cannot keep up with acknowledged batches), restarted on the same data dir, the loop
   resumed; drain rate = items pending when the restarted server is ready / time from then
   until none is. Every acknowledged item must still be there after the restart.
   Reference for both: the same texts embedded in this process with the same embedder, in
   batches of the indexer's batch size (ServerSettings().indexer_batch_size), beside the same
   GetContext loop, before the backlog: the share of the machine a plain process of its own
   gets beside that load. Also shown: the same with the server idle (its processes under 5 %
   of a core over a second); the loop holds one core, so no backlog nears that on 2 cores.
   (Once appends stop, the indexer itself embeds a backlog in batches of 128, which the
   model runs faster than 32.) GetContext's p50 during both is held to point 1's goal
   (<= 1.5 x quiet). Last, another --backlog items appended while two busy loops hold both
   cores, no GetContext calls: the rate a fair share of the machine gives (no goal; a
   low-priority indexer alone would all but stop).

Fast load path, as bench_retrieval.py: the archive is written straight into the service's
SQLite store (items ARCHIVED via SqliteStore.commit_append, vectors via put_vectors) before
the server starts; a pool of distinct texts is embedded with the real model, other items get
a same-topic pool vector plus gaussian noise. The query path is fully real.

Targets: under each load, p50 within 1.5 x quiet and p99 within 3 x quiet (GetContext and
Search alike); overhead beyond the model <= 6 ms at 10k archived items; the backlog under
load and the drain after a crash at >= 0.9 x the raw embedding rate beside the same loop.

Run:  scripts/bench contention            (full: 10,000 archived, 200 calls per block,
                                           3,000 backlog items; a loaded machine for minutes)
      scripts/bench contention --quick    (smoke run: 1,000 archived, 50 calls, 300 items)
      scripts/bench contention --no-own-session   (the server in the benchmark's session)
      scripts/bench contention --compare-ref REV  (also the overhead of REV's server, same run)
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import random
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_common import (  # also sets HF_HUB_OFFLINE before any model import
    ServerProcess,
    TextGenerator,
    busy_loops,
    child_pids,
    loadavg,
    log,
    p50_p99,
    print_table,
    revision_env,
    verdict,
    wait_embedded,
)
from bench_retrieval import (
    MAX_TOKENS,
    MODEL,
    Case,
    embed_pool,
    load_store,
    make_archive,
    measure_floor,
)
from contextwm.ports.embedder import Embedder
from contextwm_client import Client, ContextWMError, ImportItem, ImportResult, NewItem, Role

BIG = "archive"  # the conversation every GetContext and Search reads
IMPORTED = "bulk-import"  # the bulk import's conversation (condition d)
BACKLOG = "backlog"  # the conversation of the backlog and crash appends
SEARCH_TOP_K = 10
APPEND_CALL = 100  # items per AppendBatch call of the backlog
IMPORT_CHUNK = 256  # items per Import stream message, as `contextwm import` sends them
IMPORT_START_SECONDS = 300.0
RAW_WARMUP_TEXTS = 256  # untimed: the first calls with a new padded shape run slowly

P50_GOAL = 1.5
P99_GOAL = 3.0
OVERHEAD_GOAL_MS = 6.0
DRAIN_GOAL = 0.9

Check = Callable[[], str]  # says what ran beside a block, having checked it; raises if not


@dataclass
class Block:
    """One condition's timed calls."""

    name: str
    context_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)
    beside: str = ""
    loadavg: tuple[str, str] = ("", "")
    seconds: float = 0.0
    server_cpu: float = 0.0  # CPU seconds of the server's process during the block
    children_cpu: float = 0.0  # and of its children (the indexer's embedding process)


@dataclass
class Drain:
    """How fast items were embedded: `items` in `seconds` (see Drain's uses)."""

    name: str
    items: int
    seconds: float
    raw_rate: float  # the same texts embedded in this process, server idle
    acked_seconds: float = 0.0
    loop_ms: list[float] = field(default_factory=list)
    goal: bool = True  # whether DRAIN_GOAL applies (not beside busy loops: a fair share)
    notes: list[str] = field(default_factory=list)
    # ... and beside the same GetContext loop: the goal's reference, where measured
    beside_rate: float = 0.0

    @property
    def rate(self) -> float:
        return self.items / max(self.seconds, 1e-9)


@dataclass
class AgentLoop:
    """GetContext alone, and right after an append of one turn that it waits to see."""

    alone_ms: list[float] = field(default_factory=list)
    after_append_ms: list[float] = field(default_factory=list)
    append_ms: list[float] = field(default_factory=list)


@dataclass
class Floor:
    """Embedding one query and searching the archive's vectors, in this process (ms)."""

    embed_ms: list[float]
    search_ms: list[float]

    @property
    def p50(self) -> float:
        return p50_p99(self.embed_ms)[0] + p50_p99(self.search_ms)[0]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--archived", type=int, default=10_000, help="archived items of the big one")
    p.add_argument("--window", type=int, default=100, help="window items appended via the API")
    p.add_argument("--calls", type=int, default=200, help="GetContext and Search calls a block")
    p.add_argument("--warmup", type=int, default=30, help="untimed calls of each before timing")
    p.add_argument("--backlog", type=int, default=3000, help="items of the backlog, and again")
    p.add_argument("--pool", type=int, default=2000, help="distinct texts embedded for the vectors")
    p.add_argument("--noise", type=float, default=0.03, help="sigma added to pool vectors")
    p.add_argument("--seed", type=int, default=31)
    p.add_argument("--keep", action="store_true", help="keep the temp data dir")
    p.add_argument(
        "--no-own-session",
        action="store_true",
        help="start the server with --no-own-session: it serves in the benchmark's session, as"
        " the busy loops do (see docs/sidecar.md)",
    )
    p.add_argument(
        "--compare-ref",
        metavar="REV",
        help="first, the overhead of this checkout's server and of git revision REV's, each on a"
        " copy of the same data, both up and idle, GetContext calls alternating between them",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 1,000 archived, window 40, 50 calls, 10 warm-up, 300 backlog, pool 300",
    )
    args = p.parse_args()
    if args.quick:
        args.archived, args.window, args.calls, args.warmup = 1000, 40, 50, 10
        args.backlog, args.pool = 300, 300
    return args


# ------------------------------------------------------------------ what runs beside a block


@contextlib.contextmanager
def quiet() -> Iterator[Check]:
    yield lambda: "nothing started by the benchmark"


def import_worker(target: str, seed: int, stored: Any) -> None:
    """A child process: one endless bulk import of generated turns into IMPORTED, until the
    process is ended; `stored` follows the items the server has stored."""
    gen = TextGenerator(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)

    def items() -> Iterator[ImportItem]:
        n = 0
        while True:
            role: Role = "user" if n % 2 == 0 else "assistant"
            when = start + timedelta(minutes=n)
            yield ImportItem(IMPORTED, NewItem(gen.text(role)[0], role=role, timestamp=when))
            n += 1

    def progress(result: ImportResult) -> None:
        stored.value = result.appended

    with Client(target, timeout=None) as client:
        client.import_items(items(), chunk_size=IMPORT_CHUNK, on_progress=progress)


@contextlib.contextmanager
def bulk_import(target: str, seed: int) -> Iterator[Check]:
    """A bulk import streaming into another conversation of the server from before the
    block (it has stored its first chunk) until after it, when its process is ended (the
    client reads ahead of the server: a stream left to finish would go on for minutes)."""
    ctx = multiprocessing.get_context("spawn")
    stored: Any = ctx.Value("q", 0)
    proc = ctx.Process(target=import_worker, args=(target, seed, stored), daemon=True)
    proc.start()
    try:
        deadline = time.monotonic() + IMPORT_START_SECONDS
        while stored.value == 0:
            if not proc.is_alive():
                raise RuntimeError(f"the import exited with {proc.exitcode} before storing")
            if time.monotonic() > deadline:
                raise RuntimeError("the import stored nothing in time")
            time.sleep(0.05)
        before, began = stored.value, time.perf_counter()

        def check() -> str:
            if not proc.is_alive():
                raise RuntimeError(f"the import ended during the block ({proc.exitcode})")
            during = stored.value - before
            seconds = time.perf_counter() - began
            return (
                f"bulk import streaming throughout: {before:,} items stored before the block,"
                f" {during:,} during it ({during / seconds:.1f} items/s; the server answers"
                f" each chunk of {IMPORT_CHUNK} once it is embedded), still streaming at its end"
            )

        yield check
    finally:
        proc.terminate()
        proc.join()
        log(f"import ended: {stored.value:,} items stored")


# ------------------------------------------------------------------ measuring


def timed_calls(client: Client, queries: Sequence[str], block: Block) -> None:
    """GetContext and Search of BIG, alternating, one of each per query."""
    for q in queries:
        t0 = time.perf_counter()
        client.get_context(BIG, q, max_tokens=MAX_TOKENS)
        t1 = time.perf_counter()
        client.search(q, conversation_id=BIG, top_k=SEARCH_TOP_K)
        t2 = time.perf_counter()
        block.context_ms.append((t1 - t0) * 1000)
        block.search_ms.append((t2 - t1) * 1000)


def run_block(
    client: Client,
    server_pid: int,
    name: str,
    beside: Callable[[], contextlib.AbstractContextManager[Check]],
    queries: Sequence[str],
    rng: random.Random,
) -> Block:
    block = Block(name)
    order = list(queries)
    rng.shuffle(order)
    with beside() as check:
        load0, cpu0, t0 = loadavg(), tree_cpu(server_pid), time.perf_counter()
        timed_calls(client, order, block)
        block.seconds = time.perf_counter() - t0
        cpu1 = tree_cpu(server_pid)
        block.beside = check()
        block.loadavg = (load0, loadavg())
    block.server_cpu, block.children_cpu = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
    gc50, gc99 = p50_p99(block.context_ms)
    s50, s99 = p50_p99(block.search_ms)
    log(f"{name}: GetContext p50 {gc50:.1f} p99 {gc99:.1f}, Search p50 {s50:.1f} p99 {s99:.1f}")
    return block


def agent_loop(client: Client, gen: TextGenerator, queries: Sequence[str]) -> AgentLoop:
    """An agent's turn, on the quiet machine: each question asked alone, then again right
    after a user turn is appended (read-your-writes: the context waits for the turn's
    vector), so that both see the same machine."""
    loop = AgentLoop()
    for q in queries:
        t0 = time.perf_counter()
        client.get_context(BIG, q, max_tokens=MAX_TOKENS)
        t1 = time.perf_counter()
        client.append(BIG, gen.text("user")[0], role="user")
        t2 = time.perf_counter()
        client.get_context(BIG, q, max_tokens=MAX_TOKENS)
        t3 = time.perf_counter()
        loop.alone_ms.append((t1 - t0) * 1000)
        loop.append_ms.append((t2 - t1) * 1000)
        loop.after_append_ms.append((t3 - t2) * 1000)
    return loop


def floor_of(embedder: Embedder, vectors: Any, queries: list[str]) -> Floor:
    """bench_retrieval's floor over these vectors: embed one query, search k=50."""
    case = Case("floor", [BIG], len(vectors), 0, 0)
    case.vectors.append(vectors)
    measure_floor(case, embedder, queries, random.Random(0))
    return Floor(case.floor_embed_ms, case.floor_search_ms)


def raw_rate_beside_loop(
    embedder: Embedder, texts: Sequence[str], batch: int, target: str, queries: Sequence[str]
) -> float:
    """raw_rate while the GetContext loop runs against the server: what a process of its
    own embedding the texts gets of the machine the loop leaves."""
    loop = ContextLoop(target, queries)
    loop.start()
    try:
        return raw_rate(embedder, texts, batch)
    finally:
        loop.stop()


def raw_rate(embedder: Embedder, texts: Sequence[str], batch: int) -> float:
    """items/s of embedder.embed over texts in chunks of `batch`, in this process."""
    for start in range(0, min(len(texts), RAW_WARMUP_TEXTS), batch):
        embedder.embed(list(texts[start : start + batch]))
    t0 = time.perf_counter()
    for start in range(0, len(texts), batch):
        embedder.embed(list(texts[start : start + batch]))
    return len(texts) / (time.perf_counter() - t0)


class ContextLoop:
    """GetContext calls against BIG back to back on a thread of this process, until stop();
    a failed call (the server was killed) is noted with its time and the loop goes on."""

    def __init__(self, target: str, queries: Sequence[str]) -> None:
        self._target = target
        self._queries = list(queries)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="context-loop", daemon=True)
        self.latencies_ms: list[float] = []
        self.failures: list[tuple[float, str]] = []  # (perf_counter, error)

    def _run(self) -> None:
        with Client(self._target, timeout=10.0) as client:
            k = 0
            while not self._stop.is_set():
                q = self._queries[k % len(self._queries)]
                k += 1
                t0 = time.perf_counter()
                try:
                    client.get_context(BIG, q, max_tokens=MAX_TOKENS)
                except ContextWMError as exc:
                    self.failures.append((time.perf_counter(), repr(exc)))
                    self._stop.wait(0.05)
                    continue
                self.latencies_ms.append((time.perf_counter() - t0) * 1000)

    def start(self, calls_first: int = 3) -> None:
        """Starts the loop and returns once it has made calls_first calls."""
        self._thread.start()
        while len(self.latencies_ms) < calls_first:
            if not self._thread.is_alive():
                raise RuntimeError("the GetContext loop ended")
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30.0)


def failures_text(failures: Sequence[tuple[float, str]]) -> str:
    """The first failure's error, if any, to quote after a count."""
    return f" (first: {failures[0][1][:200]})" if failures else ""


def append_texts(client: Client, texts: Sequence[str]) -> None:
    """The texts into BACKLOG through AppendBatch, APPEND_CALL items a call, roles
    alternating."""
    for start in range(0, len(texts), APPEND_CALL):
        items = []
        for k, text in enumerate(texts[start : start + APPEND_CALL]):
            role: Role = "user" if (start + k) % 2 == 0 else "assistant"
            items.append(NewItem(content=text, role=role))
        client.append_batch(BACKLOG, items)


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of a process and of its children so far."""
    return cpu_seconds(pid), sum(cpu_seconds(c) for c in child_pids(pid))


def wait_idle(pid: int, timeout: float = 600.0) -> None:
    """Waits until a process and its children use under 5 % of a core over a second."""
    deadline = time.monotonic() + timeout
    before = sum(tree_cpu(pid))
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = sum(tree_cpu(pid))
        if now - before < 0.05:
            return
        before = now
    raise RuntimeError(f"the server did not go idle in {timeout:.0f} s")


def reap_orphans(pids: Sequence[int], timeout: float = 10.0) -> str:
    """Waits for a killed server's processes to exit; kills any still there after timeout."""
    deadline = time.monotonic() + timeout
    left = list(pids)
    while left and time.monotonic() < deadline:
        left = [p for p in left if Path(f"/proc/{p}").exists() and not zombie(p)]
        time.sleep(0.05)
    for p in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    if left:
        return f"processes {left} of the killed server were still running after {timeout:.0f} s"
    return f"the killed server's processes ({len(pids)}) exited with it"


def zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def append_and_wait(target: str, texts: Sequence[str]) -> tuple[float, float]:
    """Appends texts to BACKLOG; returns (seconds until acknowledged, until all embedded)."""
    with Client(target, timeout=120.0) as client:
        t0 = time.perf_counter()
        append_texts(client, texts)
        acked = time.perf_counter() - t0
        wait_embedded(client, [BACKLOG])
        return acked, time.perf_counter() - t0


def backlog_under_load(
    target: str, texts: Sequence[str], queries: Sequence[str], raw: float
) -> Drain:
    """Appends texts while the GetContext loop runs; time until they are all embedded."""
    loop = ContextLoop(target, queries)
    loop.start()
    try:
        acked, seconds = append_and_wait(target, texts)
    finally:
        loop.stop()
    drain = Drain("backlog under load", len(texts), seconds, raw, acked, loop.latencies_ms)
    drain.notes.append(
        f"{len(texts):,} items acknowledged in {acked:.1f} s, all embedded {seconds:.1f} s"
        f" after the first append; {len(loop.latencies_ms)} GetContext calls meanwhile,"
        f" {len(loop.failures)} failed{failures_text(loop.failures)}"
    )
    log(f"backlog under load: {drain.rate:.1f} items/s")
    return drain


def backlog_beside_busy_loops(target: str, texts: Sequence[str], raw: float) -> Drain:
    """Appends texts while two busy loops hold both cores (no GetContext calls); time until
    they are all embedded: a low-priority indexer alone would all but stop here."""
    with busy_loops(2) as check:
        acked, seconds = append_and_wait(target, texts)
        beside = check()
    drain = Drain("backlog beside 2 busy loops", len(texts), seconds, raw, acked, goal=False)
    drain.notes.append(
        f"{len(texts):,} items acknowledged in {acked:.1f} s, all embedded {seconds:.1f} s"
        f" after the first append; {beside}"
    )
    log(f"backlog beside 2 busy loops: {drain.rate:.1f} items/s")
    return drain


def crash_and_drain(
    server: ServerProcess, texts: Sequence[str], queries: Sequence[str], raw: float
) -> tuple[Drain, ServerProcess]:
    """Appends texts while the GetContext loop runs, SIGKILLs the server after the last
    acknowledgement, restarts it on the same data dir and times the drain of what was left
    pending. Returns the drain and the restarted server."""
    loop = ContextLoop(server.target, queries)
    loop.start()
    processes = [server.pid, *child_pids(server.pid)]  # gone with the started one too
    try:
        with Client(server.target, timeout=120.0) as client:
            before = client.get_conversation(BACKLOG).total_items
            t0 = time.perf_counter()
            append_texts(client, texts)
            killed_at = time.perf_counter()
            server.kill()
    finally:
        loop.stop()
    acked = killed_at - t0
    unexpected = [f for f in loop.failures if f[0] < killed_at]
    at_kill = len(loop.failures) - len(unexpected)
    orphans = reap_orphans(processes)
    log(f"server killed {acked:.2f} s after the first append; {orphans}")

    restarted = ServerProcess(
        server.data_dir,
        extra_args=server.extra_args,
        log_path=server.data_dir.parent / "restarted-server.log",
    ).start()
    log(f"restarted: pid {restarted.pid}, ready in {restarted.start_seconds:.1f} s")
    loop = ContextLoop(restarted.target, queries)
    try:
        with Client(restarted.target, timeout=120.0) as client:
            t0 = time.perf_counter()
            conversation = client.get_conversation(BACKLOG)
            loop.start(calls_first=0)
            wait_embedded(client, [BACKLOG])
            seconds = time.perf_counter() - t0
    finally:
        loop.stop()
    pending, stored = conversation.pending_embeddings, conversation.total_items - before
    drain = Drain("drain after a crash", pending, seconds, raw, acked, loop.latencies_ms)
    drain.notes += [
        f"{len(texts):,} items acknowledged in {acked:.2f} s, then SIGKILL; {orphans};"
        f" GetContext calls failed: {len(unexpected)} before the kill"
        f"{failures_text(unexpected)}, {at_kill} at it or after (the call in flight),"
        f" {len(loop.failures)} after the restart{failures_text(loop.failures)}",
        f"restarted server ready {restarted.start_seconds:.1f} s after its launch, with"
        f" {pending:,} items pending; every acknowledged item stored:"
        f" {stored:,} of {len(texts):,} ({'yes' if stored == len(texts) else 'NO'})",
    ]
    if stored != len(texts):
        raise RuntimeError(f"{len(texts) - stored} acknowledged items lost in the crash")
    if pending == 0:
        drain.notes.append("nothing was pending at the restart: the crash case did not happen")
    log(f"drain after the crash: {pending} pending, {drain.rate:.1f} items/s")
    return drain, restarted


# ------------------------------------------------------------------ against a revision


@dataclass
class Compared:
    """GetContext of this checkout's server and of a revision's, calls alternating."""

    ref: str
    context_ms: dict[str, list[float]]  # by "this checkout" and the revision
    floors: list[Floor]

    def report(self, archived: int) -> None:
        floor = sum(f.p50 for f in self.floors) / len(self.floors)
        rows = []
        for name, ms in self.context_ms.items():
            p50 = p50_p99(ms)[0]
            rows.append([name, f"{p50:.2f}", f"{floor:.2f}", f"{p50 - floor:.2f}"])
        print_table(
            f"Overhead beyond the model against {self.ref}, at {archived:,} archived items (ms;"
            f" each server on a copy of the same data, both up and idle, {len(ms)} GetContext"
            " calls each, alternating between them; floor as above, before and after)",
            ["server", "GetContext p50", "floor", "overhead"],
            rows,
        )


def compare_overhead(
    tmp: Path,
    data_dir: Path,
    args: argparse.Namespace,
    embedder: Embedder,
    vectors: Any,
    queries: Sequence[str],
) -> Compared:
    """This checkout's server and args.compare_ref's, each on a copy of data_dir with the
    same window appended, asked the same questions in turn (the order alternating), so that
    the shared machine's drift falls on both alike."""
    ref = args.compare_ref
    names = ("this checkout", ref)
    with contextlib.ExitStack() as stack:
        envs = {names[0]: {}, ref: stack.enter_context(revision_env(ref, tmp))}
        clients: dict[str, Client] = {}
        pids = []
        for n, name in enumerate(names):
            copy = tmp / f"data-compare-{n}"
            shutil.copytree(data_dir, copy)
            server = stack.enter_context(ServerProcess(copy, env=envs[name]))
            client = clients[name] = stack.enter_context(Client(server.target, timeout=120.0))
            append_window(client, TextGenerator(args.seed + 5), args.window)
            warm_up(client, TextGenerator(args.seed + 6), args.warmup)
            pids.append(server.pid)
        log(f"comparing against {ref}: both servers up")
        for pid in pids:
            wait_idle(pid)
        floors = [floor_of(embedder, vectors, list(queries))]
        context_ms: dict[str, list[float]] = {name: [] for name in names}
        for n, q in enumerate(queries):
            for name in names if n % 2 == 0 else names[::-1]:
                t0 = time.perf_counter()
                clients[name].get_context(BIG, q, max_tokens=MAX_TOKENS)
                context_ms[name].append((time.perf_counter() - t0) * 1000)
        floors.append(floor_of(embedder, vectors, list(queries)))
    for name, ms in context_ms.items():
        log(f"{name}: GetContext p50 {p50_p99(ms)[0]:.2f} ms")
    return Compared(ref, context_ms, floors)


# ------------------------------------------------------------------ set-up


def load_big(data_dir: Path, embedder: Embedder, args: argparse.Namespace) -> Any:
    """Writes BIG's archive into the store; returns its vectors."""
    rng = random.Random(args.seed)
    pool = embed_pool(embedder, min(args.pool, args.archived), args.seed)
    archive = make_archive(args.archived, pool, rng, TextGenerator(args.seed + 1), args.noise)
    t0 = time.perf_counter()
    load_store(data_dir, BIG, archive, 0, args.archived, [], time.time())
    log(f"{BIG}: {args.archived:,} archived loaded in {time.perf_counter() - t0:.1f} s")
    return archive.vectors


def append_window(client: Client, gen: TextGenerator, items: int) -> None:
    batch = []
    for w in range(items):
        role: Role = "user" if w % 2 == 0 else "assistant"
        batch.append(NewItem(content=gen.text(role)[0], role=role))
    client.append_batch(BIG, batch)
    wait_embedded(client, [BIG])


def warm_up(client: Client, gen: TextGenerator, calls: int) -> float:
    """The first GetContext (it builds the FAISS index) and `calls` more of each call;
    returns the first call's ms."""
    t0 = time.perf_counter()
    client.get_context(BIG, gen.query(), max_tokens=MAX_TOKENS)
    first = (time.perf_counter() - t0) * 1000
    timed_calls(client, [gen.query() for _ in range(calls)], Block("warm-up"))
    return first


def the_embedder() -> tuple[Embedder, int]:
    """The server's own embedder (its factory on its default setting) and indexer batch."""
    from contextwm.adapters.embedders import make_embedder
    from contextwm.settings import ServerSettings

    settings = ServerSettings()
    embedder = make_embedder(settings.embedder)
    if embedder.model_name != MODEL:
        # load_store writes the archive's vectors under MODEL's name.
        raise RuntimeError(f"the server's embedder is {embedder.model_name!r}, not {MODEL!r}")
    return embedder, settings.indexer_batch_size


# ------------------------------------------------------------------ main


def main() -> int:
    args = parse_args()
    began = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="cwm-bench-contention-"))
    data_dir = tmp / "data"
    data_dir.mkdir()
    log(f"data dir {data_dir}")
    embedder, indexer_batch = the_embedder()
    vectors = load_big(data_dir, embedder, args)
    gen = TextGenerator(args.seed + 2)
    queries = [gen.query() for _ in range(args.calls)]
    backlog, again, busy = (
        [gen.text("user" if k % 2 == 0 else "assistant")[0] for k in range(args.backlog)]
        for _ in range(3)
    )
    rng = random.Random(args.seed)
    compared = None
    if args.compare_ref:
        compared = compare_overhead(tmp, data_dir, args, embedder, vectors, queries)

    server = ServerProcess(
        data_dir, extra_args=["--no-own-session"] if args.no_own_session else []
    ).start()
    log(f"server pid {server.pid} port {server.port} up in {server.start_seconds:.1f} s")
    try:
        with Client(server.target, timeout=120.0) as client:
            append_window(client, gen, args.window)
            first_ms = warm_up(client, gen, args.warmup)
            log(f"warmed up (first GetContext {first_ms:.0f} ms)")
            # The floor brackets the quiet block, the overhead's reference.
            wait_idle(server.pid)
            floors = [floor_of(embedder, vectors, queries)]
            blocks = [run_block(client, server.pid, "quiet", quiet, queries, rng)]
            floors.append(floor_of(embedder, vectors, queries))
            conditions: list[tuple[str, Callable[[], contextlib.AbstractContextManager[Check]]]]
            conditions = [
                ("1 busy loop", lambda: busy_loops(1)),
                ("2 busy loops", lambda: busy_loops(2)),
                ("bulk import", lambda: bulk_import(server.target, args.seed + 3)),
                ("quiet again", quiet),
            ]
            for name, beside in conditions:
                # Each block from an idle server (an ended import leaves a chunk embedding).
                wait_idle(server.pid)
                blocks.append(run_block(client, server.pid, name, beside, queries, rng))
            wait_embedded(client, [BIG, IMPORTED])
            wait_idle(server.pid)
            agent = agent_loop(client, gen, queries)
            wait_embedded(client, [BIG])
        wait_idle(server.pid)
        log(f"raw embedding of the backlog texts, batches of {indexer_batch}, server idle")
        raw = raw_rate(embedder, backlog, indexer_batch)
        raw_again = raw_rate(embedder, again, indexer_batch)
        raw_busy = raw_rate(embedder, busy, indexer_batch)
        log(f"raw: {raw:.1f}, {raw_again:.1f} and {raw_busy:.1f} items/s")
        near = raw_rate_beside_loop(embedder, backlog, indexer_batch, server.target, queries)
        near_again = raw_rate_beside_loop(embedder, again, indexer_batch, server.target, queries)
        log(f"raw beside the GetContext loop: {near:.1f} and {near_again:.1f} items/s")
        wait_idle(server.pid)
        drains = [backlog_under_load(server.target, backlog, queries, raw)]
        drains[-1].beside_rate = near
        crash, server = crash_and_drain(server, again, queries, raw_again)
        crash.beside_rate = near_again
        drains.append(crash)
        wait_idle(server.pid)
        drains.append(backlog_beside_busy_loops(server.target, busy, raw_busy))
    finally:
        server.stop()

    report(args, blocks, floors, agent, drains, indexer_batch, first_ms)
    if compared is not None:
        compared.report(args.archived)
    log(f"total {time.perf_counter() - began:.0f} s")
    if args.keep:
        log(f"kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


# ------------------------------------------------------------------ report


def ratio(value: float, reference: float) -> str:
    return f"{value / reference:.2f}"


def latency_rows(blocks: list[Block]) -> tuple[list[list[str]], list[list[str]]]:
    """The latency table's rows, and the goal rows of the loaded blocks."""
    quiet_gc, quiet_s = p50_p99(blocks[0].context_ms), p50_p99(blocks[0].search_ms)
    rows: list[list[str]] = []
    goals: list[list[str]] = []
    for k, b in enumerate(blocks):
        gc, s = p50_p99(b.context_ms), p50_p99(b.search_ms)
        loaded = 0 < k < len(blocks) - 1
        met = (
            gc[0] <= P50_GOAL * quiet_gc[0]
            and gc[1] <= P99_GOAL * quiet_gc[1]
            and s[0] <= P50_GOAL * quiet_s[0]
            and s[1] <= P99_GOAL * quiet_s[1]
        )
        rows.append(
            [
                b.name,
                str(len(b.context_ms)),
                f"{gc[0]:.1f}",
                f"{gc[1]:.1f}",
                ratio(gc[0], quiet_gc[0]),
                ratio(gc[1], quiet_gc[1]),
                f"{s[0]:.1f}",
                f"{s[1]:.1f}",
                ratio(s[0], quiet_s[0]),
                ratio(s[1], quiet_s[1]),
                verdict(met) if loaded else ("reference" if k == 0 else "drift"),
                f"{b.loadavg[0]} -> {b.loadavg[1]}",
            ]
        )
        if not loaded:
            continue
        for call, (p50, p99), (q50, q99) in (("GetContext", gc, quiet_gc), ("Search", s, quiet_s)):
            goals.append(
                [
                    f"{b.name}: {call} p50 <= {P50_GOAL} x quiet",
                    f"{p50 / q50:.2f} x",
                    verdict(p50 <= P50_GOAL * q50),
                ]
            )
            goals.append(
                [
                    f"{b.name}: {call} p99 <= {P99_GOAL:.0f} x quiet",
                    f"{p99 / q99:.2f} x",
                    verdict(p99 <= P99_GOAL * q99),
                ]
            )
    return rows, goals


def agent_loop_report(loop: AgentLoop) -> None:
    """Prints GetContext alone and right after an append (no goal)."""
    alone, after, append = (
        p50_p99(ms) for ms in (loop.alone_ms, loop.after_append_ms, loop.append_ms)
    )
    print_table(
        "GetContext right after an append, as an agent loop asks (ms; quiet; no goal): each"
        " question alone, then again right after one user turn is appended, which the context"
        " waits to see embedded",
        ["call", "calls", "p50", "p99"],
        [
            ["GetContext alone", str(len(loop.alone_ms)), f"{alone[0]:.2f}", f"{alone[1]:.2f}"],
            ["Append (one turn)", str(len(loop.append_ms)), f"{append[0]:.2f}", f"{append[1]:.2f}"],
            [
                "GetContext after the append",
                str(len(loop.after_append_ms)),
                f"{after[0]:.2f}",
                f"{after[1]:.2f}",
            ],
        ],
    )
    print(f"  the append costs GetContext {after[0] - alone[0]:+.2f} ms at the p50")


def overhead_report(archived: int, context_p50: float, floors: list[Floor]) -> list[str]:
    """Prints the overhead beyond the model (the quiet block's GetContext p50 minus the mean
    of the floors measured before and after it); returns its goal row. A floor above the
    call means the machine changed under the measurement: no verdict then."""
    floor = sum(f.p50 for f in floors) / len(floors)
    overhead = context_p50 - floor
    judged = verdict(overhead <= OVERHEAD_GOAL_MS) if overhead >= 0 else "INVALID (floor > call)"
    rows = [
        [
            when,
            f"{p50_p99(f.embed_ms)[0]:.2f}",
            f"{p50_p99(f.search_ms)[0]:.3f}",
            f"{f.p50:.2f}",
        ]
        for when, f in zip(("before the quiet block", "after it"), floors, strict=True)
    ]
    print_table(
        f"Overhead beyond the model at {archived:,} archived items (ms; floor = this process,"
        f" the server's embedder, one query, + exact FAISS k=50 on one thread, server idle)",
        ["floor measured", "embed p50", "search p50", "floor"],
        rows,
    )
    print(
        f"overhead = quiet GetContext p50 {context_p50:.2f} - mean floor {floor:.2f}"
        f" = {overhead:.2f} ms (goal <= {OVERHEAD_GOAL_MS:.0f}): {judged};"
        f" floor after / before {floors[-1].p50 / floors[0].p50:.2f}"
    )
    return [f"overhead beyond the model <= {OVERHEAD_GOAL_MS:.0f} ms", f"{overhead:.2f} ms", judged]


def report(
    args: argparse.Namespace,
    blocks: list[Block],
    floors: list[Floor],
    agent: AgentLoop,
    drains: list[Drain],
    indexer_batch: int,
    first_ms: float,
) -> None:
    print("\ncontextwm contention benchmark" + (" (--quick)" if args.quick else ""))
    print(
        "server: `contextwm serve` subprocess, "
        + (
            "--no-own-session (the benchmark's session)"
            if args.no_own_session
            else "default settings (a session of its own)"
        )
        + f"; conversation '{BIG}':"
        f" {args.archived:,} archived (loaded straight into SQLite with vectors) + {args.window}"
        f" window items appended through the API; first GetContext {first_ms:.0f} ms."
        f" Each block: {args.calls} x GetContext(max_tokens={MAX_TOKENS}) and Search"
        f"(top_k={SEARCH_TOP_K}), alternating, the same questions shuffled; ratios are to the"
        " first quiet block."
    )
    rows, goals = latency_rows(blocks)
    print_table(
        f"GetContext and Search latency (ms) by condition (goal under load: p50 <= {P50_GOAL} x"
        f" quiet, p99 <= {P99_GOAL:.0f} x quiet)",
        [
            "condition",
            "calls",
            "GetContext p50",
            "p99",
            "x quiet p50",
            "x quiet p99",
            "Search p50",
            "p99",
            "x quiet p50",
            "x quiet p99",
            "goal",
            "loadavg before -> after",
        ],
        rows,
    )
    for b in blocks:
        print(
            f"  {b.name} ({b.seconds:.1f} s; server {b.server_cpu / b.seconds:.0%} of a core,"
            f" its embedding child {b.children_cpu / b.seconds:.0%}): {b.beside}"
        )
    q0, q1 = blocks[0], blocks[-1]
    gc0, gc1 = p50_p99(q0.context_ms), p50_p99(q1.context_ms)
    s0, s1 = p50_p99(q0.search_ms), p50_p99(q1.search_ms)
    print(
        f"drift (quiet again / quiet): GetContext p50 {ratio(gc1[0], gc0[0])} x,"
        f" p99 {ratio(gc1[1], gc0[1])} x; Search p50 {ratio(s1[0], s0[0])} x,"
        f" p99 {ratio(s1[1], s0[1])} x"
    )

    goals.append(overhead_report(args.archived, gc0[0], floors))
    agent_loop_report(agent)

    drain_rows = []
    for d in drains:
        loop = "-"
        if d.loop_ms:
            loop50, loop99 = p50_p99(d.loop_ms)
            loop = f"{loop50:.1f} / {loop99:.1f} ({ratio(loop50, gc0[0])} x quiet p50)"
        drain_rows.append(
            [
                d.name,
                f"{d.items:,}",
                f"{d.seconds:.1f}",
                f"{d.rate:.1f}",
                f"{d.raw_rate:.1f}",
                ratio(d.rate, d.raw_rate),
                f"{d.beside_rate:.1f}" if d.beside_rate else "-",
                ratio(d.rate, d.beside_rate) if d.beside_rate else "-",
                verdict(d.rate >= DRAIN_GOAL * d.beside_rate) if d.goal else "(no goal)",
                loop,
            ]
        )
        if not d.goal:
            continue
        if d.loop_ms:
            during = p50_p99(d.loop_ms)[0] / gc0[0]
            goals.append(
                [
                    f"GetContext p50 during the {d.name} <= {P50_GOAL} x quiet",
                    f"{during:.2f} x",
                    verdict(during <= P50_GOAL),
                ]
            )
        goals.append(
            [
                f"{d.name} >= {DRAIN_GOAL} x raw beside the loop",
                f"{d.rate / d.beside_rate:.2f} x",
                verdict(d.rate >= DRAIN_GOAL * d.beside_rate),
            ]
        )
    print_table(
        f"Embedding backlogs (items/s; raw = the same texts embedded in this process in batches"
        f" of {indexer_batch}, with the server idle, and beside the same GetContext loop;"
        f" goal >= {DRAIN_GOAL} x raw beside the loop)",
        [
            "case",
            "items",
            "seconds",
            "rate",
            "raw idle",
            "x idle",
            "raw beside loop",
            "x beside",
            "goal",
            "GetContext p50 / p99 ms",
        ],
        drain_rows,
    )
    cores = os.cpu_count() or 1
    print(
        f"  (GetContext calls back to back keep one core busy: a backlog can have the other"
        f" {cores - 1} core{'s' if cores > 2 else ''}, and a third of the first within"
        f" GetContext's {P50_GOAL} x goal, so at most about {(cores - 2 / 3) / cores:.2f} x"
        " the raw rate of the idle machine.)"
    )
    print("  backlog under load: items = all appended, timed from the first append")
    print("  drain after a crash: items = pending when the restarted server was ready")
    print("  beside 2 busy loops: items = all appended, timed from the first append")
    for d in drains:
        for note in d.notes:
            print(f"  {d.name}: {note}")

    print_table("Goals", ["goal", "measured", "verdict"], goals)
    missed = [g[0] for g in goals if g[2] != verdict(True)]
    print(f"\nsummary: {len(goals) - len(missed)} of {len(goals)} goals met")
    for name in missed:
        print(f"  not met: {name}")


if __name__ == "__main__":
    raise SystemExit(main())
