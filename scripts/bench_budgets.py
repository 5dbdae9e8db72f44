"""Category-budget benchmark: what contributors cost a GetContext call.

Measures, through the real `contextwm_client.Client` over loopback against a
`contextwm serve --workspace W` subprocess (port 0, fresh temp data dir, the bundled model):

1. a workspace W: a git copy of this repository's server/ and client/ sources (about 100 files),
   committed, then a few files edited so their diffs against HEAD are the working files' form;
2. a session of --items items (user requests, assistant turns, whole-file reads of W's files)
   appended with append_batch; timing starts once every item is embedded;
3. GetContext p50/p99 at --max-tokens for the same queries: without categories (the recent /
   history split), and with categories (all four contributors: project docs, the codebase
   map with tree-sitter symbols, up to 10 working files with git diffs, retrieval); the first
   call with categories (cold: symbol parsing and contributor embeddings) is reported apart.

Run:  .venv/bin/python scripts/bench_budgets.py            (full, a few minutes)
      .venv/bin/python scripts/bench_budgets.py --quick    (smoke run)
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench_common import (  # also sets HF_HUB_OFFLINE before any model import
    ServerProcess,
    TextGenerator,
    log,
    p50_p99,
    print_table,
    wait_embedded,
)
from contextwm_client import Client, FileRef, NewItem

ROOT = Path(__file__).resolve().parents[1]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--items", type=int, default=5000, help="items in the session")
    p.add_argument("--calls", type=int, default=100, help="timed calls per mode")
    p.add_argument("--max-tokens", type=int, default=8000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--quick", action="store_true", help="smoke run: 500 items, 10 calls")
    args = p.parse_args()
    if args.quick:
        args.items, args.calls = 500, 10
    return args


def make_workspace(where: Path) -> list[str]:
    """A git repository of this project's sources; returns its Python files."""
    for part in ("server", "client"):
        shutil.copytree(
            ROOT / part, where / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
        )
    shutil.copy(ROOT / "README.md", where / "README.md")
    git = ["git", "-c", "user.email=b@example.com", "-c", "user.name=bench"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run([*git, *args], cwd=where, check=True, capture_output=True)
    files = sorted(str(p.relative_to(where)) for p in where.rglob("*.py"))
    for name in files[::15]:  # edit a few: their working-file form is a diff
        path = where / name
        path.write_text(path.read_text().replace("return", "return  # edited", 1))
    return files


def session(n: int, files: list[str], where: Path, seed: int) -> list[NewItem]:
    rng = random.Random(seed)
    gen = TextGenerator(seed)
    items: list[NewItem] = []
    while len(items) < n:
        kind = rng.random()
        if kind < 0.3:
            items.append(NewItem(content=gen.text("user")[0], role="user"))
        elif kind < 0.7:
            items.append(NewItem(content=gen.text("assistant")[0], role="assistant"))
        else:
            name = rng.choice(files)
            text = (where / name).read_text()[:1500] or "(empty file)"
            items.append(
                NewItem(
                    content=text,
                    role="tool",
                    metadata={"tool": "read_file"},
                    file=FileRef(path=name, kind="read"),
                )
            )
    return items


def main() -> None:
    args = parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cwm-bench-budgets-"))
    try:
        workspace = tmp / "workspace"
        files = make_workspace(workspace)
        log(f"workspace: {len(files)} Python files (git, {len(files[::15])} edited)")
        items = session(args.items, files, workspace, args.seed)
        server = ServerProcess(tmp / "data", extra_args=["--workspace", str(workspace)])
        with server, Client(server.target) as client:
            for start in range(0, len(items), 500):
                client.append_batch("s", items[start : start + 500])
            wait_embedded(client, ["s"])
            gen = TextGenerator(args.seed + 1)
            queries = [gen.query() for _ in range(args.calls)]

            def call(query: str, categories: bool) -> float:
                t0 = time.perf_counter()
                client.get_context("s", query, max_tokens=args.max_tokens, categories=categories)
                return (time.perf_counter() - t0) * 1000

            cold = call("where are the settings loaded from the TOML file?", True)
            call("warm-up", False)
            plain: list[float] = []
            budgeted: list[float] = []
            for q in queries:  # interleaved, so both modes see the same machine
                plain.append(call(q, False))
                budgeted.append(call(q, True))
            ctx = client.get_context("s", queries[0], max_tokens=args.max_tokens, categories=True)
            assert ctx.allocation is not None
            chosen = {p.type for p in ctx.allocation.chosen}
        p_plain, p_budget = p50_p99(plain), p50_p99(budgeted)
        print_table(
            f"GetContext, {args.items} items, max_tokens {args.max_tokens}, {args.calls} calls",
            ["mode", "p50 ms", "p99 ms"],
            [
                ["recent / history (no categories)", f"{p_plain[0]:.1f}", f"{p_plain[1]:.1f}"],
                ["categories with contributors", f"{p_budget[0]:.1f}", f"{p_budget[1]:.1f}"],
                ["first call with categories (cold)", f"{cold:.1f}", ""],
            ],
        )
        print(f"p50 ratio categories / plain: {p_budget[0] / p_plain[0]:.2f}")
        print(f"contributor types chosen in one response: {', '.join(sorted(chosen))}")
        print(f"tokens: {ctx.tokens.total} of {args.max_tokens}; allocation:")
        for c in ctx.allocation.categories:
            print(f"  {c.category:<14} granted {c.granted:>5} used {c.used:>5}"
                  f" lent {c.lent:>5} borrowed {c.borrowed:>5}")  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
