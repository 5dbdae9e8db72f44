"""Tracing benchmark: what a span per call costs, tracing off against on, in the same run.

Three in-process servers (hashing vectors: the calls measured never embed), each with one
conversation of a few items:

* off: no otlp_endpoint, as every server runs by default;
* off again: a second such server, whose difference from the first is the noise floor;
* on: otlp_endpoint names an OTLP/gRPC receiver started here (tests/otlp_receiver.py), so
  each call's span is made, queued and exported in batches, as in production.

The off servers serve first, and the script checks then that nothing of OpenTelemetry is
loaded in the process. Then the calls are timed round-robin (one call to each server in a
shuffled order per round, so that drift and noise hit all three alike): --calls calls of
--method per server after a warm-up, on the client's side with perf_counter. Reports p50,
mean and p99 per server, the differences from off, and the spans the receiver got.

Goals: off loads nothing of OpenTelemetry and installs no interceptor (nothing to measure);
on costs under 0.3 ms per call at p50 and in the mean.

Run:  scripts/bench tracing                 (10,000 calls per server; about a minute)
      scripts/bench tracing --calls 1000    (smoke run)
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_common import log, percentile, print_table, verdict

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the tests' OTLP receiver

from contextwm.adapters.embedder_fake import HashingEmbedder  # noqa: E402
from contextwm.app import Service  # noqa: E402
from contextwm.settings import ServerSettings  # noqa: E402
from contextwm_client import Client  # noqa: E402

GOAL_MS = 0.3
CONVERSATION = "bench"


def opentelemetry_modules() -> list[str]:
    return sorted(name for name in sys.modules if name.split(".")[0] == "opentelemetry")


def start(root: Path, name: str, otlp_endpoint: str = "") -> Service:
    settings = ServerSettings(
        port=0,
        data_dir=root / name,
        embedder="hashing",
        indexer_process=False,
        otlp_endpoint=otlp_endpoint,
        retention_interval_seconds=0,
    )
    return Service.start(settings, embedder=HashingEmbedder())


def call_of(client: Client, method: str) -> Callable[[], object]:
    """One call of the method measured, on the benchmark's conversation."""
    if method == "GetConversation":
        return lambda: client.get_conversation(CONVERSATION)
    if method == "Search":
        return lambda: client.search("deploy", conversation_id=CONVERSATION, include_window=True)
    if method == "Append":
        return lambda: client.append(CONVERSATION, "the deploy to staging failed again")
    raise ValueError(method)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10_000, help="timed calls per server")
    parser.add_argument("--warmup", type=int, default=500, help="untimed calls per server")
    parser.add_argument(
        "--method", default="GetConversation", choices=["GetConversation", "Search", "Append"]
    )
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    with tempfile.TemporaryDirectory(prefix="bench-tracing-") as tmp:
        root = Path(tmp)
        names = ["off", "off again", "on"]
        services: dict[str, Service] = {}
        clients: dict[str, Client] = {}
        log("starting the servers without tracing")
        for name in names[:2]:
            services[name] = start(root, name.replace(" ", "-"))
        for name in names[:2]:
            clients[name] = Client(f"127.0.0.1:{services[name].port}")
            for i in range(5):
                clients[name].append(CONVERSATION, f"turn {i} about the deploy")
            call = call_of(clients[name], args.method)
            for _ in range(args.warmup):
                call()
        loaded_off = opentelemetry_modules()

        from otlp_receiver import OtlpReceiver

        receiver = OtlpReceiver()
        log(f"starting the traced server (OTLP/gRPC to {receiver.endpoint})")
        services["on"] = start(root, "on", receiver.endpoint)
        clients["on"] = Client(f"127.0.0.1:{services['on'].port}")
        for i in range(5):
            clients["on"].append(CONVERSATION, f"turn {i} about the deploy")
        on_call = call_of(clients["on"], args.method)
        for _ in range(args.warmup):
            on_call()

        calls = {name: call_of(clients[name], args.method) for name in names}
        times: dict[str, list[float]] = {name: [] for name in names}
        log(f"timing {args.calls:,} {args.method} calls per server, round-robin")
        order = list(names)
        for _ in range(args.calls):
            rng.shuffle(order)
            for name in order:
                began = time.perf_counter()
                calls[name]()
                times[name].append((time.perf_counter() - began) * 1e3)

        for client in clients.values():
            client.close()
        traced_calls = 5 + args.warmup + args.calls
        services["on"].stop(grace=1)  # flushes the spans still queued
        received = len(receiver.spans())
        receiver.close()
        for name in names[:2]:
            services[name].stop(grace=1)

    stats = {
        name: (
            percentile(sorted(values), 50),
            statistics.fmean(values),
            percentile(sorted(values), 99),
        )
        for name, values in times.items()
    }
    print_table(
        f"{args.method}, {args.calls:,} calls per server (ms, client side)",
        ["server", "p50", "mean", "p99"],
        [[name, *(f"{v:.3f}" for v in stats[name])] for name in names],
    )
    noise = [stats["off again"][i] - stats["off"][i] for i in range(3)]
    cost = [stats["on"][i] - stats["off"][i] for i in range(3)]
    print_table(
        "differences from off (ms per call)",
        ["", "p50", "mean", "p99"],
        [
            ["off again - off (noise)", *(f"{v:+.3f}" for v in noise)],
            ["on - off (tracing)", *(f"{v:+.3f}" for v in cost)],
        ],
    )
    print(f"\nspans received by the collector: {received:,} of {traced_calls:,} traced calls")
    print(
        f"off: OpenTelemetry modules loaded after serving: {len(loaded_off)}"
        f" ({', '.join(loaded_off[:3]) or 'none'}): {verdict(not loaded_off)}"
    )
    met = cost[0] < GOAL_MS and cost[1] < GOAL_MS
    print(f"on: under {GOAL_MS} ms per call at p50 and in the mean: {verdict(met)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
