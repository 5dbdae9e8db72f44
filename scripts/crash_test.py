#!/usr/bin/env python3
"""Crash test: the server is SIGKILLed at random moments, start-up included, while writer
processes append with idempotency keys; afterwards nothing acknowledged may be lost,
duplicated or changed. With --postgresql, the same over several replicas on one PostgreSQL
database, which is also crashed (`pg_ctl -m immediate`) and started again meanwhile.

1. Starts `python -m contextwm serve --data-dir D --port P` on one data directory; P is
   chosen free once, so the writers reconnect to the same address after every restart.
   Creates the conversations: two shared by all writers and one of each writer's own, with
   windows small enough that appends evict all the time (bounded by items or by tokens).
2. Runs --writers processes (spawned), each with its own Client: `append` and `append_batch`
   (2..8 items) with an idempotency key per item, now and then a search or get_context.
   A call that fails with UNAVAILABLE or DEADLINE_EXCEEDED is sent again with the same keys
   until it is acknowledged; each acknowledged item (key, conversation, seq, content) goes to
   the writer's journal, fsynced before the next call. Now and then a writer sends one of its
   acknowledged calls again (often across a restart): it must come back as duplicates with
   the first seqs.
3. Meanwhile SIGKILLs the server --kills times and restarts it on the same data. Each kill
   comes at a random moment of one kind: during start-up (a delay after the spawn drawn from
   the measured start-up time: before it listens, while the model loads, or just as it gets
   ready), just after its health service reported it ready (within 0.5 s), while serving (up to
   --max-uptime s), mid-call (once a writer's call has been in flight for up to 20 ms), or at
   a commit (as SQLite writes its WAL while a call is in flight: the acknowledgement is then
   lost and the retry must come back as a duplicate).
4. Starts it a last time, lets the writers finish their calls, and checks (no gap in the
   seqs is legitimate: an append takes last_seq + 1 under its conversation's lock and writes
   the items and the new last_seq in one transaction, which a kill leaves all or nothing, and
   memory is reloaded from the store after any failure; see conversations/appends.py and
   adapters/sqlite/items.py):
   - every acknowledged item is stored exactly once, with its acknowledged seq and content,
     and nothing is stored that was never acknowledged (writers stop only once acknowledged);
   - each conversation's seqs run 1..n, and each writer saw its own seqs increase;
   - every item is in exactly one state (window or archived); window items and tokens match
     GetConversation and stay within window_max_items and the token limit;
   - pending embeddings reach 0; archived items are found by search for their content;
     get_context answers every conversation within its budget, with its newest window item.
5. Stops it with SIGTERM (exit code 0 expected), starts it once more and checks again (the
   indexes saved at shutdown load, the store reopens cleanly), stops it again and runs
   `contextwm check` on the directory (store integrity; each saved index holds exactly the
   stored vectors of the archive).

With --postgresql the store is a database of a PostgreSQL cluster the script starts
(tests/postgres_server.py, durable: fsync on, so what was committed survives its crash), and
--replicas N servers serve it, each its own process with its own data directory and port.
The writers' clients balance over all of them (gRPC round robin), and the checks run through
each replica in turn, which must list the same items. What differs:
   - each kill picks a replica at random (a start-up kill, the one started again just
     then); the others keep serving, so the writers' retries mostly land on them. With more
     than one replica, a mid-call kill's call in flight may be at another one;
   - "at a commit" watches the cluster's current WAL segment instead of SQLite's WAL file
     (any replica's commit, or an indexer's, moves it);
   - --db-restarts K times, at a random moment while every replica serves, PostgreSQL is
     stopped with `pg_ctl -m immediate` (a crash: no checkpoint, connections cut) and
     started again after a random pause of up to --max-db-down s. Calls must answer only
     UNAVAILABLE or DEADLINE_EXCEEDED meanwhile (the writers count the statuses they see
     from the stop until every replica answers a read again; any other is a FAIL), and the
     replicas must reconnect by themselves: none is restarted for it. Kills and database
     restarts take turns, never overlap: a replica started while the database is down
     exits (it cannot open its store), which a supervisor's restart would cover;
   - `contextwm check` (step 5) reads a SQLite data directory offline: on PostgreSQL it is
     skipped, as the report says; the online checks run through every replica instead.

Prints the figures (kills by moment and by replica, database restarts, starts, acknowledged
items, retries and the statuses seen, duration) and PASS or FAIL with the details; exit code
1 on FAIL, when the work directory is kept.

Run:  .venv/bin/python scripts/crash_test.py                  (10 kills, about 1.5 min)
      .venv/bin/python scripts/crash_test.py --kills 100      (about 15 min)
      .venv/bin/python scripts/crash_test.py --postgresql --replicas 2 --kills 30 --db-restarts 5
                                                              (about 10 min)
(a start takes about 5 s, the model loading twice: most of the time goes to restarts. A
replica's takes 10 to 20 s on 2 cores, the other serving the writers meanwhile, and the first
check may wait up to a minute more: the items a killed replica had claimed to embed are left
to it until their lease runs out)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import queue
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

import psycopg
from bench_common import TextGenerator, log  # also sets HF_HUB_OFFLINE for the server
from contextwm_client import (
    Client,
    ContextWMError,
    ConversationSettings,
    DeadlineExceededError,
    Item,
    NewItem,
    Role,
    UnavailableError,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from postgres_server import PostgresServer

T = TypeVar("T")

# Shared by every writer: one window bounded by items, one by tokens (items are ~50 tokens).
SHARED: dict[str, ConversationSettings] = {
    "shared-items": ConversationSettings(window_max_items=12, window_max_tokens=8000),
    "shared-tokens": ConversationSettings(window_max_items=100, window_max_tokens=600),
}
OWN = ConversationSettings(window_max_items=25, window_max_tokens=1000)
# Between the tries of a call, so that writers waiting for a restart do not spin.
RETRY_PAUSE = 0.1
# gRPC backs off reconnecting up to 2 minutes by default; a restarted server must be found fast.
CHANNEL_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 500),
)
# Writers balance over the replicas, and skip one that is down for the others.
BALANCED = (("grpc.lb_policy_name", "round_robin"),)
# The statuses a call may answer while a server is down or PostgreSQL is: retried as they are.
RETRIED = ("UNAVAILABLE", "DEADLINE_EXCEEDED")
# How a kill is timed, and how often each kind is drawn.
KILL_KINDS = ("start-up", "just after ready", "serving", "mid-call", "at a commit")
KILL_WEIGHTS = (0.3, 0.15, 0.2, 0.15, 0.2)
# A "mid-call" kill comes once a writer's call has been in flight for a random time up to
# this: from the request's arrival to past its commit (an append takes a few milliseconds).
MID_CALL_SECONDS = 0.02
# Members of a killed server's process group still alive this long after the kill are
# reported (the embedding child used to go on loading the model).
ORPHAN_GRACE = 3.0
_LISTENING = re.compile(r"contextwm listening on port (\d+)")


def own_conversation(writer: int) -> str:
    return f"own-{writer}"


def conversation_settings(writers: int) -> dict[str, ConversationSettings]:
    return {**SHARED, **{own_conversation(w): OWN for w in range(writers)}}


# ------------------------------------------------------------------ writers


class Aborted(Exception):
    """The run was given up (the server did not come back): stop retrying."""


@dataclass
class WriterStats:
    """What one writer did; sent to the main process as a dict."""

    calls: int = 0
    appends: int = 0
    batches: int = 0
    items: int = 0
    duplicates: int = 0
    replays: int = 0
    reads: int = 0
    retried_calls: int = 0
    retries: Counter[str] = field(default_factory=Counter)
    # Every status a try failed with while PostgreSQL was down or reconnecting (see
    # restart_database), retried or not.
    outage_statuses: Counter[str] = field(default_factory=Counter)
    # Failures that are not retried (neither UNAVAILABLE nor DEADLINE_EXCEEDED), by status.
    failures: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    # Keys of calls never acknowledged (refused, or given up): stored or not.
    unknown: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Sent:
    """An acknowledged call, kept to be sent again."""

    conv: str
    items: list[NewItem]
    seqs: list[int]


def until_answered(call: Callable[[], T], stats: WriterStats, abort: Any, outage: Any) -> T:
    """call() until the server answers. UNAVAILABLE (down, starting, killed mid-call, or its
    database down) and DEADLINE_EXCEEDED (too slow while it starts) are retried as they are:
    same request, same idempotency keys, so a call the server committed before dying returns
    its first result. Any status seen while `outage` is set is counted, the others raised."""
    tries = 0
    while True:
        try:
            return call()
        except ContextWMError as exc:
            if outage.is_set():
                stats.outage_statuses[exc.code] += 1
            if not isinstance(exc, UnavailableError | DeadlineExceededError):
                stats.failures[exc.code] += 1
                raise
            stats.retries[exc.code] += 1
            tries += 1
            if tries == 1:
                stats.retried_calls += 1
            if abort.is_set():
                raise Aborted from exc
            time.sleep(RETRY_PAUSE)


def record(journal: IO[str], acks: Sequence[dict[str, Any]]) -> None:
    """Appends acknowledged items to the journal and fsyncs it, so it survives as they do."""
    journal.write("".join(json.dumps(a) + "\n" for a in acks))
    journal.flush()
    os.fsync(journal.fileno())


class Writer:
    """One writer's calls: new items, replays of acknowledged calls, and reads."""

    def __init__(
        self,
        writer: int,
        client: Client,
        journal: IO[str],
        seed: int,
        abort: Any,
        in_flight: Any,
        outage: Any,
    ) -> None:
        self.writer = writer
        self.client = client
        self.journal = journal
        self.abort = abort
        self.outage = outage
        self.in_flight = in_flight
        self.rng = random.Random(seed * 1000 + writer)
        self.texts = TextGenerator(seed * 1000 + writer)
        self.stats = WriterStats()
        self.conversations = [own_conversation(writer), *SHARED]
        self.sent: list[Sent] = []
        self.n = 0

    def step(self) -> None:
        rng = self.rng
        # Half to its own conversation, half to the shared ones.
        conv = self.conversations[0] if rng.random() < 0.5 else rng.choice(self.conversations[1:])
        r = rng.random()
        if r < 0.02:
            self.read(conv)
        elif r < 0.05 and self.sent:
            self.replay(rng.choice(self.sent))
        else:
            self.append(conv, 1 if r < 0.6 else rng.randint(2, 8))

    def send(self, conv: str, items: list[NewItem]) -> tuple[list[int], list[bool]]:
        """One call, `append` for a single item and `append_batch` for more, until answered;
        the seqs and duplicate marks it returned. Each try is marked in flight in
        self.in_flight[writer] (its start, 0 when none), for the "mid-call" kills."""
        stats = self.stats
        stats.calls += 1

        def marked(call: Callable[[], T]) -> Callable[[], T]:
            def run() -> T:
                self.in_flight[self.writer] = time.monotonic()
                try:
                    return call()
                finally:
                    self.in_flight[self.writer] = 0.0

            return run

        client = self.client
        if len(items) == 1:
            item = items[0]
            one = until_answered(
                marked(
                    lambda: client.append(
                        conv,
                        item.content,
                        role=item.role,
                        metadata=item.metadata,
                        idempotency_key=item.idempotency_key,
                    )
                ),
                stats,
                self.abort,
                self.outage,
            )
            return [one.seq], [one.duplicate]
        batch = until_answered(
            marked(lambda: client.append_batch(conv, items)), stats, self.abort, self.outage
        )
        if len(batch.results) != len(items):
            raise RuntimeError(f"{len(items)} items sent, {len(batch.results)} results")
        return [r.seq for r in batch.results], [r.duplicate for r in batch.results]

    def new_items(self, count: int) -> list[NewItem]:
        items: list[NewItem] = []
        for _ in range(count):
            self.n += 1
            key = f"w{self.writer}-{self.n:06d}"
            role: Role = "user" if self.rng.random() < 0.5 else "assistant"
            text, _ = self.texts.text(role)
            items.append(
                NewItem(
                    content=f"{text} [{key}]",
                    role=role,
                    metadata={"key": key, "writer": str(self.writer)},
                    idempotency_key=key,
                )
            )
        return items

    def append(self, conv: str, count: int) -> None:
        """New items, sent until acknowledged, then journaled."""
        items = self.new_items(count)
        keys = [i.idempotency_key or "" for i in items]
        stats = self.stats
        try:
            seqs, duplicates = self.send(conv, items)
        except Aborted:
            stats.unknown.extend(keys)
            raise
        except ContextWMError as exc:  # not a crash: a refusal or a server bug
            stats.errors.append(f"append of {keys} to {conv}: {exc!r}")
            stats.unknown.extend(keys)
            return
        stats.items += len(items)
        if len(items) == 1:
            stats.appends += 1
        else:
            stats.batches += 1
        stats.duplicates += sum(duplicates)
        record(
            self.journal,
            [
                {"key": k, "conv": conv, "seq": s, "content": i.content, "duplicate": d}
                for k, s, i, d in zip(keys, seqs, items, duplicates, strict=True)
            ],
        )
        self.sent = [*self.sent[-49:], Sent(conv, items, seqs)]

    def replay(self, old: Sent) -> None:
        """An acknowledged call sent again, as by a client whose acknowledgement was lost
        (often across a restart): it must come back as duplicates with the first seqs."""
        stats = self.stats
        stats.replays += 1
        try:
            seqs, duplicates = self.send(old.conv, old.items)
        except ContextWMError as exc:
            stats.errors.append(f"replay to {old.conv}: {exc!r}")
            return
        if seqs != old.seqs or not all(duplicates):
            stats.errors.append(
                f"replay to {old.conv}: seqs {old.seqs} came back as {seqs}, duplicate marks"
                f" {duplicates}"
            )

    def read(self, conv: str) -> None:
        """A search or get_context, for load on the read paths while the server dies (a
        failure of the server's own making is an error; a dead server is not)."""
        stats = self.stats
        stats.reads += 1
        query = self.texts.query()
        try:
            if self.rng.random() < 0.5:
                until_answered(
                    lambda: self.client.search(query, conversation_id=conv),
                    stats,
                    self.abort,
                    self.outage,
                )
            else:
                until_answered(
                    lambda: self.client.get_context(conv, query, max_tokens=800),
                    stats,
                    self.abort,
                    self.outage,
                )
        except ContextWMError as exc:
            stats.errors.append(f"read of {conv}: {exc!r}")


def writer_main(
    writer: int,
    target: str,
    channel_options: Sequence[tuple[str, Any]],
    journal_path: str,
    seed: int,
    pause: float,
    call_timeout: float,
    stop: Any,
    abort: Any,
    in_flight: Any,
    outage: Any,
    results: Any,
) -> None:
    """One writer process: calls until `stop`, then finishes its call in hand; puts its
    WriterStats (as a dict) on `results`."""
    stats = WriterStats()
    try:
        with (
            Client(target, timeout=call_timeout, channel_options=channel_options) as client,
            open(journal_path, "a", encoding="utf-8") as journal,
        ):
            w = Writer(writer, client, journal, seed, abort, in_flight, outage)
            stats = w.stats
            while not stop.is_set():
                w.step()
                time.sleep(w.rng.uniform(0, 2 * pause))
    except Aborted:
        pass
    except BaseException as exc:  # reported by the main process
        stats.errors.append(f"writer {writer} stopped: {exc!r}")
    counts = {k: dict(v) for k, v in vars(stats).items() if isinstance(v, Counter)}
    results.put({**vars(stats), **counts, "writer": writer})


# ------------------------------------------------------------------ the server


@dataclass
class Kill:
    kind: str  # how it was timed: one of KILL_KINDS
    replica: str  # which server: Server.name
    at: float  # time.monotonic()
    phase: str  # what the server was doing: before listening, loading model, ready
    after_spawn: float  # seconds
    after_ready: float | None  # seconds, None when killed before
    in_flight: int  # writer calls in flight at the kill


class Server:
    """`python -m contextwm serve` on a fixed port and data directory, started again and
    again; its output goes to one log file, each start under a header line. With a `store`
    (a PostgreSQL DSN) it is one replica of those serving that database.

    It listens (prints its listening line) before the model has loaded; it is ready when its
    health service says so, which a thread per start waits for."""

    def __init__(
        self,
        data_dir: Path,
        port: int,
        log_path: Path,
        start_timeout: float,
        *,
        store: str | None = None,
        name: str = "the server",
    ) -> None:
        self.data_dir = data_dir
        self.port = port
        self.log_path = log_path
        self.start_timeout = start_timeout
        self.store = store
        self.name = name
        self._log = log_path.open("a", encoding="utf-8")
        self._log_lock = threading.Lock()
        self.proc: subprocess.Popen[str] | None = None
        self.starts = 0
        self.start_seconds: list[float] = []  # spawn to ready, of starts that got there
        self._spawned = 0.0
        self._listening = threading.Event()
        self._ready = threading.Event()
        self._ready_at = 0.0

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def write_log(self, line: str) -> None:
        with self._log_lock:
            self._log.write(line)
            self._log.flush()

    def start(self) -> None:
        self.starts += 1
        self._listening.clear()
        self._ready.clear()
        self.write_log(f"=== crash_test: start {self.starts} ===\n")
        cmd = [sys.executable, "-m", "contextwm", "serve"]
        cmd += ["--data-dir", str(self.data_dir), "--port", str(self.port)]
        if self.store:
            cmd += ["--store", self.store]
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        self._spawned = time.monotonic()
        # Its own process group: what it leaves behind when killed can be found.
        self.proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            start_new_session=True,
        )
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.write_log(line)
            if proc is not self.proc:
                continue  # an earlier start's leftovers
            if _LISTENING.search(line) and not self._listening.is_set():
                self._listening.set()
                threading.Thread(target=self._await_ready, args=(proc,), daemon=True).start()

    def _await_ready(self, proc: subprocess.Popen[str]) -> None:
        try:
            with Client(self.target, channel_options=CHANNEL_OPTIONS) as client:
                client.wait_ready(self.start_timeout)
        except ContextWMError:
            return  # killed first, or never ready: wait_ready below reports it
        # A later start may have answered (the same port): only this start's readiness counts.
        if proc is self.proc and proc.poll() is None and not self._ready.is_set():
            self._ready_at = time.monotonic()
            self.start_seconds.append(self._ready_at - self._spawned)
            self._ready.set()

    def exited(self) -> int | None:
        assert self.proc is not None
        return self.proc.poll()

    def wait_ready(self, timeout: float) -> None:
        """Raises RuntimeError when the server exits or is not ready in time."""
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):
            code = self.exited()
            if code is not None:
                raise RuntimeError(f"{self.name} exited with code {code} during start-up")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} was not ready within {timeout:.0f} s")

    def phase(self) -> str:
        if self._ready.is_set():
            return "ready"
        return "loading model" if self._listening.is_set() else "before listening"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def seconds_up(self) -> float:
        return time.monotonic() - self._spawned

    def kill(self, kind: str, in_flight: Sequence[float]) -> Kill:
        """SIGKILL to the server alone, as a crash: no shutdown code runs."""
        assert self.proc is not None
        phase = self.phase()
        now = time.monotonic()
        self.proc.send_signal(signal.SIGKILL)
        calls = sum(1 for t in in_flight if t)
        self.proc.wait(30)
        self.write_log(f"=== crash_test: SIGKILL ({kind}, {phase}) ===\n")
        after_ready = now - self._ready_at if phase == "ready" else None
        return Kill(kind, self.name, now, phase, now - self._spawned, after_ready, calls)

    def terminate(self, timeout: float = 60.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def log_tail(self, lines: int = 20) -> str:
        with self._log_lock:
            self._log.flush()
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "".join(text.splitlines(keepends=True)[-lines:])

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        with self._log_lock:
            self._log.close()


def group_members(pgids: Sequence[int]) -> list[int]:
    """Live (not zombie) processes in these process groups, from /proc."""
    wanted = set(pgids)
    found: list[int] = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if fields[0] != "Z" and int(fields[2]) in wanted:
            found.append(int(stat.parent.name))
    return found


def free_port() -> int:
    """A port free now, kept for the whole run (the writers reconnect to it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# ------------------------------------------------------------------ checks


@dataclass(frozen=True)
class Ack:
    key: str
    conv: str
    seq: int
    content: str
    writer: int


def read_journals(paths: Sequence[Path], problems: list[str]) -> dict[str, Ack]:
    """Every acknowledged item by key; a key acknowledged twice, or a writer whose seqs in a
    conversation do not increase (its calls are sequential), is a problem."""
    acks: dict[str, Ack] = {}
    for writer, path in enumerate(paths):
        last: dict[str, int] = {}
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            ack = Ack(entry["key"], entry["conv"], entry["seq"], entry["content"], writer)
            if ack.key in acks:
                problems.append(f"{ack.key} acknowledged twice")
            acks[ack.key] = ack
            if ack.seq <= last.get(ack.conv, 0):
                problems.append(
                    f"{ack.key}: writer {writer} got seq {ack.seq} in {ack.conv} after"
                    f" {last[ack.conv]}"
                )
            last[ack.conv] = ack.seq
    return acks


@dataclass
class Checked:
    problems: list[str] = field(default_factory=list)
    items: int = 0
    acknowledged: int = 0
    archived: int = 0
    searched: int = 0
    embed_wait: float = 0.0
    # Each conversation's items as (seq, state, content), for comparing replicas.
    listing: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)
    replica: str = ""  # which server answered: Server.name


def check_store(
    client: Client,
    settings: dict[str, ConversationSettings],
    acks: dict[str, Ack],
    unknown: set[str],
    *,
    search_sample: int,
    embed_timeout: float,
    rng: random.Random,
) -> Checked:
    """Checks what the server holds against the journals (see the module docstring)."""
    out = Checked()
    problems = out.problems
    by_conv: dict[str, list[Ack]] = defaultdict(list)
    for ack in acks.values():
        by_conv[ack.conv].append(ack)
    stored: dict[str, list[Item]] = {}
    for conv in settings:
        items = list(client.iter_items(conv))
        stored[conv] = items
        out.listing[conv] = [(i.seq, str(i.state), i.content) for i in items]
        out.items += len(items)
        seqs = [i.seq for i in items]
        if seqs != list(range(1, len(items) + 1)):
            missing = sorted(set(range(1, max(seqs, default=0) + 1)) - set(seqs))
            twice = sorted(s for s, n in Counter(seqs).items() if n > 1)
            problems.append(
                f"{conv}: seqs are not 1..{len(items)}: missing {missing[:10]}, twice {twice[:10]}"
            )
        keys = Counter(i.metadata.get("key", "") for i in items)
        for key, count in keys.items():
            if not key:
                problems.append(f"{conv}: {count} items without a key")
            elif count > 1:
                problems.append(f"{conv}: {key} stored {count} times")
        contents = Counter(i.content for i in items)
        problems += [
            f"{conv}: content stored {n} times: {c[:60]!r}" for c, n in contents.items() if n > 1
        ]
        by_key = {i.metadata.get("key", ""): i for i in items}
        for ack in by_conv.get(conv, []):
            item = by_key.get(ack.key)
            if item is None:
                problems.append(f"{conv}: acknowledged {ack.key} (seq {ack.seq}) is lost")
            elif item.seq != ack.seq or item.content != ack.content:
                problems.append(
                    f"{conv}: {ack.key} acknowledged as seq {ack.seq}, stored as seq {item.seq}"
                    + ("" if item.content == ack.content else " with other content")
                )
            else:
                out.acknowledged += 1
        for key, item in by_key.items():
            if key and key not in acks and key not in unknown:
                problems.append(f"{conv}: {key} (seq {item.seq}) stored, never acknowledged")
            elif key in acks and acks[key].conv != conv:
                problems.append(f"{key} acknowledged in {acks[key].conv}, stored in {conv}")
        check_window(client, conv, settings[conv], items, problems)
    out.embed_wait = wait_embedded(client, list(settings), embed_timeout, problems)
    for conv, items in stored.items():
        archived = [i for i in items if i.state == "archived"]
        out.archived += len(archived)
        for item in rng.sample(archived, min(search_sample, len(archived))):
            out.searched += 1
            # Hybrid, as the service ranks by default: the content's own words and meaning
            # find it. (That the index holds exactly the stored vectors, vector by vector,
            # `contextwm check` verifies after the clean stop.)
            hits = client.search(item.content, conversation_id=conv, top_k=10)
            if item.seq not in [h.seq for h in hits.hits]:
                problems.append(f"{conv}: search misses archived seq {item.seq}")
        check_context(client, conv, items, problems)
    return out


def check_window(
    client: Client,
    conv: str,
    settings: ConversationSettings,
    items: list[Item],
    problems: list[str],
) -> None:
    """Each item in one state, window or archived (no compactions or restores here), and the
    window as GetConversation reports it: the same items, within the limits it was created
    with."""
    info = client.get_conversation(conv)
    limits = (info.settings.window_max_items, info.settings.window_max_tokens)
    if limits != (settings.window_max_items, settings.window_max_tokens):
        problems.append(f"{conv}: window limits {limits}, created with other ones")
    states = Counter(str(i.state) for i in items)
    if set(states) - {"window", "archived"}:
        problems.append(f"{conv}: unexpected states {dict(states)}")
    listed = {
        s: [i.seq for i in client.iter_items(conv, states=[s])] for s in ("window", "archived")
    }
    if sorted(listed["window"] + listed["archived"]) != [i.seq for i in items]:
        problems.append(f"{conv}: window and archive listings do not partition the items")
    window = [i for i in items if i.state == "window"]
    tokens = sum(i.token_count for i in window)
    w = info.window
    if (w.item_count, w.token_count) != (len(window), tokens):
        problems.append(
            f"{conv}: GetConversation says {w.item_count} items / {w.token_count} tokens in"
            f" the window, ListItems {len(window)} / {tokens}"
        )
    if (w.item_limit, w.token_limit) != limits:
        problems.append(f"{conv}: the window applies {(w.item_limit, w.token_limit)}, not {limits}")
    if w.item_count > w.item_limit or w.token_count > w.token_limit:
        problems.append(
            f"{conv}: window over its limits: {w.item_count}/{w.item_limit} items,"
            f" {w.token_count}/{w.token_limit} tokens"
        )
    if (info.total_items, info.last_seq, info.archived_items) != (
        len(items),
        len(items),
        states["archived"],
    ):
        problems.append(
            f"{conv}: GetConversation says {info.total_items} items, last seq {info.last_seq},"
            f" {info.archived_items} archived; ListItems {len(items)}, {states['archived']}"
        )


def check_context(client: Client, conv: str, items: list[Item], problems: list[str]) -> None:
    """get_context answers within its budget and keeps the newest window item (the newest
    recent_min_items window items are always kept while they fit a quarter of it)."""
    budget = 2000
    ctx = client.get_context(conv, items[-1].content if items else "status", max_tokens=budget)
    if not ctx.text or ctx.tokens.total > budget:
        problems.append(f"{conv}: get_context gave {ctx.tokens.total} tokens for {budget}")
    window = [i.seq for i in items if i.state == "window"]
    if window and max(window) not in [s.seq for s in ctx.recent]:
        problems.append(f"{conv}: get_context left out the newest window item {max(window)}")


def wait_embedded(
    client: Client, conversations: list[str], timeout: float, problems: list[str]
) -> float:
    """Seconds until no conversation has pending embeddings (a problem after timeout)."""
    began = told = time.monotonic()
    left = list(conversations)
    while left:
        if client.get_conversation(left[-1]).pending_embeddings == 0:
            left.pop()
            continue
        if time.monotonic() - told > 10:  # a long wait says what it waits for
            told = time.monotonic()
            waiting = sum(client.get_conversation(c).pending_embeddings for c in left)
            log(f"waiting for {waiting} pending embeddings")
        if time.monotonic() - began > timeout:
            pending = {c: client.get_conversation(c).pending_embeddings for c in left}
            problems.append(f"pending embeddings after {timeout:.0f} s: {pending}")
            break
        time.sleep(0.2)
    return time.monotonic() - began


# ------------------------------------------------------------------ the run


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--kills", type=int, default=10, help="SIGKILLs of the server (default 10)")
    p.add_argument("--writers", type=int, default=8, help="writer processes (default 8)")
    p.add_argument(
        "--max-uptime",
        type=float,
        default=12.0,
        help="longest time a server serves before a 'serving' kill, seconds (default 12;"
        " half of it before a 'mid-call' or 'at a commit' one, or a database restart)",
    )
    p.add_argument(
        "--final-seconds",
        type=float,
        default=3.0,
        help="writing against the last, unkilled server before the writers stop (default 3)",
    )
    p.add_argument(
        "--pause",
        type=float,
        default=0.05,
        help="mean pause of a writer between its calls, seconds (default 0.05)",
    )
    p.add_argument("--call-timeout", type=float, default=10.0, help="client deadline, seconds")
    p.add_argument("--start-timeout", type=float, default=180.0, help="seconds to get ready")
    p.add_argument("--embed-timeout", type=float, default=900.0, help="seconds to embed all")
    p.add_argument(
        "--search-sample", type=int, default=10, help="archived items searched per conversation"
    )
    p.add_argument(
        "--no-restart-check",
        action="store_true",
        help="skip the clean stop, restart and second check at the end",
    )
    p.add_argument(
        "--postgresql",
        action="store_true",
        help="keep the conversations in PostgreSQL (a durable cluster of the script's own)",
    )
    p.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="servers sharing the PostgreSQL database, each killed in turn (default 1)",
    )
    p.add_argument(
        "--db-restarts",
        type=int,
        default=0,
        help="times PostgreSQL is stopped with `pg_ctl -m immediate` and started again (default 0)",
    )
    p.add_argument(
        "--max-db-down",
        type=float,
        default=3.0,
        help="longest time PostgreSQL stays down at a restart, seconds (default 3)",
    )
    p.add_argument("--work-dir", type=Path, help="data, journals and logs here (default: temp)")
    p.add_argument("--keep", action="store_true", help="keep the work directory on PASS too")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    if args.replicas < 1:
        p.error("--replicas must be at least 1")
    if not args.postgresql and (args.replicas > 1 or args.db_restarts):
        # A SQLite data directory is served by one process at a time.
        p.error("--replicas above 1 and --db-restarts need --postgresql")
    if args.max_db_down < DB_DOWN_MIN:
        p.error(f"--max-db-down must be at least {DB_DOWN_MIN} s")
    return args


# The shortest time PostgreSQL stays down at a restart, seconds.
DB_DOWN_MIN = 0.2


@dataclass
class DbRestart:
    """One crash and restart of PostgreSQL."""

    down: float  # seconds from the stop's start until it was started again and answered
    in_flight: int  # writer calls in flight at the stop
    recovered: float  # seconds from then until every replica answered a read


@dataclass
class Run:
    """What the run saw, for the report."""

    kills: list[Kill] = field(default_factory=list)
    db_restarts: list[DbRestart] = field(default_factory=list)
    writers: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    checks: list[Checked] = field(default_factory=list)
    orphans: set[int] = field(default_factory=set)
    clean_exits: list[int] = field(default_factory=list)


def kill_loop(
    servers: list[Server],
    args: argparse.Namespace,
    rng: random.Random,
    in_flight: Sequence[float],
    run: Run,
    killed: list[int],
    database: PostgresServer | None,
    outage: Any,
) -> list[Server]:
    """SIGKILLs a server (all already serving) and starts it again, args.kills times, and
    crashes and restarts the database args.db_restarts times between the kills; returns the
    server killed last, not started again (none when a database restart came last).

    Raises:
        RuntimeError: a server exited by itself or did not start, or the database did not.
    """
    events = ["kill"] * args.kills
    if args.db_restarts:
        events += ["database"] * args.db_restarts
        # A generator of its own: the kills draw what they draw in a run without restarts.
        random.Random(args.seed + 1).shuffle(events)
    unchecked: list[tuple[int, float]] = []  # killed process groups not yet looked at
    down: list[Server] = []  # killed, to be started again at the next event
    kills = 0
    for event in events:
        for pgid, at in [u for u in unchecked if time.monotonic() - u[1] > ORPHAN_GRACE]:
            run.orphans.update(group_members([pgid]))
            unchecked.remove((pgid, at))
        if event == "database":
            assert database is not None
            for server in down:
                server.start()
            down = []
            run.db_restarts.append(
                restart_database(servers, database, args, rng, in_flight, outage)
            )
            log(
                f"database restart {len(run.db_restarts)}/{args.db_restarts}:"
                f" down {run.db_restarts[-1].down:.1f} s"
            )
            continue
        # The first kill finds the writers under way; the first start is main()'s.
        (kind,) = rng.choices(KILL_KINDS, KILL_WEIGHTS) if kills else ("serving",)
        started = down
        for server in started:
            server.start()
        down = []
        if kind == "start-up" and not started:
            # After a database restart every server serves: none is starting to be killed.
            (kind,) = rng.choices(KILL_KINDS[1:], KILL_WEIGHTS[1:])
        if kind == "start-up":
            server = started[0]
        else:
            server = servers[rng.randrange(len(servers))] if len(servers) > 1 else servers[0]
        if kind == "start-up":
            # Any moment up to a bit past a typical start: before it listens, while the model
            # loads, and as it gets ready.
            typical = sorted(server.start_seconds)[len(server.start_seconds) // 2]
            moment = rng.uniform(0.0, 1.1 * typical)
            while server.seconds_up() < moment and server.exited() is None:
                time.sleep(0.01)
        elif kind == "just after ready":
            server.wait_ready(args.start_timeout)
            time.sleep(rng.uniform(0, 0.5))
        elif kind == "serving":
            server.wait_ready(args.start_timeout)
            time.sleep(rng.uniform(1, args.max_uptime))
        else:
            server.wait_ready(args.start_timeout)
            time.sleep(rng.uniform(1, args.max_uptime / 2))
            if kind == "mid-call":
                wait_mid_call(in_flight, rng.uniform(0, MID_CALL_SECONDS))
            else:
                wait_commit(commit_file(server, database), in_flight)
        for other in servers:
            code = other.exited()
            if code is not None:
                raise RuntimeError(f"{other.name} exited with code {code} before it was killed")
        killed.append(server.pid)
        run.kills.append(server.kill(kind, in_flight))
        unchecked.append((server.pid, time.monotonic()))
        down = [server]
        kills += 1
        of = f" of {server.name}" if len(servers) > 1 else ""
        log(f"kill {kills}/{args.kills}: {kind}{of}, {run.kills[-1].phase}")
    return down


def restart_database(
    servers: list[Server],
    database: PostgresServer,
    args: argparse.Namespace,
    rng: random.Random,
    in_flight: Sequence[float],
    outage: Any,
) -> DbRestart:
    """Once every server serves, and after a random while, crashes PostgreSQL
    (`pg_ctl -m immediate`: no checkpoint, every connection cut) and starts it again after a
    random pause; returns once every server answers a read of the store again, by itself.
    `outage` is set from the stop until then: the writers count the statuses they see.

    Raises:
        RuntimeError: a server exited or did not answer again in time, or PostgreSQL failed
            to stop or start.
    """
    for server in servers:
        server.wait_ready(args.start_timeout)
    time.sleep(rng.uniform(1, args.max_uptime / 2))
    pause = rng.uniform(DB_DOWN_MIN, args.max_db_down)
    outage.set()
    try:
        for server in servers:
            server.write_log("=== crash_test: PostgreSQL stopped (immediate) ===\n")
        calls = sum(1 for t in in_flight if t)
        began = time.monotonic()
        database.stop("immediate")
        time.sleep(pause)
        database.start()
        back = time.monotonic()
        for server in servers:
            server.write_log("=== crash_test: PostgreSQL started again ===\n")
        for server in servers:
            answering(server, args.start_timeout)
        return DbRestart(back - began, calls, time.monotonic() - back)
    finally:
        outage.clear()


def answering(server: Server, timeout: float) -> None:
    """Returns once the server answers a read of the store (a conversation's first item);
    UNAVAILABLE and DEADLINE_EXCEEDED are waited out.

    Raises:
        RuntimeError: it exited, failed with another status, or did not answer in time.
    """
    deadline = time.monotonic() + timeout
    with Client(server.target, timeout=5.0, channel_options=CHANNEL_OPTIONS) as client:
        while True:
            try:
                client.list_items(next(iter(SHARED)), page_size=1)
                return
            except (UnavailableError, DeadlineExceededError) as exc:
                code = server.exited()
                if code is not None:
                    raise RuntimeError(
                        f"{server.name} exited with code {code} after PostgreSQL's restart"
                    ) from exc
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{server.name} did not answer within {timeout:.0f} s of PostgreSQL's"
                        f" restart: {exc}"
                    ) from exc
                time.sleep(RETRY_PAUSE)
            except ContextWMError as exc:
                raise RuntimeError(
                    f"{server.name} answered {exc!r} after PostgreSQL's restart"
                ) from exc


def commit_file(server: Server, database: PostgresServer | None) -> Path:
    """The file a commit writes to: SQLite's WAL in the server's data directory, or the
    WAL segment PostgreSQL writes now."""
    if database is None:
        return server.data_dir / "contextwm.sqlite3-wal"
    with psycopg.connect(database.dsn(), autocommit=True) as conn:
        row = conn.execute("SELECT pg_walfile_name(pg_current_wal_lsn())").fetchone()
    assert row is not None
    return database.data / "pg_wal" / str(row[0])


def wait_mid_call(in_flight: Sequence[float], age: float, timeout: float = 10.0) -> None:
    """Returns once some writer's call has been in flight for `age` seconds (or after
    timeout): a kill then lands inside a call, before or after its commit."""
    deadline = time.monotonic() + timeout
    while (now := time.monotonic()) < deadline:
        if any(t and now - t >= age for t in in_flight):
            return
        time.sleep(0.0002)


def wait_commit(wal: Path, in_flight: Sequence[float], timeout: float = 10.0) -> None:
    """Returns as soon as the store writes its WAL file (SQLite's, or PostgreSQL's segment)
    while a writer's call is in flight (or after timeout): a kill then lands as an append
    commits, or just after, before its acknowledgement is sent, the moment a retry with the
    same keys is for. (Another write, the indexer's vectors or another replica's, may come
    first; the WAL's size and modification time tell only that something was written.)"""

    def stamp() -> tuple[int, int]:
        try:
            st = wal.stat()
        except FileNotFoundError:
            return (0, 0)
        return (st.st_mtime_ns, st.st_size)

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(in_flight):
            time.sleep(0.0002)
            continue
        before = stamp()
        while any(in_flight) and time.monotonic() < deadline:
            if stamp() != before:
                return
            time.sleep(0.0001)


def collect(writers: list[Any], results: Any, timeout: float, run: Run) -> None:
    """The writers' reports, once they finished their calls in hand."""
    deadline = time.monotonic() + timeout
    while len(run.writers) < len(writers):
        try:
            run.writers.append(results.get(timeout=1.0))
            continue
        except queue.Empty:
            pass
        if time.monotonic() > deadline or not any(w.is_alive() for w in writers):
            run.problems.append(f"{len(writers) - len(run.writers)} writers did not report")
            break
    for w in writers:
        w.join(30)
        if w.is_alive():
            w.kill()
            w.join()


def make_servers(
    args: argparse.Namespace, work: Path, database: PostgresServer | None
) -> list[Server]:
    """The server on its SQLite data directory, or the replicas on one new database of
    PostgreSQL, each with a data directory, port and log of its own."""
    if database is None:
        return [Server(work / "data", free_port(), work / "server.log", args.start_timeout)]
    dsn = database.create_database("crash")
    return [
        Server(
            work / f"data-{n}",
            free_port(),
            work / f"replica-{n}.log",
            args.start_timeout,
            store=dsn,
            name=f"replica {n}",
        )
        for n in range(args.replicas)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    began = time.monotonic()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="cwm-crash-"))
    if (work / "data").exists() or any(work.glob("data-*")):
        raise SystemExit(f"{work} holds an earlier run; name a new --work-dir")
    work.mkdir(parents=True, exist_ok=True)
    database: PostgresServer | None = None
    try:
        if args.postgresql:
            log("starting PostgreSQL (durable: fsync on)")
            database = PostgresServer(durable=True)
        servers = make_servers(args, work, database)
        run = crash(args, work, servers, database)
    finally:
        if database is not None:
            # Its files go with it; its log stays with the run's.
            with contextlib.suppress(OSError):
                shutil.copyfile(database.root / "log", work / "postgresql.log")
            database.close()
    report(servers, run, time.monotonic() - began, work, database is not None)
    ok = not run.problems
    if ok and not args.keep and args.work_dir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


def crash(
    args: argparse.Namespace, work: Path, servers: list[Server], database: PostgresServer | None
) -> Run:
    """Steps 1 to 5 of the module docstring; what the run saw."""
    rng = random.Random(args.seed)
    settings = conversation_settings(args.writers)
    journals = [work / f"journal-{w}.jsonl" for w in range(args.writers)]
    run = Run()
    killed: list[int] = []  # process groups of the killed servers
    ctx = multiprocessing.get_context("spawn")
    stop, abort, outage, results = ctx.Event(), ctx.Event(), ctx.Event(), ctx.Queue()
    # When each writer's call in hand was sent (0: none), for the "mid-call" kills.
    in_flight = ctx.Array("d", args.writers, lock=False)
    options: tuple[tuple[str, Any], ...] = CHANNEL_OPTIONS
    if len(servers) == 1:
        target = servers[0].target
    else:
        target = "ipv4:" + ",".join(s.target for s in servers)
        options = (*CHANNEL_OPTIONS, *BALANCED)
    writers = [
        ctx.Process(
            target=writer_main,
            args=(
                w,
                target,
                options,
                str(journals[w]),
                args.seed,
                args.pause,
                args.call_timeout,
                stop,
                abort,
                in_flight,
                outage,
                results,
            ),
            name=f"writer-{w}",
            daemon=True,  # ended with this process, also when it is interrupted
        )
        for w in range(args.writers)
    ]
    ports = ", ".join(str(s.port) for s in servers)
    log(f"work directory {work}, port{'s' if len(servers) > 1 else ''} {ports}")
    try:
        serving = False
        try:
            for server in servers:
                server.start()
            for server in servers:
                server.wait_ready(args.start_timeout)
            with Client(servers[0].target, timeout=60.0) as admin:
                for conv, conv_settings in settings.items():
                    admin.create_conversation(conv, settings=conv_settings)
            for w in writers:
                w.start()
            down = kill_loop(servers, args, rng, in_flight, run, killed, database, outage)
            for server in down:
                server.start()
            for server in servers:
                server.wait_ready(args.start_timeout)
            serving = True
            log(f"last start; the writers go on for {args.final_seconds:.0f} s")
            time.sleep(args.final_seconds)
        except (RuntimeError, ContextWMError) as exc:
            run.problems.append(f"server: {exc}; {logs_end(servers)}")
            abort.set()  # the writers give up retrying
        stop.set()
        collect([w for w in writers if w.pid is not None], results, 300.0, run)
        log(f"writers stopped; {len(run.kills)} kills done")
        unknown = {k for s in run.writers for k in s["unknown"]}
        run.problems += [e for s in run.writers for e in s["errors"]]
        run.problems += outage_problems(run)
        if serving:
            try:
                run.problems += check_run(
                    servers, args, settings, journals, unknown, rng, run, database
                )
            except (RuntimeError, ContextWMError) as exc:
                run.problems.append(f"checks: {exc}; {logs_end(servers)}")
    finally:
        for server in servers:
            server.close()
        leftovers = group_members(killed)
        run.orphans.update(leftovers)
        for pid in leftovers:  # what the killed servers left behind: ours to end
            os.kill(pid, signal.SIGKILL)
    return run


def logs_end(servers: list[Server]) -> str:
    """The last lines of the servers' logs, for a problem's detail."""
    if len(servers) == 1:
        return f"its log ends:\n{servers[0].log_tail()}"
    return "their logs end:\n" + "".join(f"-- {s.name}:\n{s.log_tail(12)}" for s in servers)


def outage_problems(run: Run) -> list[str]:
    """A status other than UNAVAILABLE or DEADLINE_EXCEEDED while PostgreSQL was down or
    reconnecting is a problem (the calls themselves are among the writers' errors)."""
    seen: Counter[str] = Counter()
    for s in run.writers:
        seen.update(s["outage_statuses"])
    wrong = {code: n for code, n in seen.items() if code not in RETRIED}
    if not wrong:
        return []
    return [
        f"while PostgreSQL was down or reconnecting, calls failed with {wrong}: only"
        f" {' and '.join(RETRIED)} are right"
    ]


def check_run(
    servers: list[Server],
    args: argparse.Namespace,
    settings: dict[str, ConversationSettings],
    journals: list[Path],
    unknown: set[str],
    rng: random.Random,
    run: Run,
    database: PostgresServer | None,
) -> list[str]:
    """The checks after the last start, then after a clean stop and restart; through each
    replica in turn, which must all list the same items."""
    problems: list[str] = []
    acks = read_journals(journals, problems)
    for round_ in range(1 if args.no_restart_check else 2):
        after = " (after the clean restart)" if round_ else ""
        if round_ == 1:
            run.clean_exits = [server.terminate() for server in servers]
            for server, code in zip(servers, run.clean_exits, strict=True):
                if code != 0:
                    problems.append(f"SIGTERM: {server.name} exited with {code}, not 0")
            for server in servers:
                server.start()
            for server in servers:
                server.wait_ready(args.start_timeout)
        log("checking" + (" after a clean restart" if round_ else ""))
        first: Checked | None = None
        for server in servers:
            with Client(server.target, timeout=120.0) as client:
                checked = check_store(
                    client,
                    settings,
                    acks,
                    unknown,
                    search_sample=args.search_sample,
                    embed_timeout=args.embed_timeout,
                    rng=rng,
                )
            checked.replica = server.name
            run.checks.append(checked)
            through = f" (through {server.name})" if len(servers) > 1 else ""
            problems += [p + through + after for p in checked.problems]
            if first is None:
                first = checked
                continue
            problems += [
                f"{conv}: {server.name} lists other items than {first.replica}{after}"
                for conv in settings
                if checked.listing.get(conv) != first.listing.get(conv)
            ]
    for server in servers:
        server.terminate()
    if database is None:
        problems += offline_check(servers[0].data_dir)
    return problems


def offline_check(data_dir: Path) -> list[str]:
    """`contextwm check` on the stopped server's directory: the store's integrity, and every
    saved index against the stored vectors."""
    log("contextwm check")
    done = subprocess.run(
        [sys.executable, "-m", "contextwm", "check", str(data_dir)],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        check=False,
    )
    if done.returncode == 0:
        return []
    return [
        f"contextwm check exited {done.returncode}: {done.stdout.strip()} {done.stderr.strip()}"
    ]


def counts(counter: Counter[str]) -> str:
    """The counts as "A 3, B 1", or "none"."""
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items())) or "none"


def report(servers: list[Server], run: Run, seconds: float, work: Path, postgresql: bool) -> None:
    def total(name: str) -> int:
        return sum(int(s[name]) for s in run.writers)

    def summed(name: str) -> Counter[str]:
        out: Counter[str] = Counter()
        for s in run.writers:
            out.update(s[name])
        return out

    kills = run.kills
    early = sorted(k.after_spawn for k in kills if k.phase != "ready")
    phases = Counter(k.phase for k in kills)
    starting = phases["before listening"] + phases["loading model"]
    just_after = sum(1 for k in kills if k.after_ready is not None and k.after_ready < 1)
    starts = sorted(t for s in servers for t in s.start_seconds)
    retries = summed("retries")
    failures = summed("failures")
    text = "".join(s.log_path.read_text(encoding="utf-8", errors="replace") for s in servers)
    kinds = Counter(k.kind for k in kills)
    replicated = len(servers) > 1
    print("\n== crash test" + (f" ({len(servers)} replicas on PostgreSQL)" if postgresql else ""))
    print(
        f"kills          {len(kills)}: {starting} during start-up"
        f" ({phases['before listening']} before it listened,"
        f" {phases['loading model']} while the model loaded), {phases['ready']} once ready"
        f" ({just_after} of them within 1 s of readiness)"
        + (f"; start-up kills {early[0]:.1f} to {early[-1]:.1f} s after the spawn" if early else "")
    )
    print(
        f"               timed as {', '.join(f'{kinds[k]} {k}' for k in KILL_KINDS)};"
        f" {sum(1 for k in kills if k.in_flight)} with writer calls in flight"
        f" ({sum(k.in_flight for k in kills)} calls)"
    )
    if replicated:
        by_replica = Counter(k.replica for k in kills)
        each = ", ".join(f"{by_replica[s.name]} of {s.name}" for s in servers)
        print(f"               by replica: {each}")
    if postgresql:
        restarts = run.db_restarts
        downs = sorted(r.down for r in restarts)
        recovered = sorted(r.recovered for r in restarts)
        print(
            f"db restarts    {len(restarts)}: PostgreSQL stopped with pg_ctl -m immediate"
            + (
                f", down {downs[0]:.1f} to {downs[-1]:.1f} s; every replica answered again"
                f" {recovered[0]:.1f} to {recovered[-1]:.1f} s after its start, none restarted;"
                f" {sum(1 for r in restarts if r.in_flight)} with writer calls in flight"
                if restarts
                else ""
            )
        )
        print(f"               statuses seen meanwhile: {counts(summed('outage_statuses'))}")
    if starts:
        each = f" ({', '.join(f'{s.name} {s.starts}' for s in servers)})" if replicated else ""
        print(
            f"server starts  {sum(s.starts for s in servers)}{each}; spawn to ready"
            f" {starts[0]:.1f} / {starts[len(starts) // 2]:.1f} / {starts[-1]:.1f} s"
            " (min / median / max)"
        )
    print(
        f"acknowledged   {total('items')} items from {len(run.writers)} writers in"
        f" {total('appends')} appends and {total('batches')} batches;"
        f" {total('duplicates')} acknowledged as duplicates"
        " (a try cut off by a kill or deadline had stored them)"
    )
    print(
        f"retries        {total('retried_calls')} calls retried, {sum(retries.values())} tries"
        f" ({', '.join(f'{k} {v}' for k, v in sorted(retries.items()))});"
        f" {total('replays')} acknowledged calls replayed; {total('reads')} reads"
        + (f"; failed, not retried: {counts(failures)}" if failures else "")
    )
    for n, c in enumerate(run.checks):
        again = n >= len(servers)
        print(
            f"{'checked again' if again else 'checked':<15}{c.acknowledged} acknowledged items of"
            f" {c.items} stored, {c.archived} archived, {c.searched} of them searched"
            f"; pending embeddings 0 after {c.embed_wait:.1f} s"
            + (f"; through {c.replica}" if replicated else "")
        )
    if run.clean_exits:
        codes = ", ".join(str(c) for c in run.clean_exits)
        print(f"clean stop     exit code{'s' if replicated else ''} {codes}")
    if postgresql:
        print(
            "offline check  skipped: `contextwm check` reads a SQLite data directory; the"
            " store was checked online through each replica"
        )
    print(
        f"server log{'s' if replicated else ' '}    {text.count('Traceback')} tracebacks,"
        f" {text.count(' ERROR ')} errors; {len(run.orphans)} processes left behind by killed"
        " servers"
    )
    print(f"duration       {seconds:.0f} s")
    if run.problems:
        print(f"\nFAIL: {len(run.problems)} problems (work directory kept: {work})")
        for p in run.problems[:50]:
            print(f"  - {p}")
    else:
        print("\nPASS")


if __name__ == "__main__":
    raise SystemExit(main())
