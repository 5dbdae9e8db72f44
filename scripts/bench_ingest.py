"""Ingest benchmark: acknowledged-append latency and sustained ingest against raw embedding.

Measures, in one run:

1. raw batched embedding throughput of the service's model (the server's default engine,
   all-MiniLM-L6-v2) in this process, on a sample of the same texts, in batches of 32 (the
   indexer's batch size) and 64, before the server starts (so nothing competes with it),
   and once more after the ingest with the server idle, to show drift on a shared machine;
2. single appends: `Client.append` one item at a time from several clients (each in its own
   process, as independent producers are; --clients-in threads for one process) over
   several conversations (default window 100 items / 8000 tokens, so evictions happen),
   against a `contextwm serve` subprocess (port 0, fresh temp data dir) over loopback;
   ack latency p50/p99 of every call, and sustained ingest = items / (time from the first
   append until `get_conversation().pending_embeddings` is 0 for every conversation);
3. the batched path: `Client.append_batch` with batches of 100, ack latency per batch and
   its sustained rate, after the single-append backlog has drained;
4. the drain of a burst's backlog: the batched phase is acknowledged long before it is
   embedded, and the items still pending at its last ack, over the time from that ack until
   nothing is pending, give the indexer's drain rate, compared with the raw batched rate of
   (1) (the faster batch size), measured in the same run.

Texts: seeded random templates over a dozen topics, about 40 cl100k tokens each.
Targets: ack p50 <= 5 ms; sustained ingest >= 80 % of raw embedding throughput; a burst's
backlog drains at >= 90 % of the raw batched rate.

Run:  .venv/bin/python scripts/bench_ingest.py            (full: 20,000 items, ~10-20 min)
      .venv/bin/python scripts/bench_ingest.py --quick    (smoke run, ~1 min)
      scripts/bench ingest --items 0 --batched-items 3000  (only the burst and its drain)
      .venv/bin/python scripts/bench_ingest.py --bulk     (bulk import instead: bench_bulk.py,
                                                           whose flags then follow)
"""

from __future__ import annotations

import argparse
import multiprocessing
import queue
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_common import (  # also sets HF_HUB_OFFLINE before any model import
    ServerProcess,
    TextGenerator,
    loadavg,
    log,
    p50_p99,
    print_table,
    verdict,
    wait_embedded,
)
from contextwm.ports.embedder import Embedder
from contextwm_client import Client, NewItem, Role

ACK_GOAL_MS = 5.0
SUSTAINED_GOAL = 0.8
DRAIN_GOAL = 0.9


@dataclass
class Phase:
    """One ingest phase: per-call ack latencies and the phase's wall-clock marks."""

    name: str
    items: int
    calls: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    evicted: int = 0
    acked_seconds: float = 0.0
    done_seconds: float = 0.0
    backlog_at_ack: int = 0
    load: tuple[str, str] = ("", "")

    @property
    def drain_rate(self) -> float:
        """Items/s at which the backlog left at the last ack was embedded."""
        return self.backlog_at_ack / max(self.done_seconds - self.acked_seconds, 1e-9)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--items", type=int, default=20_000, help="items appended one at a time (0 skips)"
    )
    p.add_argument("--conversations", type=int, default=16, help="conversations per phase")
    p.add_argument("--threads", type=int, default=4, help="concurrent clients")
    p.add_argument(
        "--clients-in",
        choices=["processes", "threads"],
        default="processes",
        help="each client in its own process (independent producers, the default) or all"
        " clients as threads of this process (they then share one interpreter lock)",
    )
    p.add_argument(
        "--embed-sample",
        type=int,
        default=2000,
        help="texts embedded for the raw throughput figure",
    )
    p.add_argument(
        "--batched-items",
        type=int,
        default=5000,
        help="items appended through append_batch (0 skips the batched phase)",
    )
    p.add_argument("--batch-size", type=int, default=100, help="items per append_batch call")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 300 items, 4 conversations, sample 96, 200 batched items",
    )
    args = p.parse_args()
    if args.quick:
        args.items = 300
        args.conversations = 4
        args.embed_sample = 96
        args.batched_items = 200
    if args.conversations < args.threads:
        p.error("--conversations must be at least --threads")
    return args


def plan(
    gen: TextGenerator, total: int, threads: int, is_user: Callable[[int], bool]
) -> list[list[tuple[str, Role]]]:
    """(text, role) lists, one per client thread; is_user(k) gives the role of a thread's
    k-th item, so that each conversation alternates user and assistant turns."""
    out: list[list[tuple[str, Role]]] = [[] for _ in range(threads)]
    for i in range(total):
        t, k = i % threads, i // threads
        role: Role = "user" if is_user(k) else "assistant"
        out[t].append((gen.text(role)[0], role))
    return out


def raw_embedding(embedder: Embedder, texts: list[str]) -> dict[int, tuple[float, float]]:
    """items/s and seconds of embed() on chunks of 32 and 64 texts, in this process."""
    out: dict[int, tuple[float, float]] = {}
    for batch in (32, 64):
        # Untimed warm-up over up to 512 texts: the first call with each new padded shape
        # runs about half as fast (measured), and the server's indexer is long past that.
        for start in range(0, min(len(texts), 512), batch):
            embedder.embed(texts[start : start + batch])
        t0 = time.perf_counter()
        for start in range(0, len(texts), batch):
            embedder.embed(texts[start : start + batch])
        seconds = time.perf_counter() - t0
        out[batch] = (len(texts) / seconds, seconds)
        log(f"raw embedding, batch {batch}: {out[batch][0]:.1f} items/s")
    return out


def client_worker(
    target: str,
    conversation_ids: list[str],
    items: list[tuple[str, Role]],
    batch_size: int | None,
    barrier: Any,
    results: Any,
) -> None:
    """One client: appends its items (single, or in batches) round-robin over its
    conversations after the barrier, timing each call; puts (latencies, evicted, calls) or
    the error it met on `results`."""
    latencies: list[float] = []
    evicted = calls = 0
    try:
        with Client(target, timeout=120.0) as client:
            client.get_conversation(conversation_ids[0])  # opens the channel before timing
            barrier.wait()
            if batch_size is None:
                for k, (text, role) in enumerate(items):
                    cid = conversation_ids[k % len(conversation_ids)]
                    t0 = time.perf_counter()
                    result = client.append(cid, text, role=role, metadata={"k": str(k)})
                    latencies.append((time.perf_counter() - t0) * 1000)
                    evicted += len(result.evicted_seqs)
                    calls += 1
            else:
                for b, start in enumerate(range(0, len(items), batch_size)):
                    cid = conversation_ids[b % len(conversation_ids)]
                    batch = [
                        NewItem(content=text, role=role, metadata={"k": str(start + j)})
                        for j, (text, role) in enumerate(items[start : start + batch_size])
                    ]
                    t0 = time.perf_counter()
                    result_b = client.append_batch(cid, batch)
                    latencies.append((time.perf_counter() - t0) * 1000)
                    evicted += len(result_b.evicted_seqs)
                    calls += 1
    except BaseException as exc:  # reported by the main process
        barrier.abort()
        results.put(repr(exc))
        return
    results.put((latencies, evicted, calls))


def run_phase(
    phase: Phase,
    target: str,
    conversation_ids: list[str],
    texts: list[list[tuple[str, Role]]],
    clients: int,
    batch_size: int | None,
    *,
    processes: bool,
) -> None:
    """Appends texts from `clients` clients (client t owns every clients-th conversation),
    each in its own process (like independent producers) or thread, then waits until every
    item is embedded. batch_size None means single appends."""
    with Client(target, timeout=120.0) as admin:
        for cid in conversation_ids:
            admin.create_conversation(cid)
    ctx = multiprocessing.get_context("spawn")
    barrier: Any = ctx.Barrier(clients + 1) if processes else threading.Barrier(clients + 1)
    results: Any = ctx.Queue() if processes else queue.Queue()
    runner: Any = ctx.Process if processes else threading.Thread
    workers = [
        runner(
            target=client_worker,
            args=(target, conversation_ids[t::clients], texts[t], batch_size, barrier, results),
        )
        for t in range(clients)
    ]
    for w in workers:
        w.start()
    load0 = loadavg()
    barrier.wait()
    t_start = time.perf_counter()
    outcomes = [results.get() for _ in workers]
    for w in workers:
        w.join()
    errors = [o for o in outcomes if isinstance(o, str)]
    if errors:
        raise RuntimeError(f"a client failed: {errors[0]}")
    for latencies, evicted, calls in outcomes:
        phase.latencies_ms.extend(latencies)
        phase.evicted += evicted
        phase.calls += calls
    phase.acked_seconds = time.perf_counter() - t_start
    with Client(target, timeout=120.0) as poller:
        phase.backlog_at_ack = sum(
            poller.get_conversation(c).pending_embeddings for c in conversation_ids
        )
        wait_embedded(poller, conversation_ids)
    phase.done_seconds = time.perf_counter() - t_start
    phase.load = (load0, loadavg())


def main() -> int:
    if "--bulk" in sys.argv[1:]:
        import bench_bulk

        return bench_bulk.main([a for a in sys.argv[1:] if a != "--bulk"])
    args = parse_args()
    began = time.perf_counter()
    gen = TextGenerator(args.seed)
    per_conv = args.conversations // args.threads
    single_texts = plan(gen, args.items, args.threads, lambda k: (k // per_conv) % 2 == 0)
    batched_texts = plan(
        gen, args.batched_items, args.threads, lambda k: (k % args.batch_size) % 2 == 0
    )

    from contextwm.adapters.tokens_bpe import token_counter

    counter = token_counter("cl100k_base")
    flat = [text for thread in single_texts for text, _ in thread]
    flat = flat or [text for thread in batched_texts for text, _ in thread]
    sample_tokens = [counter.count(t) for t in flat[:2000]]
    mean_tokens = sum(sample_tokens) / len(sample_tokens)

    sample = flat[: args.embed_sample]
    from contextwm.adapters.embedders import make_embedder

    embedder = make_embedder("minilm")
    raw_load0 = loadavg()
    raw = raw_embedding(embedder, sample)
    raw_load = (raw_load0, loadavg())

    tmp = Path(tempfile.mkdtemp(prefix="cwm-bench-ingest-"))
    data_dir = tmp / "data"
    data_dir.mkdir()
    server = ServerProcess(data_dir).start()
    log(f"server pid {server.pid} port {server.port} up in {server.start_seconds:.1f} s")
    single = Phase("append x1", args.items)
    batched = Phase(f"append_batch x{args.batch_size}", args.batched_items)
    try:
        # Loads the server's model and tokenizer caches outside the timed phases.
        with Client(server.target, timeout=120.0) as client:
            client.append("warmup", "warm up the server", role="user")
            wait_embedded(client, ["warmup"])
        if args.items:
            log(
                f"single appends: {args.items} items, {args.threads} clients in"
                f" {args.clients_in}, {args.conversations} conversations"
            )
            run_phase(
                single,
                server.target,
                [f"ingest-{c:03d}" for c in range(args.conversations)],
                single_texts,
                args.threads,
                None,
                processes=args.clients_in == "processes",
            )
            log(
                f"single appends done: acked in {single.acked_seconds:.1f} s,"
                f" embedded in {single.done_seconds:.1f} s"
            )
        if args.batched_items:
            run_phase(
                batched,
                server.target,
                [f"batch-{c:03d}" for c in range(args.conversations)],
                batched_texts,
                args.threads,
                args.batch_size,
                processes=args.clients_in == "processes",
            )
            log(
                f"batched appends done: acked in {batched.acked_seconds:.1f} s,"
                f" embedded in {batched.done_seconds:.1f} s"
            )
        rss = server.rss_mb()
        # Again with the server idle, to show how much the shared machine drifted.
        after_load0 = loadavg()
        raw_after = raw_embedding(embedder, sample)
        after_load = (after_load0, loadavg())
    finally:
        server.stop()
    shutil.rmtree(tmp, ignore_errors=True)

    report(args, mean_tokens, (raw, raw_load), (raw_after, after_load), single, batched, rss)
    log(f"total {time.perf_counter() - began:.0f} s")
    return 0


def report(
    args: argparse.Namespace,
    mean_tokens: float,
    before: tuple[dict[int, tuple[float, float]], tuple[str, str]],
    after: tuple[dict[int, tuple[float, float]], tuple[str, str]],
    single: Phase,
    batched: Phase,
    rss: tuple[float, float],
) -> None:
    print("\ncontextwm ingest benchmark" + (" (--quick)" if args.quick else ""))
    print(
        f"texts: seeded templates, mean {mean_tokens:.1f} cl100k tokens; server: `contextwm"
        f" serve` subprocess, default settings (window 100 items / 8000 tokens, indexer"
        f" batch 32); client: contextwm_client.Client over loopback, {args.threads} clients"
        f" in {args.clients_in},"
        f" {args.conversations} conversations per phase."
    )
    raw = before[0]
    print_table(
        "Raw batched embedding throughput (this process, same texts; 'before' = server not"
        " started yet, the reference; 'after' = server idle after the ingest, noise check)",
        ["when", "batch", "texts", "seconds", "items/s", "loadavg before -> after"],
        [
            [when, b, args.embed_sample, f"{s:.1f}", f"{r:.1f}", f"{load[0]} -> {load[1]}"]
            for when, (figures, load) in (("before", before), ("after", after))
            for b, (r, s) in figures.items()
        ],
    )
    rows = []
    for ph in (single, batched):
        if not ph.latencies_ms:
            continue
        p50, p99 = p50_p99(ph.latencies_ms)
        rows.append(
            [
                ph.name,
                f"{ph.items:,}",
                f"{ph.calls:,}",
                f"{p50:.2f}",
                f"{p99:.2f}",
                f"{max(ph.latencies_ms):.1f}",
                f"{ph.items / ph.acked_seconds:.0f}",
                f"{ph.backlog_at_ack:,}",
                f"{ph.done_seconds:.1f}",
                f"{ph.items / ph.done_seconds:.1f}",
                f"{ph.drain_rate:.1f}",
                f"{ph.evicted:,}",
                f"{ph.load[0]} -> {ph.load[1]}",
            ]
        )
    print_table(
        "Ingest through the service (ack = one call's latency; sustained = items / time from"
        " first append until nothing is pending; drain = items pending at the last ack / time"
        " from it until nothing is pending)",
        [
            "path",
            "items",
            "calls",
            "ack p50 ms",
            "ack p99 ms",
            "max ms",
            "acked items/s",
            "pending at last ack",
            "all embedded s",
            "sustained items/s",
            "drain items/s",
            "evicted",
            "loadavg before -> after",
        ],
        rows,
    )
    raw32, raw64 = raw[32][0], raw[64][0]
    goals = []
    if single.latencies_ms:
        p50, _ = p50_p99(single.latencies_ms)
        sustained = single.items / single.done_seconds
        goals += [
            ["ack p50 (single appends) <= 5 ms", f"{p50:.2f} ms", verdict(p50 <= ACK_GOAL_MS)],
            [
                "sustained / raw (batch 32)",
                f"{sustained / raw32:.2f}",
                verdict(sustained >= SUSTAINED_GOAL * raw32),
            ],
            [
                "sustained / raw (batch 64)",
                f"{sustained / raw64:.2f}",
                verdict(sustained >= SUSTAINED_GOAL * raw64),
            ],
            [
                "sustained / raw 'after' (batch 32, noise check)",
                f"{sustained / after[0][32][0]:.2f}",
                verdict(sustained >= SUSTAINED_GOAL * after[0][32][0]),
            ],
        ]
    if batched.latencies_ms:
        bs = batched.items / batched.done_seconds
        goals.append(
            [
                "batched path: sustained / raw (batch 32)",
                f"{bs / raw32:.2f}",
                verdict(bs >= SUSTAINED_GOAL * raw32),
            ]
        )
        # The reference is the faster batch size: what the same texts cost embedded alone.
        best = max(raw32, raw64)
        after_best = max(after[0][32][0], after[0][64][0])
        drain = batched.drain_rate
        print(
            f"\nburst backlog: {batched.backlog_at_ack:,} items pending at the last ack"
            f" ({batched.acked_seconds:.1f} s), drained in"
            f" {batched.done_seconds - batched.acked_seconds:.1f} s: {drain:.1f} items/s;"
            f" raw batched {best:.1f} items/s before, {after_best:.1f} after"
        )
        goals += [
            [
                "burst backlog drain / raw batched (faster of 32 and 64)",
                f"{drain / best:.2f}",
                verdict(drain >= DRAIN_GOAL * best),
            ],
            [
                "burst backlog drain / raw batched 'after' (noise check)",
                f"{drain / after_best:.2f}",
                verdict(drain >= DRAIN_GOAL * after_best),
            ],
        ]
    print_table(
        "Goals (sustained: >= 0.80; drain: >= 0.90)", ["goal", "measured", "verdict"], goals
    )
    print(f"\nserver RSS at the end: {rss[0]:.0f} MiB (peak {rss[1]:.0f} MiB)")


if __name__ == "__main__":
    raise SystemExit(main())
