"""Bulk import benchmark: `contextwm import` of a JSON Lines timeline into a running server,
against the raw batched embedding throughput of the same model, measured in the same run.

Measures:

1. raw: SentenceTransformerEmbedder (all-MiniLM-L6-v2) in this process, alone on the
   machine, embedding a sample of the same texts in batches of 256 (the import's chunk) and
   64 (the model's own batch); the faster is the reference, measured before the import and
   again after it (the machine is shared: the drift shows);
2. the import: `contextwm serve` as a subprocess with the default settings (the indexer's
   model in a child process, which embeds imports too), then
   `contextwm import FILE` as another, timed from its start to its exit. Items are
   acknowledged only once embedded and stored, so the import's rate is the ingest rate;
   the store is then checked: every item stored, none without vector;
3. the server's resident memory (VmRSS, sampled every 0.25 s): before the import, its peak
   during it, at its end; and the embedding child's, likewise.

Texts: seeded turns of about 40 cl100k tokens (bench_common.TextGenerator), spread over
--conversations conversations in order, with historic timestamps a minute apart.
Target: the import at >= 90 % of the raw reference; memory flat while it loads.

Run:  scripts/bench ingest --bulk                      (100,000 items, ~5 min)
      scripts/bench bulk --items 5000 --raw-items 2000 (smoke run)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench_common import ServerProcess, TextGenerator, log, print_table, rss_mb, verdict
from contextwm_client import Client

GOAL = 0.9
SAMPLE_SECONDS = 0.25


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--items", type=int, default=100_000, help="items in the timeline")
    p.add_argument("--conversations", type=int, default=1000, help="conversations they fill")
    p.add_argument("--raw-items", type=int, default=20_000, help="texts in the raw sample")
    p.add_argument("--chunk-size", type=int, default=256, help="items per stream message")
    p.add_argument("--seed", type=int, default=23)
    return p.parse_args(argv)


def timeline(path: Path, items: int, conversations: int, seed: int) -> list[str]:
    """Writes the JSON Lines input; returns its texts in order."""
    gen = TextGenerator(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    per = max(1, items // conversations)
    texts = []
    with path.open("w") as f:
        for n in range(items):
            conversation, k = n // per % conversations, n % per
            role = "user" if k % 2 == 0 else "assistant"
            text = gen.text(role)[0]
            texts.append(text)
            row = {
                "conversation_id": f"bulk-{conversation:05d}",
                "role": role,
                "content": text,
                "timestamp": (start + timedelta(minutes=n)).isoformat(),
            }
            f.write(json.dumps(row) + "\n")
    return texts


def raw_rate(texts: list[str]) -> tuple[float, int]:
    """(items/s, batch) of the faster batch size, embedding texts in this process."""
    from contextwm.adapters.embedder_st import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    best = (0.0, 0)
    for batch in (256, 64):
        for start in range(0, min(len(texts), 1024), batch):  # warm-up: new padded shapes
            embedder.embed(texts[start : start + batch])
        began = time.perf_counter()
        for start in range(0, len(texts), batch):
            embedder.embed(texts[start : start + batch])
        rate = len(texts) / (time.perf_counter() - began)
        log(f"raw embedding, batch {batch}: {rate:,.0f} items/s")
        best = max(best, (rate, batch))
    return best


class Memory:
    """Samples a process's and its children's resident memory until stopped."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.server: list[float] = []
        self.child: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _children(self) -> list[int]:
        found = []
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            text = (task / "children").read_text().split()
            found += [int(c) for c in text]
        return found

    def sample(self) -> None:
        self.server.append(rss_mb(self.pid)[0])
        self.child.append(sum(rss_mb(c)[0] for c in self._children()))

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self.sample()

    def __enter__(self) -> Memory:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


def run_import(target: str, path: Path, state: Path, chunk_size: int) -> tuple[float, str]:
    exe = Path(sys.executable).parent / "contextwm"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "contextwm"]
    cmd += ["--target", target, "import", str(path), "--state-dir", str(state)]
    cmd += ["--chunk-size", str(chunk_size)]
    began = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"import failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, done.stderr.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="cwm-bench-bulk-"))
    try:
        path = tmp / "timeline.jsonl"
        texts = timeline(path, args.items, args.conversations, args.seed)
        log(f"timeline: {args.items:,} items, {path.stat().st_size / 2**20:.1f} MiB")
        sample = texts[: args.raw_items]
        raw_before, batch = raw_rate(sample)
        data = tmp / "data"
        with ServerProcess(data) as server:
            with Client(server.target, timeout=120.0) as client:
                client.append("warmup", "warm up the server's caches")
                client.search("warm", conversation_id="warmup", mode="dense")  # embedded
            log(f"server up in {server.start_seconds:.1f} s; importing")
            with Memory(server.pid) as memory:
                seconds, summary = run_import(server.target, path, tmp / "state", args.chunk_size)
            log(summary)
            with Client(server.target, timeout=120.0) as client:
                total = client.get_stats(all_namespaces=True).total
            stored = total.items - 1  # the warm-up item
            if stored != args.items or total.missing_vectors:
                raise RuntimeError(
                    f"stored {stored} items ({total.missing_vectors} without vector)"
                )
        raw_after, _ = raw_rate(sample)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    rate = args.items / seconds
    ratio = rate / raw_before
    server_mb, child_mb = memory.server, memory.child
    print_table(
        f"Bulk import of {args.items:,} items (~40 tokens) into {args.conversations:,}"
        " conversations",
        ["measure", "items/s", "seconds", "vs raw before", "vs raw after"],
        [
            [f"raw embedding before (batch {batch})", f"{raw_before:,.0f}", "", "1.00", ""],
            [
                "contextwm import",
                f"{rate:,.0f}",
                f"{seconds:.1f}",
                f"{ratio:.2f}",
                f"{rate / raw_after:.2f}",
            ],
            ["raw embedding after", f"{raw_after:,.0f}", "", "", "1.00"],
        ],
    )
    print_table(
        "Resident memory during the import (MiB)",
        ["process", "start", "peak", "end"],
        [
            ["server", f"{server_mb[0]:.0f}", f"{max(server_mb):.0f}", f"{server_mb[-1]:.0f}"],
            [
                "embedding child",
                f"{child_mb[0]:.0f}",
                f"{max(child_mb):.0f}",
                f"{child_mb[-1]:.0f}",
            ],
        ],
    )
    tenths = [server_mb[min(len(server_mb) - 1, len(server_mb) * k // 10)] for k in range(11)]
    print("server RSS (MiB) at each tenth of the import:", " ".join(f"{m:.0f}" for m in tenths))
    print(f"import >= {GOAL:.0%} of raw embedding (before): {verdict(ratio >= GOAL)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
