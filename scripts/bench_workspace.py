"""Workspace files benchmark: contextwm's scrollable search against ripgrep in the same run,
chunk reads per strategy, and the chunk cache, every call through gRPC to a real server.

Two trees:
1. generated: --files source files (default 1,000) of about --lines lines (300) in eight
   languages (Python, JavaScript, TypeScript, Go, Rust, Java, C, C++), code-like text with
   identifiers, comments and strings, seeded; a git repository, so the listing is git's;
2. real: a copy of an installed package's source tree (sympy by default: about 1,500 Python
   files), a plain directory, so the listing is a .gitignore-honouring walk.

Per tree, two `contextwm serve --workspace TREE` subprocesses: one with the default chunk
cache, one with none (cache_size_mb 0: every call reads every file). Measured:
- search: the same five searches (a rare identifier, a common word, a regex, a
  case-insensitive word, a word under an include glob), the first page (context 3, 20
  matching lines per file), through `Client.search_files`: warm (the cached server, after
  one call) and with no cache; and `rg -n -C3 --max-count 20 ...` as a subprocess with the
  same ignore rules, case mode, globs and size limit, its output read through a pipe, its
  process start included. Runs interleaved, so all see the same machine; p50 / p99 in ms and
  ours / rg. ripgrep runs on both cores with unsorted output; ours answers one call on one
  thread, sorted, scanning each file in full for exact totals;
- chunk reads of --sample files per strategy: cold (the server without a cache: read,
  parse, plan on every call) and warm (a random chunk of a file read before), record=False
  (the cost of recording an item is the ingest benchmark's);
- the cache's hit rate under a scroll-heavy pattern (open a file, page to its end, back
  two, jump to a line; then revisit half the files) on a fresh third server with a
  --bound-mb cache, and its memory at its bound once that server has read every file.

Run:  scripts/bench workspace            (full, a few minutes)
      scripts/bench workspace --quick    (smoke run)

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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench_common import ServerProcess, log, p50_p99, print_table, verdict
from contextwm.domain.workspace_files import CaseMode, FileSearchQuery
from contextwm.settings import ContextWindowSettings
from contextwm.workspace_files.chunk_cache import RACY_NS
from contextwm_client import ChunkCacheStats, ChunkStrategy, Client, FileChunk, FileSearchPage

# The goal: a warm search within this factor of ripgrep's time on the same search.
TARGET_RATIO = 2.0
CONVERSATION = "bench"
SCROLLED_FILES = 20
DEFAULT_CACHE_MB = ContextWindowSettings().cache_size_mb
MAX_FILE_BYTES = ContextWindowSettings().max_file_bytes
SOURCE_SUFFIXES = {".py", ".js", ".ts", ".go", ".rs", ".java", ".c", ".h", ".cc", ".cpp", ".hpp"}
RARE_IDENTIFIER = "frobnicate_quux_budget"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--files", type=int, default=1000, help="generated source files")
    p.add_argument("--lines", type=int, default=300, help="lines per generated file (about)")
    p.add_argument("--runs", type=int, default=20, help="timed runs per search and tool")
    p.add_argument("--real-package", default="sympy", help="installed package to copy and search")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--sample", type=int, default=100, help="files read in chunks per tree")
    p.add_argument("--bound-mb", type=float, default=2.0, help="the small cache's bound")
    p.add_argument("--quick", action="store_true", help="smoke run: 200 files, 3 runs")
    args = p.parse_args()
    if args.quick:
        args.files, args.runs, args.sample = 200, 3, 20
    return args


# ------------------------------------------------------------------ ripgrep


def ensure_ripgrep() -> str:
    """The path of `rg`, installed by scripts/install_ripgrep when missing."""
    if subprocess.run([str(Path(__file__).with_name("install_ripgrep"))], check=False).returncode:
        sys.exit("ripgrep is missing and could not be installed")
    found = shutil.which("rg")
    assert found is not None
    return found


def rg_args(rg: str, query: FileSearchQuery, count_only: bool = False) -> list[str]:
    """rg with the search's semantics: our listing's ignore rules (hidden files searched,
    .gitignore in and out of git, no global or .ignore files, .git skipped), the same case
    mode, globs, size limit, cap per file and context."""
    case = {CaseMode.SMART: "-S", CaseMode.SENSITIVE: "-s", CaseMode.INSENSITIVE: "-i"}
    args = [rg, "--no-config", "--hidden", "--no-require-git", "--no-ignore-global"]
    args += ["--no-ignore-dot", "-g", "!.git", case[query.case]]
    args += ["--max-filesize", str(MAX_FILE_BYTES)]
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
    warm: list[float] = dataclasses.field(default_factory=list)
    uncached: list[float] = dataclasses.field(default_factory=list)
    rg: list[float] = dataclasses.field(default_factory=list)


def search_call(client: Client, query: FileSearchQuery) -> tuple[float, FileSearchPage]:
    """One first-page search through the service, timed as its caller sees it."""
    t0 = time.perf_counter()
    page = client.search_files(
        CONVERSATION,
        query.pattern,
        regex=query.regex,
        case=query.case.value,
        include=query.include,
        exclude=query.exclude,
        max_matches_per_file=query.max_matches_per_file,
        context_lines=query.context_lines,
    )
    return (time.perf_counter() - t0) * 1000, page


def time_rg(root: Path, args: Sequence[str]) -> float:
    t0 = time.perf_counter()
    run_rg(root, args)
    return (time.perf_counter() - t0) * 1000


def bench_searches(
    cached: Client, uncached: Client, root: Path, rg: str, real: bool, runs: int
) -> list[Timings]:
    """Every search of a tree, runs interleaved so that all see the same machine."""
    out: list[Timings] = []
    for name, query in searches(real):
        t = Timings(name)
        args = rg_args(rg, query)
        _, page = search_call(cached, query)  # fills the cache; the next calls are warm
        t.matches, t.files = page.total_matches, page.total_files
        t.rg_matches, t.rg_files = rg_totals(root, rg, query)
        for _ in range(runs):
            t.warm.append(search_call(cached, query)[0])
            t.uncached.append(search_call(uncached, query)[0])
            t.rg.append(time_rg(root, args))
        out.append(t)
        log(f"  {name}: {t.matches} matches in {t.files} files")
    return out


def print_searches(title: str, timings: Sequence[Timings]) -> None:
    rows = []
    for t in timings:
        warm, uncached, rg = p50_p99(t.warm), p50_p99(t.uncached), p50_p99(t.rg)
        same = "yes" if (t.matches, t.files) == (t.rg_matches, t.rg_files) else "NO"
        rows.append(
            [
                t.name,
                f"{t.matches}/{t.files}",
                same,
                f"{warm[0]:.1f}",
                f"{warm[1]:.1f}",
                f"{uncached[0]:.1f}",
                f"{uncached[1]:.1f}",
                f"{rg[0]:.1f}",
                f"{rg[1]:.1f}",
                f"{warm[0] / rg[0]:.2f}",
                f"{uncached[0] / rg[0]:.2f}",
            ]
        )
    headers = ["search", "matches/files", "= rg", "warm p50", "warm p99"]
    headers += ["no cache p50", "no cache p99", "rg p50", "rg p99", "warm/rg", "no cache/rg"]
    print_table(title, headers, rows)
    worst = max(p50_p99(t.warm)[0] / p50_p99(t.rg)[0] for t in timings)
    print(f"warm within {TARGET_RATIO:g}x rg on every search (worst {worst:.2f}x): "
          f"{verdict(worst <= TARGET_RATIO)}")  # fmt: skip


# ------------------------------------------------------------------ chunk reads and the cache


def sample_files(root: Path, count: int, seed: int) -> list[str]:
    """Workspace-relative paths of up to count source files, seeded."""
    names = sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.suffix in SOURCE_SUFFIXES and ".git" not in p.parts
    )
    return random.Random(seed).sample(names, min(count, len(names)))


def read_call(
    client: Client, path: str, strategy: ChunkStrategy, index: int
) -> tuple[float, FileChunk]:
    t0 = time.perf_counter()
    chunk = client.read_file_chunk(
        CONVERSATION,
        path,
        strategy=strategy,
        chunk_index=index,
        record=False,
    )
    return (time.perf_counter() - t0) * 1000, chunk


def chunk_read_rows(cached: Client, uncached: Client, files: Sequence[str]) -> list[list[str]]:
    """Per strategy: reads of the first chunk without a cache (cold: read, parse, plan every
    time) and with it, of a random chunk of a file read before (warm)."""
    rows = []
    rng = random.Random(11)
    strategies: tuple[ChunkStrategy, ...] = ("lines", "functions", "semantic")
    for strategy in strategies:
        cold: list[float] = []
        warm: list[float] = []
        chunks: dict[str, int] = {}
        for path in files:
            cold.append(read_call(uncached, path, strategy, 0)[0])
            chunks[path] = read_call(cached, path, strategy, 0)[1].total_chunks
        for path in files:
            warm.append(read_call(cached, path, strategy, rng.randrange(chunks[path]))[0])
        (c50, c99), (w50, w99) = p50_p99(cold), p50_p99(warm)
        rows.append([strategy, f"{c50:.2f}", f"{c99:.2f}", f"{w50:.2f}", f"{w99:.2f}"])
    return rows


def scroll_hit_rate(client: Client, files: Sequence[str]) -> tuple[float, int]:
    """An agent's scroll-heavy pattern: open a file, page down to its end, back up two,
    jump to a line, reopen it; then return to the first files. Returns (the cache's hit rate
    over the pattern, reads made)."""
    before = client.get_stats().chunk_cache
    reads = 0

    def read(path: str) -> None:
        nonlocal reads
        chunk = client.read_file_chunk(
            CONVERSATION, path, strategy="lines", max_lines=40, record=False
        )
        reads += 1
        for _ in range(chunk.total_chunks - 1):
            client.scroll_file(CONVERSATION, "next", record=False)
            reads += 1
        for _ in range(min(2, chunk.total_chunks - 1)):
            client.scroll_file(CONVERSATION, "previous", record=False)
            reads += 1
        client.scroll_file(CONVERSATION, line=max(1, chunk.total_lines // 2), record=False)
        reads += 1

    for path in [*files, *files[: len(files) // 2]]:
        read(path)
    after = client.get_stats().chunk_cache
    hits, misses = after.hits - before.hits, after.misses - before.misses
    return hits / max(1, hits + misses), reads


def cache_at_bound(client: Client, files: Sequence[str]) -> ChunkCacheStats:
    """Reads every file once, through a cache far smaller than the tree."""
    for path in files:
        client.read_file_chunk(CONVERSATION, path, strategy="semantic", record=False)
    return client.get_stats().chunk_cache


# ------------------------------------------------------------------ the service


@contextmanager
def service(root: Path, data: Path, cache_mb: float) -> Iterator[Client]:
    """A `contextwm serve` subprocess on the tree, its cache bounded at cache_mb."""
    env = {"CONTEXTWM_CONTEXT_WINDOW__CACHE_SIZE_MB": str(cache_mb)}
    with (
        ServerProcess(data, extra_args=["--workspace", str(root)], env=env) as server,
        Client(server.target, timeout=120.0) as client,
    ):
        client.create_conversation(CONVERSATION)
        yield client


def bench_tree(
    title: str, root: Path, tmp: Path, rg: str, real: bool, args: argparse.Namespace
) -> None:
    log(f"tree {root.name}")
    picked = sample_files(root, args.sample + SCROLLED_FILES, args.seed)
    files, scrolled = picked[: args.sample], picked[args.sample :]
    with (
        service(root, tmp / f"{root.name}-cached", DEFAULT_CACHE_MB) as cached,
        service(root, tmp / f"{root.name}-uncached", 0) as uncached,
    ):
        timings = bench_searches(cached, uncached, root, rg, real, args.runs)
        print_searches(f"{title}: search, first page, {args.runs} runs (ms)", timings)
        headers = ["strategy", "cold p50", "cold p99", "warm p50", "warm p99"]
        rows = chunk_read_rows(cached, uncached, files)
        print_table(f"{title}: chunk reads of {len(files)} files (ms)", headers, rows)
        worst = max(float(r[1]) for r in rows)
        print(f"chunk read p50 under 50 ms, cold, every strategy (worst {worst:.2f} ms): "
              f"{verdict(worst < 50)}")  # fmt: skip
    with service(root, tmp / f"{root.name}-small", args.bound_mb) as small:
        # A fresh server: the pattern's first read of each file is a miss.
        rate, reads = scroll_hit_rate(small, scrolled)
        print(f"scroll-heavy pattern on a fresh server: {reads} reads of {len(scrolled)} files,"
              f" cache hit rate {rate:.1%}: {verdict(rate > 0.8)}")  # fmt: skip
        every = sample_files(root, 10**9, args.seed)
        stats = cache_at_bound(small, every)
        print(
            f"cache at its bound after reading all {len(every)} files: {stats.bytes / 2**20:.2f}"
            f" MiB of {stats.max_bytes / 2**20:.2f} MiB, {stats.entries} files held,"
            f" {stats.evictions} evicted: {verdict(0 < stats.bytes <= stats.max_bytes)}"
        )


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
        # The cache does not trust a file modified within RACY_NS of its read (a second write
        # in the same timestamp tick could hide): let the new trees age past it, so "warm"
        # means served from the cache.
        time.sleep(RACY_NS / 1e9)
        bench_tree(
            f"generated: {args.files} files x {args.lines} lines, git",
            generated,
            tmp,
            rg,
            False,
            args,
        )
        bench_tree(f"real: {args.real_package}, {count} files", real, tmp, rg, True, args)
        print(f"\n{version}; Python {sys.version.split()[0]}; each call through gRPC")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
