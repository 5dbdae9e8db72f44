"""Tests for contextwm.workspace_files.chunking: chunk plans of real code, sized in lines and
in real cl100k tokens, and finding the chunk of a line or a text."""

from __future__ import annotations

import dataclasses
import re
import time

import pytest
from code_samples import SAMPLES
from contextwm.adapters.code_definitions import TreeSitterDefinitions
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.domain.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
)
from contextwm.domain.workspace_files import (
    ChunkPlan,
    ChunkSpec,
    ChunkStrategy,
    CodeDefinition,
    FileDefinitions,
    FileText,
    LineRange,
)
from contextwm.workspace_files.chunking import chunk_at, chunk_of_line, chunk_of_text, plan_chunks
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

COUNTER = token_counter("cl100k_base")
PARSER = TreeSitterDefinitions()
LINES, FUNCTIONS, SEMANTIC = ChunkStrategy.LINES, ChunkStrategy.FUNCTIONS, ChunkStrategy.SEMANTIC


def text_file(path: str, text: str) -> FileText:
    return FileText(path, text, "0" * 64, len(text.encode()))


def plan(path: str, text: str, spec: ChunkSpec) -> ChunkPlan:
    return plan_chunks(text_file(path, text), spec, COUNTER, PARSER)


def spans(p: ChunkPlan) -> list[tuple[int, int] | tuple[int, int, str]]:
    """Ranges as (first, last), with a third "split" for a cut definition."""
    return [
        (r.first_line, r.last_line, "split") if r.split else (r.first_line, r.last_line)
        for r in p.ranges
    ]


# Per language: the limit in lines, then the FUNCTIONS and SEMANTIC plans. Each sample has a
# definition longer than the limit (line numbers as in test_code_definitions).
PLANS: dict[str, tuple[int, list[object], list[object]]] = {
    "circle.py": (
        5,
        # Circle (5-20) is cut: its head by lines (5-9, 10-11), the method area with that
        # tail, then scaled (15-20), too long too, at its inner function grow (17-18).
        [(1, 4), (5, 9, "split"), (10, 14, "split"), (15, 18, "split"), (19, 22, "split"),
         (23, 26), (27, 29, "split"), (30, 32, "split")],
        [(1, 4), (5, 9, "split"), (10, 14, "split"), (15, 18, "split"), (19, 20, "split"),
         (21, 24), (25, 29, "split"), (30, 32, "split")],
    ),
    "circle.js": (
        8,
        # Circle (4-18) at its methods: constructor with the head, area, scaled with `}`.
        [(1, 3), (4, 8, "split"), (9, 12, "split"), (13, 19, "split"), (20, 26), (27, 28)],
        [(1, 3), (4, 8, "split"), (9, 12, "split"), (13, 18, "split"), (19, 25), (26, 28)],
    ),
    "shapes.ts": (
        8,
        # Semantic puts the interface and the enum (3-10) in one chunk.
        [(1, 2), (3, 6), (7, 11), (12, 19, "split"), (20, 26, "split"), (27, 31)],
        [(1, 2), (3, 10), (11, 15, "split"), (16, 19, "split"), (20, 25, "split"), (26, 31)],
    ),
    "Counter.tsx": (
        8,
        # Counter (5-19): its head with the increment arrow function and reset, then the JSX.
        [(1, 2), (3, 4), (5, 12, "split"), (13, 20, "split"), (21, 21)],
        [(1, 2), (3, 4), (5, 12, "split"), (13, 19, "split"), (20, 21)],
    ),
    "tree.go": (
        8,
        # Insert (10-19): up to the end of its closure `less`, then the rest.
        [(1, 4), (5, 9), (10, 14, "split"), (15, 20, "split"), (21, 22), (23, 29)],
        [(1, 4), (5, 9), (10, 14, "split"), (15, 19, "split"), (20, 21), (22, 29)],
    ),
    "stack.rs": (
        8,
        # impl Stack (10-20) at its methods; mod tests (28-36) leaves its `}` alone.
        [(1, 3), (4, 9), (10, 14, "split"), (15, 21, "split"), (22, 27), (28, 35, "split"),
         (36, 36, "split")],
        [(1, 3), (4, 9), (10, 14, "split"), (15, 20, "split"), (21, 27), (28, 35, "split"),
         (36, 36, "split")],
    ),
    "Shapes.java": (
        8,
        # Circle (5-29): head and constructor, area, total with its lambda, class Unit.
        [(1, 4), (5, 12, "split"), (13, 17, "split"), (18, 24, "split"), (25, 30, "split"),
         (31, 33)],
        [(1, 4), (5, 12, "split"), (13, 17, "split"), (18, 24, "split"), (25, 29, "split"),
         (30, 33)],
    ),
    "stack.c": (
        5,
        # sum (17-23) has nothing nested: cut by lines.
        [(1, 2), (3, 7), (8, 10), (11, 15), (16, 20, "split"), (21, 23, "split")],
        [(1, 2), (3, 7), (8, 10), (11, 15), (16, 20, "split"), (21, 23, "split")],
    ),
    "shapes.cpp": (
        8,
        # namespace shapes (3-28) at class Circle, itself cut at its member functions.
        [(1, 2), (3, 10, "split"), (11, 15, "split"), (16, 19, "split"), (20, 26, "split"),
         (27, 29, "split"), (30, 33)],
        [(1, 2), (3, 10, "split"), (11, 15, "split"), (16, 19, "split"), (20, 26, "split"),
         (27, 28, "split"), (29, 33)],
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PLANS))
def test_plans_of_each_language(name: str) -> None:
    limit, functions, semantic = PLANS[name]
    for strategy, expected in ((FUNCTIONS, functions), (SEMANTIC, semantic)):
        p = plan(name, SAMPLES[name], ChunkSpec(strategy, max_lines=limit))
        assert (p.strategy, p.fallback) == (strategy, "")
        assert spans(p) == expected, strategy


@pytest.mark.parametrize("name", sorted(PLANS))
def test_a_generous_limit_keeps_every_definition_whole(name: str) -> None:
    text = SAMPLES[name]
    definitions = PARSER.definitions(name, text).definitions
    p = plan(name, text, ChunkSpec(FUNCTIONS, max_lines=40))
    assert not any(r.split for r in p.ranges)
    for d in definitions:  # each its own chunk, with at most blank lines added
        (holding,) = [r for r in p.ranges if r.first_line <= d.first_line <= r.last_line]
        assert holding.first_line <= d.first_line and d.last_line <= holding.last_line
        others = [o for o in definitions if o is not d]
        assert not any(holding.first_line <= o.first_line <= holding.last_line for o in others)
    # Semantic groups them: the whole file fits, so the header plus one chunk.
    first = definitions[0].first_line
    assert spans(plan(name, text, ChunkSpec(SEMANTIC, max_lines=40))) == [
        (1, first - 1),
        (first, text.count("\n")),
    ]


def test_lines_are_fixed_windows() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 24))
    p = plan("notes.txt", text, ChunkSpec(LINES, max_lines=10))
    assert spans(p) == [(1, 10), (11, 20), (21, 23)]
    assert (p.strategy, p.fallback) == (LINES, "")
    assert spans(plan("notes.txt", "one line, no newline", ChunkSpec(LINES, max_lines=10))) == [
        (1, 1)
    ]


def test_blank_lines_join_a_neighbour_in_functions() -> None:
    text = "def a():\n    pass\n\n\ndef b():\n    pass\n\n\nx = 1\n"
    p = plan("m.py", text, ChunkSpec(FUNCTIONS, max_lines=4))
    # The blank lines after a fit its chunk; code between definitions is a chunk of its own.
    assert spans(p) == [(1, 4), (5, 8), (9, 9)]


def test_files_without_a_parser_fall_back_to_lines() -> None:
    text = "# Title\n\ndef main(): ...\n" * 4
    for strategy in (FUNCTIONS, SEMANTIC):
        p = plan("README.md", text, ChunkSpec(strategy, max_lines=5))
        assert p.strategy is LINES
        assert p.fallback == "no parser for .md files; cut by lines"
        assert spans(p) == [(1, 5), (6, 10), (11, 12)]


def test_a_file_the_parser_cannot_read_falls_back_to_lines() -> None:
    text = "".join(f"}} ) {i} ]] ((( def\n" for i in range(12))
    p = plan("broken.py", text, ChunkSpec(SEMANTIC, max_lines=5))
    assert p.strategy is LINES
    assert p.fallback == (
        "the python parser could not make sense of broken.py: over half of its lines are"
        " syntax errors; cut by lines"
    )
    assert spans(p) == [(1, 5), (6, 10), (11, 12)]


def test_code_without_definitions_is_cut_by_lines() -> None:
    text = "import os\n" * 7
    for strategy in (FUNCTIONS, SEMANTIC):
        p = plan("script.py", text, ChunkSpec(strategy, max_lines=3))
        assert (p.strategy, p.fallback, spans(p)) == (strategy, "", [(1, 3), (4, 6), (7, 7)])


@pytest.mark.parametrize("strategy", list(ChunkStrategy))
@pytest.mark.parametrize("max_tokens", [22, 40, 90, 250])  # 22: the longest line
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_token_limits_hold_on_the_exact_text(
    name: str, max_tokens: int, strategy: ChunkStrategy
) -> None:
    file = text_file(name, SAMPLES[name])
    p = plan_chunks(file, ChunkSpec(strategy, max_tokens=max_tokens), COUNTER, PARSER)
    assert_tiles(file, p)
    for r in p.ranges:
        assert COUNTER.count(file.lines(r.first_line, r.last_line)) <= max_tokens
    if strategy is LINES:  # greedy: no chunk could have taken the next line too
        for r in p.ranges[:-1]:
            assert COUNTER.count(file.lines(r.first_line, r.last_line + 1)) > max_tokens


def test_max_tokens_replaces_max_lines() -> None:
    text = "x = 1\n" * 50
    p = plan("m.py", text, ChunkSpec(LINES, max_lines=1, max_tokens=1000))
    assert spans(p) == [(1, 50)]


def test_the_estimate_is_beaten_by_exact_counts_near_the_limit() -> None:
    # Per line, each blank line is a token; together cl100k counts a run of them as one or
    # two. Chunks are filled by the exact count, not by the sum of the lines' counts.
    text = "def f():\n" + "\n" * 20 + "    return 1\n"
    file = text_file("m.py", text)
    per_line = sum(COUNTER.count(file.lines(n, n)) for n in range(1, 23))
    exact = COUNTER.count(text)
    assert exact < per_line <= 30
    assert spans(plan_chunks(file, ChunkSpec(LINES, max_tokens=exact), COUNTER, PARSER)) == [
        (1, 22)
    ]


class MergingCounter:
    """The real counter, plus a token per newline that follows another line: an encoding
    whose count of joined lines is above the sum of the lines' own counts. cl100k never
    counts so, but the plan must not trust the per-line estimate even then."""

    encoding = "cl100k_base"

    def count(self, text: str) -> int:
        return COUNTER.count(text) + max(0, text.count("\n") - 1)


def test_chunks_over_the_limit_by_exact_count_are_cut_to_fit() -> None:
    name = "circle.py"
    file = text_file(name, SAMPLES[name])
    counter = MergingCounter()
    for strategy in ChunkStrategy:
        p = plan_chunks(file, ChunkSpec(strategy, max_tokens=60), counter, PARSER)
        assert_tiles(file, p)
        assert all(counter.count(file.lines(r.first_line, r.last_line)) <= 60 for r in p.ranges)
        assert_split_marks_cut_definitions(file, p)


def test_a_line_over_max_tokens_cannot_be_chunked() -> None:
    text = "x = 1\n" + "y = '" + "word " * 200 + "'\n"
    tokens = COUNTER.count(text_file("m.py", text).lines(2, 2))
    for strategy in ChunkStrategy:
        with pytest.raises(ResourceExhausted) as caught:
            plan("m.py", text, ChunkSpec(strategy, max_tokens=50))
        message = caught.value.message
        assert f"line 2 of m.py has {tokens} tokens, over max_tokens 50" in message
        assert f"max_tokens of at least {tokens}" in message and "`lines` strategy" in message


def test_invalid_specs() -> None:
    file = text_file("m.py", "x = 1\n")
    bad = {
        ChunkSpec(max_lines=0): "max_lines must be at least 1, got 0",
        ChunkSpec(max_tokens=0): "max_tokens must be at least 1, got 0",
        ChunkSpec(max_tokens=-5): "max_tokens must be at least 1, got -5",
        ChunkSpec(max_tokens=10, encoding="o200k_base"): (
            "max_tokens is counted in 'o200k_base', but the counter counts 'cl100k_base'"
        ),
    }
    for spec, message in bad.items():
        with pytest.raises(InvalidArgument, match=re.escape(message)):
            plan_chunks(file, spec, COUNTER, PARSER)


def test_an_empty_file_is_one_empty_chunk() -> None:
    file = text_file("empty.py", "")
    for strategy in ChunkStrategy:
        p = plan_chunks(file, ChunkSpec(strategy, max_tokens=5), COUNTER, PARSER)
        assert p == ChunkPlan(strategy, (LineRange(1, 0),))
        chunk = chunk_at(file, p, 0, COUNTER, requested=strategy)
        assert (chunk.first_line, chunk.last_line, chunk.content) == (1, 0, "")
        assert (chunk.total_lines, chunk.total_chunks, chunk.token_count) == (0, 1, 0)
        assert not chunk.has_more and not chunk.has_previous
        with pytest.raises(InvalidArgument, match="line 1 is not in the file: it has 0 lines"):
            chunk_of_line(p, 1)
        with pytest.raises(NotFound):
            chunk_of_text(file, p, "x")


def test_chunk_at() -> None:
    name = "circle.py"
    file = text_file(name, SAMPLES[name])
    p = plan_chunks(file, ChunkSpec(FUNCTIONS, max_lines=5), COUNTER, PARSER)
    chunk = chunk_at(file, p, 2, COUNTER, requested=FUNCTIONS)
    assert (chunk.index, chunk.first_line, chunk.last_line) == (2, 10, 14)
    assert chunk.content == file.lines(10, 14)
    assert chunk.content.startswith("    radius: float\n") and chunk.content.endswith("\n\n")
    assert chunk.token_count == COUNTER.count(chunk.content)
    assert (chunk.total_lines, chunk.total_chunks) == (32, 8)
    assert (chunk.strategy, chunk.fallback, chunk.split) == (FUNCTIONS, "", True)
    assert (chunk.path, chunk.sha256, chunk.replaced) == (name, file.sha256, False)
    assert chunk.has_more and chunk.has_previous
    assert "".join(
        chunk_at(file, p, i, COUNTER, requested=FUNCTIONS).content for i in range(8)
    ) == (file.text)
    for index in (8, -1):
        with pytest.raises(InvalidArgument, match="it has 8 chunks, numbered 0 to 7"):
            chunk_at(file, p, index, COUNTER, requested=FUNCTIONS)


def test_chunk_at_says_why_the_strategy_differs() -> None:
    file = text_file("notes.md", "a\nb\n")
    p = plan_chunks(file, ChunkSpec(SEMANTIC), COUNTER, PARSER)
    chunk = chunk_at(file, p, 0, COUNTER, requested=SEMANTIC)
    assert (chunk.strategy, chunk.fallback) == (LINES, "no parser for .md files; cut by lines")
    p = plan_chunks(file, ChunkSpec(LINES), COUNTER, PARSER)
    assert chunk_at(file, p, 0, COUNTER, requested=LINES).fallback == ""
    assert chunk_at(file, p, 0, COUNTER, requested=FUNCTIONS).fallback == (
        "cut by lines, not functions"
    )


def test_chunk_at_refuses_a_plan_of_another_version() -> None:
    old = text_file("m.py", "a = 1\nb = 2\n")
    p = plan_chunks(old, ChunkSpec(LINES), COUNTER, PARSER)
    with pytest.raises(FailedPrecondition, match="another version"):
        chunk_at(text_file("m.py", "a = 1\n"), p, 0, COUNTER, requested=LINES)


def test_chunk_of_line() -> None:
    p = plan("circle.py", SAMPLES["circle.py"], ChunkSpec(FUNCTIONS, max_lines=5))
    for index, r in enumerate(p.ranges):
        assert chunk_of_line(p, r.first_line) == chunk_of_line(p, r.last_line) == index
    for line in (0, 33, -2):
        with pytest.raises(InvalidArgument, match=f"line {line} is not in the file: it has 32"):
            chunk_of_line(p, line)


def test_chunk_of_text() -> None:
    file = text_file("circle.py", SAMPLES["circle.py"])
    p = plan_chunks(file, ChunkSpec(FUNCTIONS, max_lines=5), COUNTER, PARSER)
    assert chunk_of_text(file, p, "def report") == chunk_of_line(p, 27)
    assert chunk_of_text(file, p, "s.area()") == chunk_of_line(p, 24)
    assert chunk_of_text(file, p, "s.area()", from_line=25) == chunk_of_line(p, 29)
    assert chunk_of_text(file, p, "radius: float\n\n    def area") == chunk_of_line(p, 10)
    with pytest.raises(
        NotFound, match=r"'s\.area\(\)' does not occur in circle\.py at or after line 30"
    ):
        chunk_of_text(file, p, "s.area()", from_line=30)
    with pytest.raises(NotFound, match=r"'nowhere' does not occur in circle\.py$"):
        chunk_of_text(file, p, "nowhere")
    with pytest.raises(InvalidArgument, match="empty"):
        chunk_of_text(file, p, "")
    with pytest.raises(
        InvalidArgument, match=r"from_line 33 is not in circle\.py: it has 32 lines"
    ):
        chunk_of_text(file, p, "x", from_line=33)


class Overlapping:
    """A parser whose definitions overlap, nest wrongly and run past the end of the file."""

    def definitions(self, path: str, text: str) -> FileDefinitions:
        stray = (CodeDefinition("f", "b", 3, 9), CodeDefinition("f", "c", 1, 2))
        return FileDefinitions(
            "python",
            (
                CodeDefinition("f", "a", 2, 5, stray),
                CodeDefinition("f", "b", 4, 8),
                CodeDefinition("f", "d", 7, 40),
            ),
        )


def test_definitions_the_parser_gets_wrong_still_tile_the_file() -> None:
    file = text_file("m.py", "x\n" * 10)
    for strategy in (FUNCTIONS, SEMANTIC):
        p = plan_chunks(file, ChunkSpec(strategy, max_lines=3), COUNTER, Overlapping())
        assert_tiles(file, p)
        assert all(r.last_line - r.first_line < 3 for r in p.ranges)


# Random files: code the parser understands, mixed with text it does not.
BLOCKS = st.one_of(
    st.sampled_from(["import os\n", "\n", "\n\n", "# a note\n", "x = 1\n", "    \n"]),
    st.builds(
        lambda n, body: f"def f{n}():\n" + "    y = 1\n" * body + "    return y\n",
        st.integers(0, 99),
        st.integers(0, 12),
    ),
    st.builds(
        lambda n, methods, body: (
            f"@dec\nclass C{n}:\n"
            + "".join(
                f"    # m{m}\n    def m{m}(self):\n"
                + "        def inner():\n            return 2\n" * (m % 2)
                + "        z = 3\n" * body
                + "\n"
                for m in range(methods)
            )
        ),
        st.integers(0, 99),
        st.integers(0, 5),
        st.integers(0, 6),
    ),
    st.builds(lambda s: s.replace("\0", "") + "\n", st.text(max_size=60)),
)
FILES = st.tuples(
    st.sampled_from(["m.py", "m.py", "m.py", "notes.txt"]),
    st.lists(BLOCKS, max_size=25).map("".join),
    st.booleans(),
).map(lambda t: text_file(t[0], t[1] if t[2] else t[1].rstrip("\n")))
SPECS = st.builds(
    ChunkSpec,
    strategy=st.sampled_from(list(ChunkStrategy)),
    max_lines=st.integers(1, 25),
    max_tokens=st.one_of(st.none(), st.integers(1, 300)),
)


def assert_tiles(file: FileText, p: ChunkPlan) -> None:
    """The ranges cover every line once, in order, with no gap (lines 1..0 when empty)."""
    assert p.ranges[0].first_line == 1 and p.ranges[-1].last_line == file.total_lines
    for before, after in zip(p.ranges, p.ranges[1:], strict=False):
        assert before.first_line <= before.last_line
        assert after.first_line == before.last_line + 1
    if file.total_lines == 0:
        assert p.ranges == (LineRange(1, 0),)


def assert_split_marks_cut_definitions(file: FileText, p: ChunkPlan) -> None:
    """Both chunks either side of a cut through a top-level definition are marked split."""
    if p.strategy is LINES:
        assert not any(r.split for r in p.ranges)
        return
    definitions = PARSER.definitions(file.path, file.text).definitions
    for before, after in zip(p.ranges, p.ranges[1:], strict=False):
        cut = before.last_line
        if any(d.first_line <= cut < d.last_line for d in definitions):
            assert before.split and after.split, (cut, p)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FILES, SPECS)
def test_every_plan_tiles_the_file_within_the_limit(file: FileText, spec: ChunkSpec) -> None:
    longest = max(
        (COUNTER.count(file.lines(n, n)) for n in range(1, file.total_lines + 1)), default=0
    )
    if spec.max_tokens is not None and longest > spec.max_tokens:
        with pytest.raises(ResourceExhausted):
            plan_chunks(file, spec, COUNTER, PARSER)
        return
    p = plan_chunks(file, spec, COUNTER, PARSER)
    assert_tiles(file, p)
    for r in p.ranges:
        if spec.max_tokens is None:
            assert r.last_line - r.first_line + 1 <= spec.max_lines
        else:
            assert COUNTER.count(file.lines(r.first_line, r.last_line)) <= spec.max_tokens
    assert_split_marks_cut_definitions(file, p)
    if p.strategy is LINES:
        return
    definitions = PARSER.definitions(file.path, file.text).definitions
    for r in p.ranges:
        touched = [
            d for d in definitions if d.first_line <= r.last_line and r.first_line <= d.last_line
        ]
        if spec.strategy is FUNCTIONS:
            assert len(touched) <= 1, "a FUNCTIONS chunk holds one definition at most"
        if spec.max_tokens is None:  # a definition that fits is never cut
            for d in touched:
                if d.last_line - d.first_line < spec.max_lines:
                    assert r.first_line <= d.first_line and d.last_line <= r.last_line


@st.composite
def mangled_samples(draw: st.DrawFn) -> FileText:
    """A sample in any language with lines dropped, repeated and swapped: broken code whose
    trees tree-sitter recovers in odd shapes."""
    name = draw(st.sampled_from(sorted(SAMPLES)))
    lines = SAMPLES[name].splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 6))):
        i = draw(st.integers(0, len(lines) - 1))
        edit = draw(st.sampled_from(["drop", "repeat", "swap"]))
        if edit == "drop" and len(lines) > 1:
            del lines[i]
        elif edit == "repeat":
            lines.insert(i, lines[i])
        else:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
    return text_file(name, "".join(lines))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled_samples(), SPECS)
def test_plans_of_broken_code_in_every_language_tile_the_file(
    file: FileText, spec: ChunkSpec
) -> None:
    spec = dataclasses.replace(
        spec, max_tokens=None if spec.max_tokens is None else 25 + spec.max_tokens
    )
    p = plan_chunks(file, spec, COUNTER, PARSER)
    assert_tiles(file, p)
    assert_split_marks_cut_definitions(file, p)
    for r in p.ranges:
        if spec.max_tokens is None:
            assert r.last_line - r.first_line + 1 <= spec.max_lines
        else:
            assert COUNTER.count(file.lines(r.first_line, r.last_line)) <= spec.max_tokens


def best_of(runs: int, file: FileText, spec: ChunkSpec) -> float:
    """The shortest of a few plannings, so a busy machine does not fail the test."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        plan_chunks(file, spec, COUNTER, PARSER)
        times.append(time.perf_counter() - start)
    return min(times)


def test_planning_is_fast() -> None:
    # Parsing is included: every plan parses the file again.
    source = "".join(SAMPLES["circle.py"] for _ in range(10))  # 320 lines
    file = text_file("m.py", source)
    assert best_of(3, file, ChunkSpec(SEMANTIC, max_lines=40)) < 0.05
    assert best_of(3, file, ChunkSpec(FUNCTIONS, max_tokens=300)) < 0.05
    big = text_file("big.py", source * 32)  # 10,240 lines
    assert big.total_lines > 10_000
    assert best_of(2, big, ChunkSpec(SEMANTIC, max_tokens=800)) < 1.0
