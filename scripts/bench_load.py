"""Load benchmark: many concurrent clients on one server, mixed calls, for a fixed time.

Starts `contextwm serve` (the bundled MiniLM model, its indexer process, a fresh data
directory), gives every client a conversation with some history (archived and embedded before
the clock starts), then runs --clients clients for --seconds. Each client has its own
connection and loops over a weighted mix of calls on its own conversation:

    Append 40 %   GetContext (max_tokens 2048, a question) 25 %
    Search (top 10) 20 %   GetUsage 15 %

Clients run as threads spread over --processes processes, so the client side is not one
GIL. Reports per call: calls, calls/s, p50, p99, max, errors (with their statuses), and the
servers' resident memory. Goal: no errors, p99 under 10 x p50 for every call.

With --postgresql the servers keep their conversations in a PostgreSQL this script starts
(durable: fsync on), and --replicas 1,2 runs the same load on one replica, then on two
behind round-robin balancing (a new database each), and compares their throughput. On a
machine of 2 cores the replicas share the cores with each other, the database and the
clients: a second replica adds no CPU, only parallelism where one waits.

Run:  scripts/bench load                     (32 clients, 60 s; about 2 minutes)
      scripts/bench load --clients 8 --seconds 10   (smoke run)
      scripts/bench load --postgresql --replicas 1,2
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from bench_common import (  # also sets HF_HUB_OFFLINE before any model import
    ServerProcess,
    TextGenerator,
    log,
    p50_p99,
    print_table,
    verdict,
    wait_embedded,
)
from contextwm_client import Client, ContextWMError, ConversationSettings, NewItem, Role

MIX = (("Append", 40), ("GetContext", 25), ("Search", 20), ("GetUsage", 15))
# Latencies (ms) and error statuses of one call kind.
Results = dict[str, tuple[list[float], list[str]]]


def connect(target: str, timeout: float) -> Client:
    """A client of the target: one server, or several ("ipv4:h:p,h:p") balanced round robin
    call by call."""
    options = [("grpc.lb_policy_name", "round_robin")] if "," in target else []
    return Client(target, timeout=timeout, channel_options=options)


def _client_loop(target: str, client_no: int, stop_at: float, out: Results) -> None:
    """One client: its own connection and conversation, calls until stop_at."""
    rng = random.Random(client_no)
    texts = TextGenerator(1000 + client_no)
    conv = f"load-{client_no}"
    names = [name for name, _ in MIX]
    weights = [weight for _, weight in MIX]
    with connect(target, 60) as client:
        while time.monotonic() < stop_at:
            name = rng.choices(names, weights)[0]
            start = time.perf_counter()
            try:
                if name == "Append":
                    role: Role = rng.choice(("user", "assistant"))
                    client.append(conv, texts.text(role)[0], role=role)
                elif name == "GetContext":
                    client.get_context(conv, texts.query(), max_tokens=2048)
                elif name == "Search":
                    client.search(texts.query(), conversation_id=conv, top_k=10)
                else:
                    client.get_usage(conv)
            except ContextWMError as exc:
                out[name][1].append(str(exc.code))
                continue
            out[name][0].append((time.perf_counter() - start) * 1e3)


def _process(
    target: str, clients: list[int], start_at: float, seconds: float, queue: mp.Queue[Results]
) -> None:
    """A spawned process: waits for the common start (wall clock), runs its share of the
    clients as threads, and sends their results back."""
    out: Results = {name: ([], []) for name, _ in MIX}
    time.sleep(max(0.0, start_at - time.time()))
    stop_at = time.monotonic() + seconds
    threads = [
        threading.Thread(target=_client_loop, args=(target, n, stop_at, out)) for n in clients
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    queue.put(dict(out))


def _seed(target: str, clients: int, history: int) -> None:
    """Every client's conversation gets `history` turns, most of them archived and embedded."""
    texts = TextGenerator(7)
    settings = ConversationSettings(window_max_items=50)
    conversations = [f"load-{n}" for n in range(clients)]
    with connect(target, 120) as client:
        for conv in conversations:
            client.create_conversation(conv, settings=settings)
            items = [
                NewItem(texts.text(role)[0], role=role)
                for k in range(history)
                for role in (("user", "assistant")[k % 2],)
            ]
            for start in range(0, len(items), 500):
                client.append_batch(conv, items[start : start + 500])
        wait_embedded(client, conversations)


def run_load(
    args: argparse.Namespace, tmp: Path, store: str = "", replicas: int = 1
) -> tuple[Results, float, float]:
    """Starts the servers, seeds, runs the clients; their results and the servers' summed
    resident memory (MiB) before and after."""
    tmp.mkdir(parents=True)
    servers = [
        ServerProcess(tmp / f"data{n}", extra_args=["--store", store] if store else [])
        for n in range(replicas)
    ]
    try:
        for server in servers:
            server.start()
            log(f"server up in {server.start_seconds:.1f} s")
        target = servers[0].target
        if replicas > 1:
            target = "ipv4:" + ",".join(s.target for s in servers)
        log(f"seeding {args.clients} conversations")
        _seed(target, args.clients, args.history)
        rss_before = sum(s.rss_mb()[0] for s in servers)
        log(f"running {args.clients} clients for {args.seconds:.0f} s on {replicas} server(s)")
        ctx = mp.get_context("spawn")
        queue: mp.Queue[Results] = ctx.Queue()
        start_at = time.time() + 10.0  # time for the processes to spawn and import
        shares = [list(range(p, args.clients, args.processes)) for p in range(args.processes)]
        procs = [
            ctx.Process(target=_process, args=(target, share, start_at, args.seconds, queue))
            for share in shares
            if share
        ]
        for p in procs:
            p.start()
        merged: Results = {name: ([], []) for name, _ in MIX}
        for _ in procs:
            part = queue.get()
            for name, (lat, errors) in part.items():
                merged[name][0].extend(lat)
                merged[name][1].extend(errors)
        for p in procs:
            p.join()
        rss_after = sum(s.rss_mb()[0] for s in servers)
    finally:
        for server in servers:
            server.stop()
    return merged, rss_before, rss_after


def report(args: argparse.Namespace, title: str, merged: Results) -> tuple[bool, int]:
    """Prints one run's table; whether it met the goal, and its calls."""
    rows = []
    all_ok = True
    for name, _ in MIX:
        lat, errors = merged[name]
        p50, p99 = p50_p99(lat)
        ok = not errors and p99 < 10 * p50
        all_ok = all_ok and ok
        error_text = ", ".join(f"{code} x{n}" for code, n in Counter(errors).items()) or "0"
        rows.append(
            [
                name,
                len(lat),
                f"{len(lat) / args.seconds:.1f}",
                f"{p50:.1f}",
                f"{p99:.1f}",
                f"{max(lat, default=0):.1f}",
                f"{p99 / p50:.1f}" if p50 else "-",
                error_text,
                verdict(ok),
            ]
        )
    total = sum(len(merged[name][0]) for name, _ in MIX)
    print_table(
        f"{title}: {args.clients} clients for {args.seconds:.0f} s, {total / args.seconds:.0f}"
        " calls/s in all (latencies in ms; goal: no errors and p99 < 10 x p50)",
        ["call", "calls", "calls/s", "p50", "p99", "max", "p99/p50", "errors", "goal"],
        rows,
    )
    return all_ok, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--history", type=int, default=300, help="turns per conversation")
    parser.add_argument(
        "--postgresql", action="store_true", help="servers on a PostgreSQL this script starts"
    )
    parser.add_argument(
        "--replicas",
        default="1",
        help="with --postgresql: replica counts to run in turn, e.g. 1,2 (default 1)",
    )
    args = parser.parse_args()
    counts = [int(n) for n in args.replicas.split(",")]
    if not args.postgresql and counts != [1]:
        parser.error("--replicas needs --postgresql: servers on SQLite cannot share a store")

    tmp = Path(tempfile.mkdtemp(prefix="contextwm-load-"))
    database = None
    all_ok = True
    totals: dict[int, int] = {}
    try:
        if args.postgresql:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
            from postgres_server import PostgresServer

            database = PostgresServer(durable=True)
        for replicas in counts:
            store = database.create_database(f"load{replicas}") if database else ""
            merged, rss_before, rss_after = run_load(args, tmp / f"r{replicas}", store, replicas)
            title = f"{replicas} replica(s) on PostgreSQL" if database else "one server on SQLite"
            ok, totals[replicas] = report(args, title, merged)
            all_ok = all_ok and ok
            print(
                f"\nservers' resident memory: {rss_before:.0f} MiB before the load,"
                f" {rss_after:.0f} MiB after"
            )
    finally:
        if database is not None:
            database.close()
        shutil.rmtree(tmp, ignore_errors=True)
    if len(totals) > 1:
        base = totals[counts[0]]
        print(
            "\nthroughput: "
            + ", ".join(f"{n} replica(s) {t / args.seconds:.0f} calls/s" for n, t in totals.items())
            + f" ({totals[counts[-1]] / base:.2f}x of {counts[0]})"
        )
    print(f"overall: {verdict(all_ok)}")


if __name__ == "__main__":
    main()
