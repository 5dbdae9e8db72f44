"""Agent-loop benchmark: usage, active-context and compaction latency on 10,000 items, and the
tokens duplicate-read replacement saves on a generated agent session.

Measures, through the real `contextwm_client.Client` over loopback against a
`contextwm serve` subprocess (port 0, fresh temp data dir, the bundled MiniLM model):

1. a generated agent session of --items items (default 10,000: user requests, assistant
   turns, tool outputs, whole-file reads that re-read files) appended with append_batch, with a
   context limit so large that nothing is compacted on its own; timing starts once every
   item is embedded, so the indexer does not compete;
2. GetUsage p50/p99 (with and without a reported provider count), GetActiveContext p50/p99
   for the first page of 100 entries, and the time to list the whole active context;
3. Compact p50/p99 on the 10,000-item active context, with a client summary and with the
   server's extractive summary: a checkpoint is taken first and restored (untimed) after
   each compaction, so every compaction starts from the same 10,000 items;
4. duplicate-read savings: a session of --savings-items items in two more conversations, one
   with replace_duplicate_reads and masking off and one with the defaults; active-context
   tokens of both ("before" and "after"), and how much of the saving is duplicate reads and
   how much masking.

Run:  .venv/bin/python scripts/bench_agent_loop.py            (full, a few minutes)
      .venv/bin/python scripts/bench_agent_loop.py --quick    (smoke run)
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_common import (  # also sets HF_HUB_OFFLINE before any model import
    ServerProcess,
    TextGenerator,
    log,
    p50_p99,
    print_table,
    wait_embedded,
)
from contextwm_client import Client, ConversationSettings, FileRef, NewItem

FILES = 60
FILE_LINES = (20, 80)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--items", type=int, default=10_000, help="items in the timed session")
    p.add_argument("--savings-items", type=int, default=2000, help="items in the savings sessions")
    p.add_argument("--calls", type=int, default=200, help="timed calls per read operation")
    p.add_argument("--compactions", type=int, default=20, help="timed compactions per kind")
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="smoke run: 1,000 items, 30 calls, 3")
    args = p.parse_args()
    if args.quick:
        args.items, args.savings_items, args.calls, args.compactions = 1000, 500, 30, 3
    return args


def file_text(rng: random.Random, path: str, version: int) -> str:
    """A plausible source file; the version changes a few lines, as edits do."""
    lines = [f"# {path} (version {version})"]
    for n in range(rng.randint(*FILE_LINES)):
        lines.append(f"def helper_{n}(value):  # v{version if n % 7 == 0 else 0}")
        lines.append(f"    return value * {n} + {version if n % 11 == 0 else 1}")
    return "\n".join(lines)


def session(n: int, seed: int) -> list[NewItem]:
    """An agent session: a request, then steps of assistant turn + tool output, where a third
    of the tool outputs read a whole file (often one read before), some run commands, and a
    user request comes every 50 items."""
    rng = random.Random(seed)
    gen = TextGenerator(seed)
    paths = [f"src/module_{i}.py" for i in range(FILES)]
    versions = dict.fromkeys(paths, 1)
    items = [
        NewItem(content="Fix the failing tests in src/. Always run pytest with -x.", role="user")
    ]
    while len(items) < n:
        if len(items) % 50 == 0:
            items.append(NewItem(content=gen.text("user")[0], role="user"))
            continue
        items.append(NewItem(content=gen.text("assistant")[0], role="assistant"))
        kind = rng.random()
        if kind < 0.35:
            path = rng.choice(paths[: FILES // 3]) if rng.random() < 0.7 else rng.choice(paths)
            if rng.random() < 0.2:
                versions[path] += 1
            items.append(
                NewItem(
                    content=file_text(rng, path, versions[path]),
                    role="tool",
                    metadata={"tool": "read_file"},
                    file=FileRef(path=path, kind="read"),
                )
            )
        elif kind < 0.6:
            code = 0 if rng.random() < 0.7 else 1
            items.append(
                NewItem(
                    content=f"$ pytest -x tests/test_{rng.randrange(40)}.py\n"
                    + ("1 passed" if code == 0 else "FAILED: AssertionError")
                    + f"\nexit code {code}",
                    role="tool",
                    metadata={"tool": "bash"},
                )
            )
        else:
            items.append(
                NewItem(content=gen.text("tool")[0], role="tool", metadata={"tool": "search"})
            )
    return items[:n]


def timed(calls: int, fn: Callable[[], object]) -> list[float]:
    fn()  # warm
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def load(client: Client, cid: str, items: list[NewItem], *, optimise: bool) -> None:
    client.create_conversation(
        cid,
        settings=ConversationSettings(
            context_limit=100_000_000,
            replace_duplicate_reads=optimise,
            mask_tool_outputs_after_turns=10 if optimise else 0,
        ),
    )
    for start in range(0, len(items), 1000):
        client.append_batch(cid, items[start : start + 1000])


def main() -> int:
    args = parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cwm-bench-loop-"))
    items = session(args.items, args.seed)
    short = session(args.savings_items, args.seed + 1)
    try:
        with ServerProcess(tmp / "data") as server, Client(server.target, timeout=600) as c:
            log(f"loading {len(items):,} items, then {len(short):,} twice")
            load(c, "loop", items, optimise=True)
            load(c, "saving-off", short, optimise=False)
            load(c, "saving-on", short, optimise=True)
            wait_embedded(c, ["loop", "saving-off", "saving-on"])
            log("embedded; timing")
            rows = []
            usage = timed(args.calls, lambda: c.get_usage("loop"))
            rows.append(["GetUsage", *p50_p99(usage)])
            reported = timed(args.calls, lambda: c.get_usage("loop", reported_input_tokens=123_456))
            rows.append(["GetUsage with a reported count", *p50_p99(reported)])
            page = timed(args.calls, lambda: c.get_active_context("loop", page_size=100))
            rows.append(["GetActiveContext, first 100 entries", *p50_p99(page)])
            whole = timed(max(3, args.calls // 20), lambda: list(c.iter_active_context("loop")))
            rows.append(["whole active context (pages of 500)", *p50_p99(whole)])
            c.create_checkpoint("loop", "full")
            for label, summary in (
                ("Compact, client summary", "Summary: tests fixed in src/module_3.py."),
                ("Compact, extractive summary", None),
            ):
                times = []
                for _ in range(args.compactions):
                    t0 = time.perf_counter()
                    c.compact("loop", summary)
                    times.append((time.perf_counter() - t0) * 1000)
                    c.restore_checkpoint("loop", "full")
                rows.append([label, *p50_p99(times)])
            active = c.get_usage("loop")
            print_table(
                f"Agent-loop calls on a conversation of {len(items):,} items"
                f" ({active.active_items:,} in the active context, {active.active_tokens:,}"
                " tokens as sent)",
                ["call", "p50 ms", "p99 ms"],
                [[r[0], f"{r[1]:.1f}", f"{r[2]:.1f}"] for r in rows],
            )
            off, on = c.get_usage("saving-off"), c.get_usage("saving-on")
            o = on.optimisations
            print_table(
                f"Active-context tokens of a {len(short):,}-item agent session that re-reads files",
                ["conversation", "active tokens", "replaced reads", "saved", "masked", "saved"],
                [
                    ["duplicate reads and masking off (before)", f"{off.active_tokens:,}"]
                    + ["0"] * 4,
                    [
                        "both on, the defaults (after)",
                        f"{on.active_tokens:,}",
                        f"{o.duplicate_reads:,}",
                        f"{o.duplicate_tokens_saved:,}",
                        f"{o.masked_items:,}",
                        f"{o.masked_tokens_saved:,}",
                    ],
                ],
            )
            print(f"\nafter / before: {on.active_tokens / off.active_tokens:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
