"""Embedding engines: one query's latency and the batched rate, quiet and beside busy processes.

Measures, in this process and in one run, the bundled all-MiniLM-L6-v2 on:

* torch: the PyTorch path (`embedder = "minilm-torch"`), a query embedded on this process's
  main thread with every core, as `contextwm serve` did before ONNX Runtime;
* onnx: ONNX Runtime, the default (`minilm`), a query embedded on a worker thread, as a
  request thread of the server does;
* int8: ONNX Runtime with int8 matrix multiplies (`minilm-int8`), the same way;
* onnx 1 thread: the default's model with one thread per query, the thread count the
  default's two are chosen against (no goal).

For each: one query's embedding p50/p99 on a quiet machine, beside one and beside two
busy-loop processes (`python -c "while True: pass"`) started by this process, and beside two
started in a session of their own, engines interleaved within each condition; and the
batched rate (texts/s) in batches of the indexer's sizes (32 beside appends, 128 once they
stop), quiet and beside one busy loop. Texts are LoCoMo turns (--data, the dev set's folder)
or generated ones.

Goals: onnx query p50 <= 0.5 x torch's quiet; under each load within 1.5 x its own quiet
p50; onnx batched rate >= 1.5 x torch's. Loops of this process's session share its
autogroup, as they share the server's with `contextwm serve --no-own-session`; loops apart
are how an agent started elsewhere sits beside the server on its defaults, which serves from
a session of its own (docs/sidecar.md). The goal holds for every load.
The vectors' agreement (min cosine onnx/torch, mean cosine int8/torch) is printed from the
same texts.

Run:  scripts/bench embedding [--data ../shared/data/locomo_dev] [--queries 300] [--quick]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench_common import TextGenerator, busy_loops, log, p50_p99, print_table, verdict
from contextwm.adapters.embedder_onnx import OnnxEmbedder
from contextwm.adapters.embedders import make_embedder
from contextwm.adapters.main_thread import MainThread
from contextwm.ports.embedder import Embedder

ENGINES = ("torch", "onnx", "int8", "onnx 1 thread")
BATCH_ENGINES = ENGINES[:3]  # one thread per query says nothing of batches
# (label, busy loops, in a session of their own)
LOADS = (
    ("quiet", 0, False),
    ("1 busy loop", 1, False),
    ("2 busy loops", 2, False),
    ("2 busy loops apart", 2, True),
)
BATCH_SIZES = (32, 128)  # the indexer's batch beside appends, and once they stop
BATCH_LOADS = (0, 1)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="a LoCoMo dev folder (turns.jsonl.gz)")
    parser.add_argument("--queries", type=int, default=300, help="queries per engine and load")
    parser.add_argument("--batch-texts", type=int, default=2000, help="texts per batched run")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.queries, args.batch_texts = 40, 200
    return args


def texts_for(args: argparse.Namespace, count: int) -> list[str]:
    if args.data is not None:
        with gzip.open(args.data / "turns.jsonl.gz", "rt") as f:
            turns = [json.loads(line)["text"] for line in f]
        return turns[:count]
    generator = TextGenerator(7)
    return [generator.text()[0] for _ in range(count)]


def on_worker(fn: Callable[[], None]) -> None:
    """fn on a fresh thread, as a gRPC request thread runs it."""
    thread = threading.Thread(target=fn)
    thread.start()
    thread.join()


def query_times(embedder: Embedder, queries: Sequence[str], worker: bool) -> list[float]:
    times: list[float] = []

    def run() -> None:
        for query in queries:
            start = time.perf_counter()
            embedder.embed([query])
            times.append((time.perf_counter() - start) * 1000)

    if worker:
        on_worker(run)
    else:
        run()
    return times


def batch_rate(embedder: Embedder, texts: Sequence[str], size: int) -> float:
    start = time.perf_counter()
    for first in range(0, len(texts), size):
        embedder.embed(texts[first : first + size])
    return len(texts) / (time.perf_counter() - start)


def main() -> int:
    args = parse_args()
    log("loading the engines (onnx exports on first use)")
    embedders: dict[str, Embedder] = {
        "torch": make_embedder("minilm-torch", MainThread()),
        "onnx": make_embedder("minilm"),
        "int8": make_embedder("minilm-int8"),
        "onnx 1 thread": OnnxEmbedder(threads=1),
    }
    queries = texts_for(args, 100 + args.queries)[100:]
    batch_texts = texts_for(args, args.batch_texts)
    for embedder in embedders.values():
        embedder.embed(queries[:5] + batch_texts[:64])  # warm-up

    latency: dict[tuple[str, str], tuple[float, float]] = {}
    for label, count, apart in LOADS:
        log(f"queries: {label}")
        with busy_loops(count, settle=0.5, apart=apart):
            for name, embedder in embedders.items():
                # The torch path embedded a query on the serving main thread: this one.
                times = query_times(embedder, queries, worker=name != "torch")
                latency[name, label] = p50_p99(times)

    rates: dict[tuple[str, int, int], float] = {}
    for load in BATCH_LOADS:
        log(f"batched rates beside {load} busy loop(s)")
        with busy_loops(load, settle=0.5):
            for size in BATCH_SIZES:
                for name in BATCH_ENGINES:
                    rates[name, size, load] = batch_rate(embedders[name], batch_texts, size)
    sample = batch_texts[:500]
    vectors = {name: embedders[name].embed(sample) for name in BATCH_ENGINES}
    agreement = {
        name: (
            float((vectors[name] * vectors["torch"]).sum(axis=1).min()),
            float((vectors[name] * vectors["torch"]).sum(axis=1).mean()),
        )
        for name in ("onnx", "int8")
    }
    report(latency, rates, agreement, args)
    return 0


def report(
    latency: dict[tuple[str, str], tuple[float, float]],
    rates: dict[tuple[str, int, int], float],
    agreement: dict[str, tuple[float, float]],
    args: argparse.Namespace,
) -> None:
    rows = []
    for name in ENGINES:
        quiet = latency[name, "quiet"][0]
        row: list[object] = [name]
        for label, count, _ in LOADS:
            p50, p99 = latency[name, label]
            row.append(f"{p50:.2f} / {p99:.1f}" + (f" ({p50 / quiet:.2f}x)" if count else ""))
        rows.append(row)
    print_table(
        f"one query's embedding, ms p50 / p99 ({args.queries} queries; ratio to own quiet p50;"
        " 'apart': the loops in a session of their own)",
        ["engine", *[label for label, _, _ in LOADS]],
        rows,
    )
    for load in BATCH_LOADS:
        print_table(
            f"batched embedding, texts/s, beside {load} busy loop(s)",
            ["engine", *[f"batches of {size}" for size in BATCH_SIZES], "x torch (best size)"],
            [
                [
                    name,
                    *[f"{rates[name, size, load]:.0f}" for size in BATCH_SIZES],
                    f"{best(rates, name, load) / best(rates, 'torch', load):.2f}",
                ]
                for name in BATCH_ENGINES
            ],
        )
    print_table(
        "vectors against torch's (500 texts)",
        ["engine", "min cosine", "mean cosine"],
        [[name, f"{low:.6f}", f"{mean:.6f}"] for name, (low, mean) in agreement.items()],
    )
    onnx_quiet, torch_quiet = latency["onnx", "quiet"][0], latency["torch", "quiet"][0]
    worst = max(latency["onnx", label][0] for label, count, _ in LOADS if count) / onnx_quiet
    speedup = best(rates, "onnx", 0) / best(rates, "torch", 0)
    loaded = best(rates, "onnx", 1) / best(rates, "torch", 1)
    print("\n== goals")
    print(
        f"onnx query p50 quiet {onnx_quiet / torch_quiet:.2f} x torch's (<= 0.5): "
        f"{verdict(onnx_quiet <= 0.5 * torch_quiet)}"
    )
    print(
        f"onnx query p50 under load, worst {worst:.2f} x its quiet (<= 1.5): "
        f"{verdict(worst <= 1.5)}"
    )
    print(f"onnx batched rate quiet {speedup:.2f} x torch's (>= 1.5): {verdict(speedup >= 1.5)}")
    print(
        f"onnx batched rate beside a busy loop {loaded:.2f} x torch's (>= 1.5): "
        f"{verdict(loaded >= 1.5)}"
    )
    print(
        f"onnx vectors min cosine {agreement['onnx'][0]:.6f} (>= 0.99999): "
        f"{verdict(agreement['onnx'][0] >= 0.99999)}"
    )
    one = latency["onnx 1 thread", "quiet"][0]
    one_loaded = max(latency["onnx 1 thread", label][0] for label, count, _ in LOADS if count)
    print("\n== the thread count (no goal)")
    print(f"one thread's quiet query p50 {one / torch_quiet:.2f} x torch's (the goal: <= 0.5)")
    print(
        f"one thread's quiet query p50 {one / onnx_quiet:.2f} x two threads': beside two busy"
        " loops the process's threads get about one core between them, so two threads take"
        " about that much longer there at best"
    )
    print(
        f"one thread under load, worst {one_loaded / one:.2f} x its quiet p50,"
        f" {one_loaded / onnx_quiet:.2f} x two threads' quiet p50"
    )


def best(rates: dict[tuple[str, int, int], float], name: str, load: int) -> float:
    return max(rates[name, size, load] for size in BATCH_SIZES)


if __name__ == "__main__":
    sys.exit(main())
