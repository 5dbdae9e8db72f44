"""Workspace search benchmark: contextwm's scrollable search against ripgrep, same run.

Two trees, each searched with the same five searches (a rare identifier, a common word, a
regex, a case-insensitive word, a word under an include glob):

1. generated: --files source files (default 1,000) of about --lines lines (300) in eight
   languages (Python, JavaScript, TypeScript, Go, Rust, Java, C, C++), code-like text with
   identifiers, comments and strings, seeded; a git repository, so the listing is git's;
2. real: a copy of an installed package's source tree (sympy by default: about 1,500 Python
   files, 50 MB), a plain directory, so the listing is a .gitignore-honouring walk.

Per search it times, interleaved so all see the same machine:
- ours: `search_files` for the first page (default page size, context 3, cap 20 per file),
  in-process, through a StatCachedFiles: the first call (cold: every file read, decoded and
  split into lines) and the later ones (warm: stat() per file, texts from the cache);
- ours uncached: the same with the default source, every file read anew on every call;
- ours through the service's ChunkCache (warm), the FileSource the server passes today;
- rg: `rg -n -C3 --max-count 20 ...` as a subprocess with the same ignore rules, hidden
  files, case mode, globs and size limit, its output read through a pipe (rg stops at the
  first match when its stdout is /dev/null). Every run includes rg's process start.

The OS page cache is warm for both (the trees were just written). ripgrep runs on every
core, with its output unsorted; ours runs on one thread, sorted, and scans each file in
full (the page reports the exact totals). The figures: p50 / p99 in ms, and ours / rg.

Run:  .venv/bin/python scripts/bench_workspace.py            (full, a few minutes)
      .venv/bin/python scripts/bench_workspace.py --quick    (smoke run)

ripgrep is installed with apt-get when `rg` is missing (as root).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench_common import log, p50_p99, print_table, verdict
from contextwm.adapters.code_definitions import TreeSitterDefinitions
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.adapters.workspace import Workspace
from contextwm.domain.workspace_files import CaseMode, FileSearchQuery, SearchPage
from contextwm.workspace_files.chunk_cache import RACY_NS, ChunkCache
from contextwm.workspace_files.file_search import DEFAULT_MAX_FILE_BYTES, search_files
from contextwm.workspace_files.file_source import FileSource, ReadThroughFiles, StatCachedFiles

# The goal: a warm search within this factor of ripgrep's time on the same search.
TARGET_RATIO = 2.0
RARE_IDENTIFIER = "frobnicate_quux_budget"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--files", type=int, default=1000, help="generated source files")
    p.add_argument("--lines", type=int, default=300, help="lines per generated file (about)")
    p.add_argument("--runs", type=int, default=20, help="timed runs per search and tool")
    p.add_argument("--real-package", default="sympy", help="installed package to copy and search")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--quick", action="store_true", help="smoke run: 200 files, 3 runs")
    args = p.parse_args()
    if args.quick:
        args.files, args.runs = 200, 3
    return args


# ------------------------------------------------------------------ ripgrep


def ensure_ripgrep() -> str:
    """The path of `rg`, installed with apt-get (the Debian package) when missing."""
    found = shutil.which("rg")
    if found:
        return found
    log("rg not found: installing ripgrep with apt-get")
    install = ["apt-get", "install", "-y", "-q", "ripgrep"]
    if subprocess.run(install, capture_output=True, check=False).returncode != 0:
        # A fresh machine has no package lists yet.
        subprocess.run(["apt-get", "update", "-q"], capture_output=True, check=False)
        subprocess.run(install, capture_output=True, check=False)
    found = shutil.which("rg")
    if not found:
        sys.exit("ripgrep is missing and `apt-get install ripgrep` failed (are you root?)")
    return found


def rg_args(rg: str, query: FileSearchQuery, count_only: bool = False) -> list[str]:
    """rg with the search's semantics: our listing's ignore rules (hidden files searched,
    .gitignore in and out of git, no global or .ignore files, .git skipped), the same case
    mode, globs, size limit, cap per file and context."""
    case = {CaseMode.SMART: "-S", CaseMode.SENSITIVE: "-s", CaseMode.INSENSITIVE: "-i"}
    args = [rg, "--no-config", "--hidden", "--no-require-git", "--no-ignore-global"]
    args += ["--no-ignore-dot", "-g", "!.git", case[query.case]]
    args += ["--max-filesize", str(DEFAULT_MAX_FILE_BYTES)]
    args += ["--max-count", str(query.max_matches_per_file)]
    args += ["--count"] if count_only else ["-n", "-C", str(query.context_lines)]
    args += [] if query.regex else ["-F"]
    args += [a for glob in query.include for a in ("-g", glob)]
    args += [a for glob in query.exclude for a in ("-g", f"!{glob}")]
    return [*args, "-e", query.pattern, "."]


def run_rg(root: Path, args: Sequence[str]) -> bytes:
    done = subprocess.run(args, cwd=root, capture_output=True, check=False)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"rg failed: {done.stderr.decode(errors='replace')}")
    return done.stdout


def rg_totals(root: Path, rg: str, query: FileSearchQuery) -> tuple[int, int]:
    """(matching lines, each file's counted up to the cap; files) as rg counts them."""
    rows = run_rg(root, rg_args(rg, query, count_only=True)).decode().splitlines()
    counts = [int(r.rsplit(":", 1)[1]) for r in rows if r]
    return sum(counts), len(counts)


# ------------------------------------------------------------------ the generated tree


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_WORDS = _words(
    "user order cache config request buffer index token session record parser handler"
    " metrics queue stream payload client server error value count limit offset result item"
    " node path file retry timeout batch shard lease cursor frame"
)
_VERBS = _words("get set load save parse build apply flush merge check update reset")
_SENTENCES = (
    "keeps the {a} in sync with the {b}",
    "the {a} may be empty when the {b} is closed",
    "TODO: drop the {a} once the {b} is migrated",
    "retries the {a} at most {n} times before giving up",
    "FIXME the {b} leaks when the {a} errors",
    "must hold the {a} lock while touching the {b}",
)


class _Names:
    """Seeded identifiers and comment sentences."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def word(self) -> str:
        return self.rng.choice(_WORDS)

    def snake(self) -> str:
        return f"{self.rng.choice(_VERBS)}_{self.word()}_{self.word()}"

    def camel(self) -> str:
        a, b = self.word(), self.word()
        return f"{self.rng.choice(_VERBS)}{a.title()}{b.title()}"

    def sentence(self) -> str:
        text = self.rng.choice(_SENTENCES)
        return text.format(a=self.word(), b=self.word(), n=self.rng.randint(2, 9))

    def number(self) -> int:
        return self.rng.randint(1, 512)


def _python(n: _Names) -> list[str]:
    f, a, b, v = n.snake(), n.word(), n.word() + "_id", n.word() + "_count"
    return [
        f"def {f}({a}, {b}, limit={n.number()}):",
        f'    """{n.sentence().capitalize()}."""',
        f"    {v} = {a}.{n.snake()}({b})",
        f"    if {v} is None:",
        f'        raise ValueError("{n.word()} not found for {n.word()}")',
        "    for i in range(limit):",
        f"        {v} += i  # {n.sentence()}",
        f"    return {v}",
        "",
    ]


def _c_like(n: _Names, header: str, decl: str, throw: str, loop: str) -> list[str]:
    v, a = n.word() + "Count", n.word()
    return [
        f"// {n.sentence()}",
        header,
        f"    {decl} {v} = {a}.{n.camel()}({n.number()});",
        f"    if ({v} == 0) {{",
        f'        {throw}("{n.word()} error: {n.word()} missing");',
        "    }",
        f"    {loop} {{",
        f"        {v} += i; /* {n.sentence()} */",
        "    }",
        f"    return {v};",
        "}",
        "",
    ]


def _javascript(n: _Names) -> list[str]:
    header = f"function {n.camel()}({n.word()}, {n.word()}Id) {{"
    return _c_like(n, header, "let", "throw new Error", "for (let i = 0; i < 10; i++)")


def _typescript(n: _Names) -> list[str]:
    header = f"export function {n.camel()}({n.word()}: Options, {n.word()}Id: string): number {{"
    return _c_like(n, header, "let", "throw new Error", "for (let i = 0; i < 10; i++)")


def _java(n: _Names) -> list[str]:
    header = f"    public int {n.camel()}({n.word().title()} {n.word()}, String id) {{"
    loop = "for (int i = 0; i < 8; i++)"
    return _c_like(n, header, "int", "throw new IllegalStateException", loop)


def _c(n: _Names) -> list[str]:
    header = f"static int {n.snake()}(struct {n.word()} *{n.word()}, const char *name) {{"
    return _c_like(n, header, "int", "log_error", "for (int i = 0; i < 8; i++)")


def _cpp(n: _Names) -> list[str]:
    header = f"int {n.word().title()}::{n.camel()}(const std::string& {n.word()}) {{"
    return _c_like(n, header, "auto", "throw std::runtime_error", "for (int i = 0; i < 8; ++i)")


def _go(n: _Names) -> list[str]:
    camel = n.camel()
    name, v = camel[0].upper() + camel[1:], n.word() + "Count"  # exported
    return [
        f"// {name} {n.sentence()}",
        f"func {name}({n.word()} *{n.word().title()}, id string) (int, error) {{",
        f"\t{v} := len(id) + {n.number()}",
        f"\tif {v} == 0 {{",
        f'\t\treturn 0, fmt.Errorf("{n.word()} error: %s", id)',
        "\t}",
        "\tfor i := 0; i < 8; i++ {",
        f"\t\t{v} += i // {n.sentence()}",
        "\t}",
        f"\treturn {v}, nil",
        "}",
        "",
    ]


def _rust(n: _Names) -> list[str]:
    v = n.word() + "_count"
    return [
        f"/// {n.sentence().capitalize()}.",
        f"pub fn {n.snake()}({n.word()}: &{n.word().title()}, id: &str) -> Result<usize, Error> {{",
        f"    let mut {v} = id.len() + {n.number()};",
        f"    if {v} == 0 {{",
        f'        return Err(Error::new("{n.word()} error: missing {n.word()}"));',
        "    }",
        "    for i in 0..8 {",
        f"        {v} += i; // {n.sentence()}",
        "    }",
        f"    Ok({v})",
        "}",
        "",
    ]


@dataclass(frozen=True, slots=True)
class _Language:
    ext: str
    head: Callable[[_Names], list[str]]  # imports or includes
    block: Callable[[_Names], list[str]]  # one function, repeated to fill the file
    tail: tuple[str, ...] = ()  # closes the head (a Java class)


def _imports(*lines: str) -> Callable[[_Names], list[str]]:
    """A file head: lines with `{w}` filled with a word each time."""
    return lambda n: [line.replace("{w}", n.word()) for line in lines] + [""]


_LANGUAGES = (
    _Language("py", _imports("import os", "import sys", "from .{w} import {w}_config"), _python),
    _Language("js", _imports("const {w} = require('./{w}');"), _javascript),
    _Language("ts", _imports("import { Options } from './{w}';"), _typescript),
    _Language("go", _imports("package main", "", 'import "fmt"'), _go),
    _Language("rs", _imports("use crate::{w}::Error;"), _rust),
    _Language("java", _imports("public class Service {"), _java, ("}",)),
    _Language("c", _imports("#include <stdio.h>", '#include "{w}.h"'), _c),
    _Language("cpp", _imports("#include <string>", "#include <stdexcept>"), _cpp),
)


def generate_tree(root: Path, files: int, lines: int, seed: int) -> None:
    """Seeded source files in eight languages, about `lines` lines each, under 25 packages,
    a few holding RARE_IDENTIFIER; committed to a git repository with a .gitignore."""
    rng = random.Random(seed)
    names = _Names(rng)
    rare = set(rng.sample(range(files), 3))
    for i in range(files):
        lang = _LANGUAGES[i % len(_LANGUAGES)]
        rows = lang.head(names)
        while len(rows) < lines - len(lang.tail):
            rows += lang.block(names)
        rows = rows[: lines - len(lang.tail)] + list(lang.tail)
        if i in rare:
            rows.insert(len(rows) // 2, f"// see {RARE_IDENTIFIER} for the limits")
        path = root / f"pkg{i % 25:02d}" / f"{names.word()}_{i:04d}.{lang.ext}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(rows) + "\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "build").mkdir()
    (root / "build" / "bundle.js").write_text("return error\n" * 1000)  # ignored by both
    git = ["git", "-C", str(root), "-c", "user.email=b@example.com", "-c", "user.name=bench"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run([*git, *args], check=True, capture_output=True)


def copy_real_tree(package: str, where: Path) -> Path:
    """A copy of an installed package's directory (bytecode caches left out)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"package {package!r} is not installed here")
    source = Path(next(iter(spec.submodule_search_locations)))
    shutil.copytree(source, where, ignore=shutil.ignore_patterns("__pycache__"))
    return where


# ------------------------------------------------------------------ the searches


def searches(real: bool) -> list[tuple[str, FileSearchQuery]]:
    """The five searches of a tree, each named for the table."""
    if real:
        return [
            ("rare identifier", FileSearchQuery("_eval_rewrite_as_Heaviside")),
            ("common word", FileSearchQuery("return")),
            ("regex", FileSearchQuery(r"def _eval_\w+\(self", regex=True)),
            ("case-insensitive", FileSearchQuery("Matrix", case=CaseMode.INSENSITIVE)),
            ("include glob", FileSearchQuery("raises", include=("**/tests/*.py",))),
        ]
    return [
        ("rare identifier", FileSearchQuery(RARE_IDENTIFIER)),
        ("common word", FileSearchQuery("return")),
        ("regex", FileSearchQuery(r"\w+_(count|limit)\s*[=+]", regex=True)),
        ("case-insensitive", FileSearchQuery("Error", case=CaseMode.INSENSITIVE)),
        ("include glob", FileSearchQuery("func", include=("*.go",))),
    ]


@dataclass
class Timings:
    """One search's figures on one tree, in milliseconds."""

    name: str
    matches: int = 0
    files: int = 0
    rg_matches: int = 0
    rg_files: int = 0
    cold: float = 0.0
    rg_first: float = 0.0
    warm: list[float] = dataclasses.field(default_factory=list)
    uncached: list[float] = dataclasses.field(default_factory=list)
    chunk_cache: list[float] = dataclasses.field(default_factory=list)
    rg: list[float] = dataclasses.field(default_factory=list)


def time_ours(
    ws: Workspace, query: FileSearchQuery, source: FileSource
) -> tuple[float, SearchPage]:
    counter = token_counter("cl100k_base")
    t0 = time.perf_counter()
    page = search_files(ws, query, counter, files=source)
    return (time.perf_counter() - t0) * 1000, page


def time_rg(root: Path, args: Sequence[str]) -> float:
    t0 = time.perf_counter()
    run_rg(root, args)
    return (time.perf_counter() - t0) * 1000


def bench_tree(root: Path, rg: str, real: bool, runs: int) -> list[Timings]:
    """Every search of a tree: cold first, then interleaved warm, uncached and rg runs."""
    out: list[Timings] = []
    for name, query in searches(real):
        t = Timings(name)
        # A fresh workspace and cache per search: its first call reads every file.
        ws, cache = Workspace(root), StatCachedFiles()
        chunks = ChunkCache(256 * 1024 * 1024, TreeSitterDefinitions())
        time_ours(ws, query, chunks)  # its cold call, not reported
        args = rg_args(rg, query)
        t.rg_first = time_rg(root, args)
        t.cold, page = time_ours(ws, query, cache)
        t.matches, t.files = page.total_matches, page.total_files
        t.rg_matches, t.rg_files = rg_totals(root, rg, query)
        for _ in range(runs):
            t.warm.append(time_ours(ws, query, cache)[0])
            t.uncached.append(time_ours(ws, query, ReadThroughFiles())[0])
            t.chunk_cache.append(time_ours(ws, query, chunks)[0])
            t.rg.append(time_rg(root, args))
        out.append(t)
        log(f"  {name}: {t.matches} matches in {t.files} files")
    return out


def print_tree(title: str, timings: Sequence[Timings]) -> None:
    rows = []
    for t in timings:
        warm, uncached, rg = p50_p99(t.warm), p50_p99(t.uncached), p50_p99(t.rg)
        chunk_cache = p50_p99(t.chunk_cache)
        same = "yes" if (t.matches, t.files) == (t.rg_matches, t.rg_files) else "NO"
        rows.append(
            [
                t.name,
                f"{t.matches}/{t.files}",
                same,
                f"{t.cold:.1f}",
                f"{warm[0]:.1f}",
                f"{warm[1]:.1f}",
                f"{uncached[0]:.1f}",
                f"{chunk_cache[0]:.1f}",
                f"{rg[0]:.1f}",
                f"{rg[1]:.1f}",
                f"{warm[0] / rg[0]:.2f}",
                f"{uncached[0] / rg[0]:.2f}",
            ]
        )
    print_table(
        title,
        [
            "search",
            "matches/files",
            "= rg",
            "cold ms",
            "warm p50",
            "warm p99",
            "uncached p50",
            "ChunkCache p50",
            "rg p50",
            "rg p99",
            "warm/rg",
            "uncached/rg",
        ],
        rows,
    )
    worst = max(p50_p99(t.warm)[0] / p50_p99(t.rg)[0] for t in timings)
    print(f"warm within {TARGET_RATIO:g}x rg on every search (worst {worst:.2f}x): "
          f"{verdict(worst <= TARGET_RATIO)}")  # fmt: skip


# ------------------------------------------------------------------ hooks for later measures


def grpc_chunk_read_rows(root: Path, runs: int) -> list[list[str]]:
    """Rows (name, p50 ms, p99 ms) of chunk reads through gRPC on a tree, for a table.

    A hook: the chunk-read RPC is not wired yet, so there is nothing to time. Fill it in by
    starting `ServerProcess(..., extra_args=["--workspace", str(root)])` from bench_common,
    reading a sample of the tree's files chunk by chunk with the client, cold then warm, and
    returning one row per mode; main() prints whatever rows it gets.
    """
    del root, runs
    return []


def main() -> None:
    args = parse_args()
    rg = ensure_ripgrep()
    version = run_rg(Path.cwd(), [rg, "--version"]).decode().splitlines()[0]
    tmp = Path(tempfile.mkdtemp(prefix="cwm-bench-workspace-"))
    try:
        generated = tmp / "generated"
        generate_tree(generated, args.files, args.lines, args.seed)
        real = copy_real_tree(args.real_package, tmp / args.real_package)
        count = sum(1 for p in real.rglob("*") if p.is_file())
        log(f"{version}; generated {args.files} files; {args.real_package}: {count} files")
        # The caches do not trust a file modified within RACY_NS of its read (a second write
        # in the same timestamp tick could hide): let the new trees age past it, so "warm"
        # means served from the cache.
        time.sleep(RACY_NS / 1e9)
        trees = (
            (f"generated: {args.files} files x {args.lines} lines, git", generated, False),
            (f"real: {args.real_package}, {count} files, plain directory", real, True),
        )
        for title, root, is_real in trees:
            log(f"tree {root.name}")
            timings = bench_tree(root, rg, is_real, args.runs)
            print_tree(f"{title}; first page, {args.runs} runs", timings)
            rows = grpc_chunk_read_rows(root, args.runs)
            if rows:
                headers = ["mode", "p50 ms", "p99 ms"]
                print_table(f"{title}: chunk reads through gRPC", headers, rows)
        print(f"\n{version}; Python {sys.version.split()[0]}; cold: a fresh cache's first call")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
