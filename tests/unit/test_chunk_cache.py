"""Tests for contextwm.workspace_files.chunk_cache on real files in a temporary workspace."""

from __future__ import annotations

import gc
import os
import random
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from code_samples import SAMPLES
from contextwm.adapters.code_definitions import TreeSitterDefinitions
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.adapters.workspace import Workspace
from contextwm.domain.errors import InvalidArgument, NotFound, ResourceExhausted
from contextwm.domain.workspace_files import ChunkSpec, ChunkStrategy
from contextwm.workspace_files.chunk_cache import RACY_NS, ChunkCache
from contextwm.workspace_files.chunking import chunk_at, chunk_of_line, plan_chunks

COUNTER = token_counter("cl100k_base")
PARSER = TreeSitterDefinitions()
LIMIT = 1_000_000  # the largest file a read accepts
SPEC = ChunkSpec(ChunkStrategy.SEMANTIC, max_lines=20)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    (tmp_path / "ws").mkdir()
    return Workspace(tmp_path / "ws")


def write(ws: Workspace, name: str, text: str, *, age: float = 10.0) -> None:
    """Writes a file modified `age` seconds ago: older than RACY_NS unless told otherwise."""
    path = ws.root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    stamp = time.time_ns() - int(age * 1e9)
    os.utime(path, ns=(stamp, stamp))


def frozen_stat() -> Callable[[str], os.stat_result]:
    """A stat that gives each path's first result forever: a filesystem whose timestamps did
    not move on a rewrite (one inside its granularity)."""
    seen: dict[str, os.stat_result] = {}

    def stat(path: str) -> os.stat_result:
        return seen.setdefault(path, os.stat(path))

    return stat


def test_hits_and_misses(workspace: Workspace) -> None:
    write(workspace, "a.py", SAMPLES["circle.py"])
    cache = ChunkCache(1_000_000, PARSER)
    first = cache.file(workspace, "a.py", LIMIT)
    assert cache.file(workspace, "a.py", LIMIT) is first
    assert cache.file(workspace, str(workspace.root / "a.py"), LIMIT) is first  # same file
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.entries) == (2, 1, 1)
    assert first.text == SAMPLES["circle.py"]


def test_plans_are_kept_per_spec_while_the_content_is_the_same(workspace: Workspace) -> None:
    write(workspace, "a.py", SAMPLES["circle.py"])
    cache = ChunkCache(1_000_000, PARSER)
    file = cache.file(workspace, "a.py", LIMIT)
    plan = cache.plan(file, workspace.root, SPEC, COUNTER)
    assert plan == plan_chunks(file, SPEC, COUNTER, PARSER)
    assert cache.plan(file, workspace.root, SPEC, COUNTER) is plan
    # Without max_tokens the encoding does not change the plan, so it is not asked again.
    assert (
        cache.plan(file, workspace.root, ChunkSpec(SPEC.strategy, 20, None, "x"), COUNTER) is plan
    )
    tokens = ChunkSpec(ChunkStrategy.SEMANTIC, max_tokens=100)
    assert cache.plan(file, workspace.root, tokens, COUNTER) is not plan
    stats = cache.stats()
    assert (stats.plan_hits, stats.plan_misses) == (2, 2)
    # The same content read again (a `touch`) keeps the plans.
    stamp = time.time_ns() - 5 * RACY_NS
    os.utime(workspace.root / "a.py", ns=(stamp, stamp))
    again = cache.file(workspace, "a.py", LIMIT)
    assert cache.plan(again, workspace.root, SPEC, COUNTER) is plan
    assert cache.stats().misses == 2


def test_a_changed_file_is_read_again(workspace: Workspace) -> None:
    write(workspace, "a.py", "x = 1\n")
    cache = ChunkCache(1_000_000, PARSER)
    old = cache.file(workspace, "a.py", LIMIT)
    old_plan = cache.plan(old, workspace.root, SPEC, COUNTER)
    write(workspace, "a.py", "x = 1\ny = 2\n")
    new = cache.file(workspace, "a.py", LIMIT)
    assert new.text == "x = 1\ny = 2\n"
    new_plan = cache.plan(new, workspace.root, SPEC, COUNTER)
    assert new_plan.ranges[-1].last_line == 2 and old_plan.ranges[-1].last_line == 1
    # A plan asked for with a file read before the change is made, not taken from the cache.
    assert cache.plan(old, workspace.root, SPEC, COUNTER) == old_plan
    assert cache.stats().misses == 2


def test_a_same_size_rewrite_with_the_old_mtime_is_seen(workspace: Workspace) -> None:
    write(workspace, "a.py", "x = 1\n")
    cache = ChunkCache(1_000_000, PARSER)
    assert cache.file(workspace, "a.py", LIMIT).text == "x = 1\n"
    path = workspace.root / "a.py"
    before = os.stat(path)
    path.write_text("x = 2\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the mtime set back
    after = os.stat(path)
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)
    # The inode change time cannot be set back: it tells the rewrite.
    assert cache.file(workspace, "a.py", LIMIT).text == "x = 2\n"


def test_racily_clean_files_are_compared_by_content(workspace: Workspace) -> None:
    # With the stat frozen, a rewrite shows nowhere but in the content. A file modified just
    # before it was read is read again, and its hash compared, on every read...
    write(workspace, "fresh.py", "x = 1\n", age=0)
    cache = ChunkCache(1_000_000, PARSER, stat=frozen_stat())
    assert cache.file(workspace, "fresh.py", LIMIT).text == "x = 1\n"
    (workspace.root / "fresh.py").write_text("x = 2\n")
    assert cache.file(workspace, "fresh.py", LIMIT).text == "x = 2\n"
    assert (cache.stats().hits, cache.stats().misses) == (0, 2)
    # ...while one older than the window is trusted on its stamp alone: a write then moves
    # the mtime past what was recorded, on every filesystem.
    write(workspace, "old.py", "y = 1\n", age=10)
    assert cache.file(workspace, "old.py", LIMIT).text == "y = 1\n"
    (workspace.root / "old.py").write_text("y = 2\n")
    assert cache.file(workspace, "old.py", LIMIT).text == "y = 1\n"
    assert cache.stats().hits == 1


def test_a_racy_entry_is_trusted_once_confirmed_after_the_window(workspace: Workspace) -> None:
    write(workspace, "a.py", "x = 1\n", age=0)
    mtime = os.stat(workspace.root / "a.py").st_mtime_ns
    now = [mtime + RACY_NS // 4]
    cache = ChunkCache(1_000_000, PARSER, clock=lambda: now[0])
    file = cache.file(workspace, "a.py", LIMIT)
    plan = cache.plan(file, workspace.root, SPEC, COUNTER)
    assert cache.file(workspace, "a.py", LIMIT) is file  # read again: same content
    now[0] = mtime + 2 * RACY_NS
    assert cache.file(workspace, "a.py", LIMIT) is file  # read again, now out of the window
    assert cache.file(workspace, "a.py", LIMIT) is file  # trusted
    stats = cache.stats()
    assert (stats.hits, stats.misses) == (1, 3)
    assert cache.plan(file, workspace.root, SPEC, COUNTER) is plan  # kept throughout


def test_invalidate_forgets_a_file(workspace: Workspace) -> None:
    write(workspace, "src/a.py", "x = 1\n")
    cache = ChunkCache(1_000_000, PARSER)
    file = cache.file(workspace, "src/a.py", LIMIT)
    assert file.path == "src/a.py"
    cache.invalidate(workspace.root, "src/a.py")
    assert cache.stats().entries == 0 and cache.stats().bytes == 0
    cache.file(workspace, "src/a.py", LIMIT)
    assert cache.stats().misses == 2


def test_a_failed_read_drops_the_entry(workspace: Workspace) -> None:
    write(workspace, "a.py", "x = 1\n" * 10)
    cache = ChunkCache(1_000_000, PARSER)
    cache.file(workspace, "a.py", LIMIT)
    with pytest.raises(ResourceExhausted):  # over this read's limit, though cached
        cache.file(workspace, "a.py", 20)
    assert cache.stats().entries == 0
    cache.file(workspace, "a.py", LIMIT)
    (workspace.root / "a.py").unlink()
    with pytest.raises(NotFound):
        cache.file(workspace, "a.py", LIMIT)
    assert (cache.stats().entries, cache.stats().bytes) == (0, 0)


def test_an_entry_larger_than_the_cache_is_never_kept(workspace: Workspace) -> None:
    write(workspace, "big.py", "x = 1\n" * 2000)
    cache = ChunkCache(5_000, PARSER)
    assert cache.file(workspace, "big.py", LIMIT).total_lines == 2000
    cache.file(workspace, "big.py", LIMIT)
    stats = cache.stats()
    assert (stats.entries, stats.bytes, stats.hits, stats.misses) == (0, 0, 0, 2)
    with pytest.raises(InvalidArgument):
        ChunkCache(-1, PARSER)


def test_the_byte_bound_holds_and_the_least_recent_go(workspace: Workspace) -> None:
    names = [f"m{i:03}.py" for i in range(120)]
    for name in names:
        write(workspace, name, SAMPLES["circle.py"] + f"# {name}\n")
    cache = ChunkCache(60_000, PARSER)
    for name in names:
        file = cache.file(workspace, name, LIMIT)
        cache.plan(file, workspace.root, SPEC, COUNTER)
        assert cache.stats().bytes <= 60_000
    stats = cache.stats()
    assert 0 < stats.entries < len(names)
    assert stats.evictions == len(names) - stats.entries
    assert stats.bytes > 60_000 * 0.8  # full, not emptied
    cache.file(workspace, names[-1], LIMIT)
    assert cache.stats().hits == 1  # the most recent stayed
    cache.file(workspace, names[0], LIMIT)
    assert cache.stats().misses == len(names) + 1  # the first went


def test_a_scan_keeps_files_only_in_free_room(workspace: Workspace) -> None:
    names = [f"s{i:03}.py" for i in range(60)]
    for name in names:
        write(workspace, name, SAMPLES["circle.py"] + f"# {name}\n")
    cache = ChunkCache(30_000, PARSER)
    for name in names:  # a search: each file once, none pushing another out
        cache.file(workspace, name, LIMIT, evict=False)
    held = cache.stats()
    assert held.evictions == 0 and 0 < held.entries < len(names)
    assert held.bytes <= 30_000
    first = names[0]
    cache.file(workspace, first, LIMIT, evict=False)  # the first files stay, found again
    assert cache.stats().hits == 1
    cache.file(workspace, names[-1], LIMIT)  # a chunk read may push out older ones
    assert cache.stats().evictions >= 1


def test_the_byte_estimate_matches_the_memory_held(workspace: Workspace) -> None:
    names = [f"m{i}.py" for i in range(40)]
    for i, name in enumerate(names):
        write(workspace, name, SAMPLES["shapes.cpp"] * (1 + i % 7) + "é\n" * i)
    cache = ChunkCache(10**9, PARSER)
    spec = ChunkSpec(ChunkStrategy.LINES, max_lines=3)  # many ranges, and no parsing
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for name in names:
            cache.plan(cache.file(workspace, name, LIMIT), workspace.root, spec, COUNTER)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    estimate = cache.stats().bytes
    assert held * 0.9 <= estimate <= held * 1.3, (estimate, held)


def test_threads_share_the_cache_safely(workspace: Workspace) -> None:
    names = [f"m{i}.py" for i in range(12)]
    for name in names:
        write(workspace, name, SAMPLES["circle.py"])
    cache = ChunkCache(40_000, PARSER)
    errors: list[BaseException] = []
    calls = 0
    lock = threading.Lock()

    def work(seed: int) -> None:
        nonlocal calls
        rng = random.Random(seed)
        try:
            for _ in range(150):
                name = rng.choice(names)
                if rng.random() < 0.05:
                    cache.invalidate(workspace.root, name)
                    continue
                file = cache.file(workspace, name, LIMIT)
                plan = cache.plan(file, workspace.root, SPEC, COUNTER)
                assert file.text == SAMPLES["circle.py"] and plan.ranges[-1].last_line == 32
                with lock:
                    calls += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    stats = cache.stats()
    assert stats.hits + stats.misses == calls == stats.plan_hits + stats.plan_misses
    assert stats.bytes <= 40_000 and stats.hits > 0


def test_scrolling_a_file_is_served_from_the_cache(workspace: Workspace) -> None:
    write(workspace, "long.py", SAMPLES["circle.py"] * 10)
    cache = ChunkCache(1_000_000, PARSER)
    reads = 0
    # Down through the file chunk by chunk, back up a few, jump to a line: each read stats
    # the file, reuses its text and plan, and cuts out one chunk.
    file = cache.file(workspace, "long.py", LIMIT)
    total = len(cache.plan(file, workspace.root, SPEC, COUNTER).ranges)
    for index in [*range(total), *range(total - 1, total - 4, -1), 0]:
        file = cache.file(workspace, "long.py", LIMIT)
        plan = cache.plan(file, workspace.root, SPEC, COUNTER)
        chunk = chunk_at(file, plan, index, COUNTER, requested=SPEC.strategy)
        assert chunk_of_line(plan, chunk.first_line) == index
        reads += 1
    stats = cache.stats()
    assert stats.hits / (stats.hits + stats.misses) > 0.8
    assert stats.plan_hits / (stats.plan_hits + stats.plan_misses) > 0.8
    assert stats.misses == stats.plan_misses == 1 and reads == total + 4
