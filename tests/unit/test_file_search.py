"""Tests for contextwm.workspace_files.file_search on real temporary trees, git and not."""

from __future__ import annotations

import dataclasses
import json
import random
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.adapters.workspace import Workspace
from contextwm.domain.errors import InvalidArgument, NotFound, PermissionDenied, ResourceExhausted
from contextwm.domain.workspace_files import (
    CaseMode,
    FileMatches,
    FileSearchQuery,
    SearchPage,
    line_starts,
)
from contextwm.workspace_files import _search_match
from contextwm.workspace_files._search_literals import required_literals
from contextwm.workspace_files._search_match import (
    case_sensitive,
    compile_pattern,
    matching_lines,
)
from contextwm.workspace_files._search_trim import trimmed
from contextwm.workspace_files.file_search import search_files
from hypothesis import given, settings
from hypothesis import strategies as st
from workspace_trees import git, needs_git, write

COUNTER = token_counter("cl100k_base")


def make_repo(root: Path) -> None:
    git(root, "init", "-q")
    git(root, "-c", "user.name=T", "-c", "user.email=t@example.com", "add", "-A")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    return path


def search(root: Path, pattern: str, token: str = "", **fields: Any) -> SearchPage:
    return search_files(Workspace(root), FileSearchQuery(pattern, **fields), COUNTER, token)


def found(page: SearchPage) -> dict[str, list[int]]:
    """Matching line numbers per file on a page."""
    return {f.path: [ln.number for ln in f.lines if ln.match] for f in page.files}


def pages(root: Path, pattern: str, **fields: Any) -> Iterator[SearchPage]:
    token = ""
    while True:
        page = search(root, pattern, token, **fields)
        yield page
        token = page.next_page_token
        if not token:
            return


# --- matching ------------------------------------------------------------------------------


def test_a_literal_search_renders_like_ripgrep(root: Path) -> None:
    write(root, {"a.py": "one\ntwo = 1\nthree\nfour\nfive\nsix = two\nseven\n", "b.txt": "x\n"})
    page = search(root, "two", context_lines=1)
    assert found(page) == {"a.py": [2, 6]}
    assert page.text == "a.py\n1-one\n2:two = 1\n3-three\n--\n5-five\n6:six = two\n7-seven\n"
    assert page.token_count == COUNTER.count(page.text)
    assert (page.total_matches, page.total_files, page.files_searched) == (2, 1, 2)
    assert (page.remaining_matches, page.remaining_files, page.next_page_token) == (0, 0, "")


def test_a_literal_is_not_a_regex(root: Path) -> None:
    write(root, {"a.txt": "a.b\naxb\n(x)\n"})
    assert found(search(root, "a.b")) == {"a.txt": [1]}
    assert found(search(root, "a.b", regex=True)) == {"a.txt": [1, 2]}
    assert found(search(root, "(x)")) == {"a.txt": [3]}


def test_regex_anchors_work_per_line_and_matches_stay_within_a_line(root: Path) -> None:
    write(root, {"a.txt": "def f():\n    return 1\ndef\ng():\nend\r\n"})
    assert found(search(root, r"^def", regex=True)) == {"a.txt": [1, 3]}
    assert found(search(root, r"f\(\):$", regex=True)) == {"a.txt": [1]}
    # \s could take the line break in a whole-text search: "def\ng" must not match.
    assert found(search(root, r"def\s+g", regex=True)) == {}
    assert found(search(root, r"end$", regex=True)) == {}  # the \r stays, as in ripgrep
    assert search(root, "end", context_lines=0).files[0].lines[0].text == "end"  # no \r\n


def test_a_line_matching_many_times_counts_once(root: Path) -> None:
    write(root, {"a.txt": "x x x\ny\nx\n"})
    page = search(root, "x")
    assert page.total_matches == 2
    assert page.files[0].matches_in_file == 2


def test_pattern_errors_are_invalid_arguments(root: Path) -> None:
    with pytest.raises(InvalidArgument, match="pattern is empty"):
        search(root, "")
    with pytest.raises(InvalidArgument, match=r"not a valid regular expression: missing \)"):
        search(root, "f(", regex=True)
    search(root, "f(")  # a literal needs no escaping
    with pytest.raises(InvalidArgument, match="line break"):
        search(root, "a\nb")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_matches_per_file", -1),
        ("max_matches_per_file", 0),
        ("page_matches", 0),
        ("context_lines", -1),
        ("max_tokens", -5),
    ],
)
def test_bad_sizes_are_invalid_arguments(root: Path, field: str, value: int) -> None:
    with pytest.raises(InvalidArgument, match=field):
        changes: dict[str, Any] = {field: value}
        query = dataclasses.replace(FileSearchQuery("x"), **changes)
        search_files(Workspace(root), query, COUNTER)


def test_case_modes(root: Path) -> None:
    write(root, {"a.txt": "Value\nvalue\nVALUE\n"})
    assert found(search(root, "value", case=CaseMode.SENSITIVE)) == {"a.txt": [2]}
    assert found(search(root, "Value", case=CaseMode.INSENSITIVE)) == {"a.txt": [1, 2, 3]}
    # Smart: insensitive for an all-lower-case pattern, sensitive once it has a capital.
    assert found(search(root, "value")) == {"a.txt": [1, 2, 3]}
    assert found(search(root, "Value")) == {"a.txt": [1]}
    # \S and \W are classes, not capitals: still insensitive.
    assert found(search(root, r"\Salue", regex=True)) == {"a.txt": [1, 2, 3]}
    assert found(search(root, r"[V]alue", regex=True)) == {"a.txt": [1]}


# --- which files ----------------------------------------------------------------------------


def test_include_and_exclude_globs(root: Path) -> None:
    write(
        root,
        {
            "a.py": "hit\n",
            "b.js": "hit\n",
            "src/c.py": "hit\n",
            "src/vendor/d.py": "hit\n",
            "tests/e.py": "hit\n",
        },
    )
    assert set(found(search(root, "hit", include=("*.py",)))) == {
        "a.py",
        "src/c.py",
        "src/vendor/d.py",
        "tests/e.py",
    }
    assert set(found(search(root, "hit", include=("src/**",)))) == {"src/c.py", "src/vendor/d.py"}
    assert set(found(search(root, "hit", include=("/*.py",)))) == {"a.py"}
    assert set(found(search(root, "hit", include=("*.py",), exclude=("vendor/", "tests")))) == {
        "a.py",
        "src/c.py",
    }
    # ripgrep's `-g '!x'` spelling in the include list excludes too.
    assert set(found(search(root, "hit", include=("!*.py",)))) == {"b.js"}


def test_a_sub_directory_or_one_file(root: Path) -> None:
    write(root, {"a.py": "hit\n", "src/b.py": "hit\n", "src/deep/c.py": "hit\n", "srcx/d": "hit"})
    assert set(found(search(root, "hit", path="src"))) == {"src/b.py", "src/deep/c.py"}
    assert set(found(search(root, "hit", path="src/deep/c.py"))) == {"src/deep/c.py"}
    assert set(found(search(root, "hit", path=str(root / "src" / "deep")))) == {"src/deep/c.py"}
    assert set(found(search(root, "hit", path="src/../srcx"))) == {"srcx/d"}
    with pytest.raises(NotFound, match="missing"):
        search(root, "hit", path="missing")


def gitignored_tree(root: Path) -> None:
    write(
        root,
        {
            ".gitignore": "build/\n*.log\n",
            "keep.py": "hit\n",
            "debug.log": "hit\n",
            "build/out.py": "hit\n",
            "sub/.gitignore": "local.py\n",
            "sub/local.py": "hit\n",
            "sub/other.py": "hit\n",
        },
    )


def test_gitignore_is_honoured_outside_git(root: Path) -> None:
    gitignored_tree(root)
    assert set(found(search(root, "hit"))) == {"keep.py", "sub/other.py"}
    # A file named by path is searched even when ignored, as ripgrep does.
    assert set(found(search(root, "hit", path="debug.log"))) == {"debug.log"}


@needs_git
def test_gitignore_is_honoured_in_git_and_dot_git_is_never_searched(root: Path) -> None:
    gitignored_tree(root)
    make_repo(root)
    write(root, {"untracked.py": "hit\n"})
    (root / ".git" / "hit").write_text("hit\n")
    assert set(found(search(root, "hit"))) == {"keep.py", "sub/other.py", "untracked.py"}


def test_binary_and_large_files_are_skipped_and_counted(root: Path) -> None:
    write(
        root,
        {
            "a.txt": "hit\n",
            "blob.bin": b"hit\0\x01\x02",
            "late.bin": b"hit\n" + b"x" * 9000 + b"\0",  # NUL past the probe: text
            "big.txt": "hit\n" * 100,
        },
    )
    page = search_files(Workspace(root), FileSearchQuery("hit"), COUNTER, max_file_bytes=100)
    assert set(found(page)) == {"a.txt"}
    assert (page.binary_skipped, page.too_large_skipped, page.files_searched) == (1, 2, 1)
    page = search(root, "hit")
    assert set(found(page)) == {"a.txt", "late.bin", "big.txt"}
    assert (page.binary_skipped, page.too_large_skipped) == (1, 0)


# --- confinement -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["..", "../outside", "sub/../../outside", "/etc", "/tmp"])
def test_paths_leaving_the_root_are_denied(tmp_path: Path, root: Path, path: str) -> None:
    write(tmp_path, {"outside/secret.txt": "hit\n"})
    write(root, {"sub/a.txt": "hit\n"})
    with pytest.raises(PermissionDenied):
        search(root, "hit", path=path)


def test_symlinks_out_of_the_root_are_neither_followed_nor_searched(
    tmp_path: Path, root: Path
) -> None:
    write(tmp_path, {"outside/secret.txt": "hit secret\n"})
    write(root, {"a.txt": "hit\n", "real/b.txt": "hit\n"})
    (root / "file_link").symlink_to(tmp_path / "outside" / "secret.txt")
    (root / "dir_link").symlink_to(tmp_path / "outside")
    (root / "inside_link").symlink_to(root / "real")
    assert set(found(search(root, "hit"))) == {"a.txt", "real/b.txt"}
    for path in ("file_link", "dir_link", "dir_link/secret.txt"):
        with pytest.raises(PermissionDenied, match="symlink"):
            search(root, "hit", path=path)
    # A link that stays inside may be named; its files are given by their real paths.
    assert set(found(search(root, "hit", path="inside_link"))) == {"real/b.txt"}


# --- per file: caps and context ---------------------------------------------------------------


def test_caps_per_file_keep_the_real_count(root: Path) -> None:
    write(root, {"a.txt": "hit\n" * 30, "b.txt": "hit\nmiss\n"})
    page = search(root, "hit", max_matches_per_file=5, context_lines=0)
    a, b = page.files
    assert (a.shown, a.matches_in_file, a.capped) == (5, 30, True)
    assert (b.shown, b.matches_in_file, b.capped) == (1, 1, False)
    assert page.total_matches == 6  # each file counted up to its cap


@pytest.mark.parametrize("regex", [False, True])
def test_files_on_later_pages_keep_their_real_count(root: Path, regex: bool) -> None:
    # The first page does not count beyond the cap in files it cannot show; their page must.
    write(root, {f"f{n}.txt": "hit\n" * (30 + n) for n in range(4)})
    got = [
        (f.path, f.matches_in_file, f.capped)
        for page in pages(root, "h.t" if regex else "hit", regex=regex, page_matches=15)
        for f in page.files
    ]
    assert {(path, count) for path, count, _ in got} == {(f"f{n}.txt", 30 + n) for n in range(4)}
    assert all(capped for _, _, capped in got)


def numbered(hits: list[int], total: int = 20) -> str:
    return "".join("hit\n" if n in hits else f"line {n}\n" for n in range(1, total + 1))


def test_overlapping_context_is_merged(root: Path) -> None:
    write(root, {"a.txt": numbered([5, 9, 17])})  # 5 and 9 share context; 17 stands apart
    page = search(root, "hit", context_lines=2)
    f = page.files[0]
    assert [ln.number for ln in f.lines] == [3, 4, 5, 6, 7, 8, 9, 10, 11, 15, 16, 17, 18, 19]
    assert [ln.number for ln in f.lines if ln.match] == [5, 9, 17]
    assert page.text.count("--\n") == 1 and "11-line 11\n--\n15-line 15\n" in page.text


def test_adjacent_blocks_join_and_context_stops_at_the_edges(root: Path) -> None:
    write(root, {"a.txt": numbered([2, 7, 19])})  # blocks 1-4 and 5-9 touch
    page = search(root, "hit", context_lines=2)
    assert [ln.number for ln in page.files[0].lines] == [*range(1, 10), 17, 18, 19, 20]
    assert page.text.count("--\n") == 1


# --- paging --------------------------------------------------------------------------------


def paged_tree(root: Path, seed: int = 3) -> dict[str, list[int]]:
    """Files with seeded matches; returns the expected matching lines per file."""
    rng = random.Random(seed)
    expected: dict[str, list[int]] = {}
    for n in range(12):
        name = f"d{n % 3}/f{n:02d}.txt"
        rows = [f"row {i} " + ("needle" if rng.random() < 0.3 else "hay") for i in range(40)]
        write(root, {name: "\n".join(rows) + "\n"})
        hits = [i + 1 for i, r in enumerate(rows) if "needle" in r]
        if hits:
            expected[name] = hits
    return expected


@pytest.mark.parametrize("page_matches", [1, 7, 50])
def test_paging_shows_every_match_once_with_consistent_counts(
    root: Path, page_matches: int
) -> None:
    expected = paged_tree(root)
    total = sum(len(v) for v in expected.values())
    seen: dict[str, list[int]] = {}
    shown_so_far = 0
    for page in pages(root, "needle", page_matches=page_matches, max_matches_per_file=100):
        assert (page.total_matches, page.total_files) == (total, len(expected))
        shown = sum(f.shown for f in page.files)
        assert 0 < shown <= page_matches
        shown_so_far += shown
        assert page.remaining_matches == total - shown_so_far
        for f in page.files:
            assert f.shown == sum(ln.match for ln in f.lines)
            seen.setdefault(f.path, []).extend(ln.number for ln in f.lines if ln.match)
        unfinished = {p for p, v in expected.items() if len(seen.get(p, [])) < len(v)}
        assert page.remaining_files == len(unfinished)
    assert seen == expected
    assert list(seen) == sorted(seen)  # path order
    assert page.remaining_matches == page.remaining_files == 0


def test_paging_respects_the_cap_per_file(root: Path) -> None:
    write(root, {"a.txt": "hit\n" * 9, "b.txt": "hit\n" * 9})
    got = [
        (f.path, f.first_match, f.shown, f.capped)
        for page in pages(root, "hit", page_matches=4, max_matches_per_file=6)
        for f in page.files
    ]
    assert got == [
        ("a.txt", 0, 4, True),
        ("a.txt", 4, 2, True),
        ("b.txt", 0, 2, True),
        ("b.txt", 2, 4, True),
    ]


def test_the_page_size_may_change_between_pages(root: Path) -> None:
    expected = paged_tree(root)
    first = search(root, "needle", page_matches=3)
    rest = list(pages_from(root, first.next_page_token, page_matches=20, context_lines=0))
    seen = [(f.path, n) for p in [first, *rest] for f in p.files for n in found_lines(f)]
    assert seen == [(p, n) for p, lines in sorted(expected.items()) for n in lines]


def pages_from(root: Path, token: str, **fields: Any) -> Iterator[SearchPage]:
    while token:
        page = search(root, "needle", token, **fields)
        yield page
        token = page.next_page_token


def found_lines(f: FileMatches) -> list[int]:
    return [ln.number for ln in f.lines if ln.match]


def test_tokens_of_another_search_or_garbled_are_refused(root: Path) -> None:
    paged_tree(root)
    token = search(root, "needle", page_matches=2).next_page_token
    assert token
    for other in (
        FileSearchQuery("hay"),
        FileSearchQuery("needle", regex=True),
        FileSearchQuery("needle", case=CaseMode.SENSITIVE),
        FileSearchQuery("needle", include=("*.txt",)),
        FileSearchQuery("needle", path="d1"),
        FileSearchQuery("needle", max_matches_per_file=3),
    ):
        with pytest.raises(InvalidArgument, match="different search"):
            search_files(Workspace(root), other, COUNTER, token)
    for garbled in ("x", token[:-3], "!!!", token[::-1], "e30=", "W10="):
        with pytest.raises(InvalidArgument, match="page_token"):
            search(root, "needle", garbled)


def test_a_token_survives_changes_to_the_files(root: Path) -> None:
    write(root, {"a.txt": "hit\nhit\n", "b.txt": "hit\n", "c.txt": "hit\n"})
    token = search(root, "hit", page_matches=3).next_page_token  # next: c.txt
    (root / "a.txt").unlink()
    (root / "c.txt").unlink()
    page = search(root, "hit", token)  # the file it named went: nothing after it
    assert (page.files, page.next_page_token, page.remaining_matches) == ((), "", 0)
    assert page.total_matches == 1


# --- max_tokens ----------------------------------------------------------------------------


def test_pages_fit_max_tokens_and_still_cover_everything(root: Path) -> None:
    expected = paged_tree(root)
    seen: dict[str, list[int]] = {}
    count = 0
    for page in pages(root, "needle", max_tokens=120, context_lines=1):
        count += 1
        assert page.token_count == COUNTER.count(page.text) <= 120
        for f in page.files:
            seen.setdefault(f.path, []).extend(found_lines(f))
    assert seen == expected
    assert count > 2


def test_context_is_dropped_before_a_page_is_refused(root: Path) -> None:
    long = " ".join(f"word{i}" for i in range(60))
    write(root, {"a.txt": f"{long}\n{long}\nhit here\n{long}\n{long}\n"})
    bare = search(root, "hit", context_lines=0).token_count
    page = search(root, "hit", context_lines=2, max_tokens=bare)
    assert [ln.number for ln in page.files[0].lines] == [3]
    assert page.token_count <= bare
    with pytest.raises(ResourceExhausted, match=f"needs {bare} tokens"):
        search(root, "hit", max_tokens=bare - 1)


# --- the matcher against a per-line reference ------------------------------------------------

PATTERNS = ["a", "ab", "^a", "b$", r"a\s*b", r"[^a]b", "x*", "^", "$", r"\s", r"b\n?a", r"\bab"]
# Regexes with a literal of three or more characters: their candidate lines are searched.
PATTERNS += ["ab a", r"(?:ab|ba) \s*a", r"^ab ", r"bab$", "aba|bab", r"a[ b]ab\s", r"(?i)AB A"]
# Repeats at the ends, which the matcher cuts to their minimum.
PATTERNS += [r"\w+ b", r".*ab", r"ab.*", r"\s*a\s+", r"[ab]{2,}b", r"a*?b+?", r"\s+", r"a++b"]
LITERALS = ["a", "ab", "b a", "a\r", " "]


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab \n\r", max_size=60),
    st.one_of(
        st.builds(FileSearchQuery, st.sampled_from(PATTERNS), regex=st.just(True)),
        st.builds(FileSearchQuery, st.sampled_from(LITERALS)),
    ),
    st.integers(min_value=1, max_value=4),
    st.one_of(st.none(), st.integers(min_value=1, max_value=6)),
)
def test_matching_lines_equals_a_line_by_line_search(
    text: str, query: FileSearchQuery, keep: int, count_to: int | None
) -> None:
    matcher = compile_pattern(query)
    source = query.pattern if query.regex else re.escape(query.pattern)
    case = re.IGNORECASE if not case_sensitive(query.pattern, query.regex, query.case) else 0
    pattern = re.compile(source, re.MULTILINE | case)
    starts = line_starts(text)
    bounds = [*starts[1:], len(text)] if starts else []
    contents = [text[s:e].removesuffix("\n") for s, e in zip(starts, bounds, strict=True)]
    reference = [i for i, line in enumerate(contents) if pattern.search(line)]
    count = len(reference) if count_to is None else min(len(reference), max(count_to, keep))
    got = matching_lines(matcher, text, starts, keep, count_to=count_to)
    assert got == (reference[:keep], count)
    with mock.patch.object(_search_match, "_FIRST_BLOCK", 1):  # candidates a line at a time
        assert matching_lines(matcher, text, starts, keep, count_to=count_to) == got


def test_a_count_stops_at_count_to_across_blocks_of_candidate_lines() -> None:
    text = "x ab a\n" * 500
    matcher = compile_pattern(FileSearchQuery(r"x ab\s", regex=True))
    assert matcher.candidates is not None
    starts = line_starts(text)
    for count_to in (1, 5, 64, 65, 300):
        assert matching_lines(matcher, text, starts, 1, count_to=count_to) == ([0], count_to)
    assert matching_lines(matcher, text, starts, 2) == ([0, 1], 500)


@pytest.mark.parametrize(
    ("source", "cut"),
    [
        (r"\w+_count", r"\w_count"),
        (r".*Error.*", "Error"),
        (r"[a-z]{2,}x\d*?", "[a-z][a-z]x"),
        (r"\s+", r"\s"),
        (r"\w++x", None),  # possessive: \w++ takes the x, so it never matches
        (r"(\w)+\1", None),  # a group, which may be referred to
        (r"\w{20,}", None),  # a long minimum stays a repeat
        (r"^\s*def", None),  # the anchor comes first
    ],
)
def test_repeats_at_the_ends_are_cut_to_their_minimum(source: str, cut: str | None) -> None:
    pattern = re.compile(source)
    want = pattern if cut is None else re.compile(cut)
    got = trimmed(pattern)
    assert (got is pattern) == (cut is None)
    for line in ["abc_count x", "  def f", "xx7 Error: no", "ab x", "wwwx", "aa", " ", "x" * 25]:
        assert bool(got.search(line)) == bool(pattern.search(line)) == bool(want.search(line))


# --- against ripgrep itself --------------------------------------------------------------------

RG_CASES = [
    FileSearchQuery("parse_value"),
    FileSearchQuery("Value"),
    FileSearchQuery("value", case=CaseMode.SENSITIVE),
    FileSearchQuery("VALUE", case=CaseMode.INSENSITIVE),
    FileSearchQuery(r"def \w+\(", regex=True),
    FileSearchQuery(r"TODO|FIXME", regex=True),
    FileSearchQuery(r"^\s+return\b", regex=True),
    FileSearchQuery("config", include=("*.py",), exclude=("skip/",)),
]
RG_CASE_FLAGS = {CaseMode.SMART: "-S", CaseMode.SENSITIVE: "-s", CaseMode.INSENSITIVE: "-i"}


def ripgrep_tree(root: Path) -> None:
    rng = random.Random(11)
    words = ["parse_value", "Value", "value", "config", "return x", "TODO", "FIXME", "data"]
    for n in range(30):
        ext = ("py", "js", "txt")[n % 3]
        folder = ("", "src/", "skip/", "build/")[n % 4]
        rows = []
        for i in range(rng.randint(0, 60)):
            body = " ".join(rng.choice(words) for _ in range(rng.randint(0, 4)))
            rows.append(("    " if i % 3 else "") + (f"def f{i}(" if i % 7 == 0 else "") + body)
        write(root, {f"{folder}file{n}.{ext}": "\n".join(rows) + ("\n" if n % 5 else "")})
    write(root, {".gitignore": "build/\n*.log\n", ".hidden.py": "config value\n"})
    write(root, {"x.log": "config value\n"})


def ripgrep(root: Path, query: FileSearchQuery) -> dict[str, list[int]]:
    """Matching lines per file as `rg` finds them, with our listing's rules: hidden files
    searched, .gitignore honoured in and out of git, no other ignore files, .git skipped."""
    args = ["rg", "--json", "--no-config", "--hidden", "--no-require-git", "--no-ignore-global"]
    args += ["--no-ignore-dot", "-g", "!.git", RG_CASE_FLAGS[query.case]]
    args += [] if query.regex else ["-F"]
    args += [a for glob in query.include for a in ("-g", glob)]
    args += [a for glob in query.exclude for a in ("-g", f"!{glob}")]
    done = subprocess.run(
        [*args, "-e", query.pattern, "."], cwd=root, capture_output=True, check=False
    )
    assert done.returncode in (0, 1), done.stderr
    out: dict[str, list[int]] = {}
    for row in done.stdout.decode().splitlines():
        event = json.loads(row)
        if event["type"] == "match":
            path = event["data"]["path"]["text"].removeprefix("./")
            out.setdefault(path, []).append(event["data"]["line_number"])
    return {p: sorted(v) for p, v in sorted(out.items())}


@pytest.mark.skipif(
    shutil.which("rg") is None,
    reason="ripgrep (rg) is not installed: `apt-get install ripgrep` to compare with it",
)
@pytest.mark.parametrize("in_git", [False, True])
def test_the_same_files_and_lines_as_ripgrep(root: Path, in_git: bool) -> None:
    if in_git and shutil.which("git") is None:
        pytest.skip("git is not installed")
    ripgrep_tree(root)
    if in_git:
        make_repo(root)
    for query in RG_CASES:
        everything = dataclasses.replace(query, max_matches_per_file=1000, page_matches=10**5)
        ours = search_files(Workspace(root), everything, COUNTER)
        assert ours.total_matches > 0, query
        assert found(ours) == ripgrep(root, query), query


@pytest.mark.parametrize(
    ("source", "literals"),
    [
        (r"\w+_(count|limit)\s*[=+]", ("_count", "_limit")),
        ("TODO|FIXME", ("FIXME", "TODO")),
        (r"^\s+return\b", ("return",)),
        (r"def \w+\(", ("def ",)),
        (r"x(?:abc)+y", ("abc",)),
        (r"[^abc]def", ("def",)),
        (r"\bfoo\b", ("foo",)),
        ("ab", ()),  # too short to be worth a search of its own
        ("abc|", ()),  # the empty alternative needs nothing
        (r"a.b\d", ()),
    ],
)
def test_the_literals_every_match_contains(source: str, literals: tuple[str, ...]) -> None:
    assert required_literals(source, re.MULTILINE) == literals
    matcher = compile_pattern(FileSearchQuery(source, regex=True))
    assert (matcher.candidates is not None) == bool(literals)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="a\n\r\x0c\u2028", max_size=40))
def test_line_starts_split_at_line_feeds_only(text: str) -> None:
    # The search's line numbers come from these: the reference finds each "\n" in turn.
    expected = [0] if text else []
    expected += [i + 1 for i, c in enumerate(text) if c == "\n" and i + 1 < len(text)]
    assert line_starts(text) == tuple(expected)
