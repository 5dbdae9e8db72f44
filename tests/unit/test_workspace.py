"""Tests for contextwm.adapters.workspace on real temporary directories and git repositories."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from contextwm.adapters import code_symbols
from contextwm.adapters.code_symbols import top_level_symbols
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.adapters.workspace import Workspace
from contextwm.budgets.text_trim import trim_at_boundary
from contextwm.domain.errors import InvalidArgument, NotFound, PermissionDenied, ResourceExhausted
from contextwm.ports.workspace import WorkingFile
from hypothesis import given, settings
from hypothesis import strategies as st
from workspace_trees import git, needs_git, write

COUNTER = token_counter("cl100k_base")


def make_repo(root: Path, files: dict[str, str | bytes]) -> Path:
    """A git repository at root with files committed as HEAD."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    git(root, "config", "user.name", "Test")
    git(root, "config", "user.email", "test@example.com")
    write(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    return path


# --- confinement -------------------------------------------------------------------------


def test_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="missing"):
        Workspace(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidArgument, match="file"):
        Workspace(tmp_path / "file")


def test_resolve_inside_the_root(root: Path) -> None:
    write(root, {"a/b.txt": "hi"})
    ws = Workspace(root)
    assert ws.resolve("a/b.txt") == root / "a" / "b.txt"
    assert ws.resolve("a/../a/b.txt") == root / "a" / "b.txt"  # `..` that stays inside
    assert ws.resolve("") == root
    assert ws.read_text("a/./b.txt") == "hi"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../x", "leaves the workspace root"),
        ("a/../../x", "leaves the workspace root"),
        ("..", "leaves the workspace root"),
        ("/etc/passwd", "absolute path"),
        ("//etc/passwd", "absolute path"),
    ],
)
def test_escapes_are_denied(root: Path, path: str, message: str) -> None:
    (root / "a").mkdir()
    ws = Workspace(root)
    with pytest.raises(PermissionDenied, match=message):
        ws.resolve(path)
    with pytest.raises(PermissionDenied):
        ws.read_text(path)


def test_symlinks_that_leave_the_root_are_denied(tmp_path: Path, root: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, {"secret.txt": "secret"})
    (root / "file_link").symlink_to(outside / "secret.txt")
    (root / "dir_link").symlink_to(outside)
    (root / "relative_link").symlink_to("../outside/secret.txt")
    ws = Workspace(root)
    for path in [
        "file_link",
        "dir_link/secret.txt",
        "relative_link",
        "dir_link/../outside/secret.txt",
    ]:
        with pytest.raises(PermissionDenied, match="symlink"):
            ws.resolve(path)
        with pytest.raises(PermissionDenied):
            ws.read_text(path)


def test_symlink_chains_are_followed_to_their_end(tmp_path: Path, root: Path) -> None:
    write(tmp_path, {"outside.txt": "secret"})
    write(root, {"real.txt": "inside"})
    # In-root hops that end outside are denied; hops that end inside are fine.
    (root / "hop2").symlink_to(tmp_path / "outside.txt")
    (root / "hop1").symlink_to(root / "hop2")
    (root / "in2").symlink_to("real.txt")
    (root / "in1").symlink_to("in2")
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")
    ws = Workspace(root)
    with pytest.raises(PermissionDenied, match="symlink"):
        ws.read_text("hop1")
    assert ws.read_text("in1") == "inside"
    with pytest.raises(PermissionDenied):
        ws.read_text("loop_a")
    with pytest.raises(PermissionDenied):
        ws.resolve("loop_a/../../outside.txt")


def test_a_root_reached_through_a_symlink(tmp_path: Path, root: Path) -> None:
    write(root, {"f.txt": "content"})
    write(tmp_path, {"outside.txt": "secret"})
    link = tmp_path / "link_to_root"
    link.symlink_to(root)
    ws = Workspace(link)
    assert ws.root == root.resolve()
    assert ws.read_text("f.txt") == "content"
    with pytest.raises(PermissionDenied):
        ws.read_text("../outside.txt")


def test_a_sibling_sharing_the_roots_prefix_is_outside(tmp_path: Path, root: Path) -> None:
    evil = tmp_path / "root-evil"
    write(evil, {"secret.txt": "secret"})
    (root / "sneaky").symlink_to(evil / "secret.txt")
    ws = Workspace(root)
    for path in ["../root-evil/secret.txt", "sneaky"]:
        with pytest.raises(PermissionDenied):
            ws.resolve(path)
        with pytest.raises(PermissionDenied):
            ws.read_text(path)


def test_nul_bytes_are_invalid(root: Path) -> None:
    with pytest.raises(InvalidArgument):
        Workspace(root).resolve("a\0b")


# --- reading -----------------------------------------------------------------------------


def test_read_text_errors(root: Path) -> None:
    write(root, {"dir/f.txt": "x", "exact.txt": "12345", "big.txt": "123456"})
    ws = Workspace(root)
    with pytest.raises(NotFound, match=r"missing\.txt"):
        ws.read_text("missing.txt")
    with pytest.raises(NotFound):
        ws.read_text("dir/f.txt/below")
    with pytest.raises(InvalidArgument, match="not a regular file"):
        ws.read_text("dir")
    assert ws.read_text("exact.txt", max_bytes=5) == "12345"
    # No silent truncation: the whole file is refused, and the message says why.
    with pytest.raises(ResourceExhausted, match="6 bytes, over the limit of 5"):
        ws.read_text("big.txt", max_bytes=5)


def test_read_text_replaces_undecodable_bytes(root: Path) -> None:
    write(root, {"bin.txt": b"ok \xff\xfe end"})
    assert Workspace(root).read_text("bin.txt") == "ok \ufffd\ufffd end"


@pytest.mark.timeout(20)  # a regression would block in open() forever
def test_a_fifo_is_refused_without_blocking(root: Path) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(InvalidArgument, match="not a regular file"):
        Workspace(root).read_text("pipe")


# --- project docs ------------------------------------------------------------------------


def test_project_doc_priority_order(root: Path) -> None:
    names = ["PENGUIN.md", "AGENTS.md", "CLAUDE.md", "README.md"]
    write(root, {name: f"doc {name}" for name in names})
    ws = Workspace(root)
    for name in names:
        assert ws.project_doc() == (name, f"doc {name}")
        (root / name).unlink()
    assert ws.project_doc() is None


def test_project_doc_case_variants(root: Path) -> None:
    write(root, {"Readme.md": "variant", "notes.md": "no"})
    ws = Workspace(root)
    assert ws.project_doc() == ("Readme.md", "variant")
    write(root, {"README.md": "exact"})  # the exact name beats a variant of the same doc
    assert ws.project_doc() == ("README.md", "exact")
    write(root, {"agents.md": "agents"})  # a variant of a higher-priority doc beats README
    assert ws.project_doc() == ("agents.md", "agents")


def test_project_doc_skips_what_it_may_not_read(tmp_path: Path, root: Path) -> None:
    write(tmp_path, {"outside.md": "secret"})
    (root / "PENGUIN.md").symlink_to(tmp_path / "outside.md")
    (root / "AGENTS.md").mkdir()
    write(root, {"CLAUDE.md": "x" * 50, "README.md": "readme"})
    ws = Workspace(root)
    assert ws.project_doc(max_bytes=10) == ("README.md", "readme")
    assert ws.project_doc() == ("CLAUDE.md", "x" * 50)


# --- trim_at_boundary --------------------------------------------------------------------

DOC = "# Title\n\nFirst paragraph here.\nStill first.\n\nSecond paragraph.\n## Section\nBody.\n"


def test_trim_returns_the_whole_text_when_it_fits() -> None:
    assert trim_at_boundary(DOC, COUNTER, COUNTER.count(DOC)) == DOC


def test_trim_cuts_at_paragraphs_and_headings() -> None:
    first = "# Title\n"
    two = "# Title\n\nFirst paragraph here.\nStill first.\n"
    three = two + "\nSecond paragraph.\n"
    assert trim_at_boundary(DOC, COUNTER, COUNTER.count(three)) == three  # before `## Section`
    assert trim_at_boundary(DOC, COUNTER, COUNTER.count(three) - 1) == two
    assert trim_at_boundary(DOC, COUNTER, COUNTER.count(two)) == two
    assert trim_at_boundary(DOC, COUNTER, COUNTER.count(first)) == first


def test_trim_falls_back_to_lines_then_to_nothing() -> None:
    text = "line one\nline two\nline three\nline four\n"
    cut = "line one\nline two\n"
    assert trim_at_boundary(text, COUNTER, COUNTER.count(cut)) == cut
    assert trim_at_boundary(text, COUNTER, COUNTER.count("line one")) == ""
    assert trim_at_boundary(text, COUNTER, 0) == ""
    with pytest.raises(InvalidArgument):
        trim_at_boundary(text, COUNTER, -1)


def test_trim_ignores_blank_lines_and_hashes_inside_code_fences() -> None:
    text = "Intro.\n```python\n# not a heading\nx = 1\n\ny = 2\nz = 3\n```\n\nAfter.\n"
    # Neither the `# comment` nor the blank line in the fence is a paragraph break, so the
    # cut falls back to the last whole line that fits.
    up_to_y = text[: text.index("z = 3")]
    assert trim_at_boundary(text, COUNTER, COUNTER.count(up_to_y)) == up_to_y
    # After the fence closes, a blank line is a paragraph break again.
    before_after = text[: text.index("\nAfter")]
    assert trim_at_boundary(text, COUNTER, COUNTER.count(text) - 1) == before_after


_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")


def paragraph_cuts(text: str) -> list[int]:
    """The oracle: starts of a first blank line or a heading, after some text (no fences)."""
    cuts, start, seen, previous_blank = [], 0, False, False
    for line in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
        blank = not line.strip()
        if seen and ((blank and not previous_blank) or _HEADING.match(line)):
            cuts.append(start)
        seen, previous_blank = seen or not blank, blank
        start += len(line) + 1
    return cuts


markdown_lines = st.lists(
    st.one_of(
        st.just(""),
        st.just("   "),
        st.text("ab #.-\t", min_size=1, max_size=30),
        st.builds(lambda n, t: "#" * n + " " + t, st.integers(1, 7), st.text("xyz ", max_size=12)),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(lines=markdown_lines, trailing=st.booleans(), budget=st.integers(0, 80))
def test_trim_properties(lines: list[str], trailing: bool, budget: int) -> None:
    text = "\n".join(lines) + ("\n" if trailing and lines else "")
    result = trim_at_boundary(text, COUNTER, budget)
    assert text.startswith(result)
    assert COUNTER.count(result) <= budget
    if result in ("", text):
        return
    cuts = paragraph_cuts(text)
    if cuts and COUNTER.count(text[: cuts[0]]) <= budget:
        assert len(result) in cuts  # a paragraph or heading boundary when one fits
        longer = [c for c in cuts if c > len(result)]
        assert all(COUNTER.count(text[:c]) > budget for c in longer)  # and the longest one
    else:
        assert result.endswith("\n")  # else a whole line


# --- git ---------------------------------------------------------------------------------


@needs_git
def test_head_commit(tmp_path: Path, root: Path) -> None:
    assert Workspace(root).head_commit() is None
    assert Workspace(make_repo(tmp_path / "repo", {"a.txt": "a"})).head_commit() is not None


@needs_git
def test_diff_against_head(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n", "same.py": "y = 2\n"})
    write(repo, {"a.py": "x = 1\nz = 3\n", "new.py": "untracked\n"})
    ws = Workspace(repo)
    diff = ws.diff_against_head("a.py")
    assert diff is not None and "+z = 3" in diff and "--- a/a.py" in diff
    assert ws.diff_against_head("same.py") is None  # unchanged
    assert ws.diff_against_head("new.py") is None  # untracked
    assert ws.diff_against_head("*.py") is None  # a path, never a glob over a.py
    with pytest.raises(PermissionDenied):
        ws.diff_against_head("../outside.py")
    with pytest.raises(InvalidArgument):
        ws.diff_against_head("")


@needs_git
def test_a_diff_never_runs_the_agents_git_filters(tmp_path: Path) -> None:
    """`git diff` would run the clean filter named in .gitattributes and .git/config: code of
    the agent's choosing, with the sidecar's rights. The diff is made without git's filters."""
    marker = tmp_path / "filter-ran"
    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    write(repo, {".gitattributes": "*.py filter=evil\n", "a.py": "x = 2\n"})
    git(repo, "config", "filter.evil.clean", f"touch {marker}; cat")
    git(repo, "config", "filter.evil.smudge", f"touch {marker}; cat")
    diff = Workspace(repo).diff_against_head("a.py")
    assert diff is not None and "-x = 1" in diff and "+x = 2" in diff
    assert not marker.exists()


@needs_git
def test_diff_in_a_subdirectory_root_and_through_a_symlink(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"src/m.py": "a = 1\n"})
    write(repo, {"src/m.py": "a = 2\n"})
    ws = Workspace(repo / "src")
    assert ws.head_commit() is not None
    diff = ws.diff_against_head("m.py")
    assert diff is not None and "+a = 2" in diff
    (repo / "src" / "alias").symlink_to("m.py")
    assert ws.diff_against_head("alias") == diff  # git is asked about the real path


@needs_git
def test_no_diff_without_a_commit_or_outside_git(tmp_path: Path, root: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    write(fresh, {"a.py": "x\n"})
    git(fresh, "add", "a.py")
    assert Workspace(fresh).diff_against_head("a.py") is None
    write(root, {"a.py": "x\n"})
    assert Workspace(root).diff_against_head("a.py") is None


@needs_git
def test_without_git_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "repo", {".gitignore": "*.log\n", "a.py": "x = 1\n"})
    write(repo, {"a.py": "x = 2\n", "debug.log": "noise"})
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    ws = Workspace(repo)
    assert ws.head_commit() is None
    assert ws.diff_against_head("a.py") is None
    assert ws.working_file("a.py", COUNTER).kind == "content"
    # The .gitignore still applies, read with pathspec; .git is skipped.
    assert ws.codebase_map(COUNTER).splitlines() == [".gitignore", "a.py"]


@needs_git
def test_working_file_picks_the_smaller_of_diff_and_content(tmp_path: Path) -> None:
    long = "".join(f"def function_{i}(argument):\n    return argument * {i}\n" for i in range(60))
    repo = make_repo(tmp_path / "repo", {"long.py": long, "tiny.py": "a\n", "gone.py": "b\n"})
    write(repo, {"long.py": long + "EXTRA = 1\n", "tiny.py": "b\n", "untracked.py": "c\n"})
    (repo / "gone.py").unlink()
    ws = Workspace(repo)
    changed = ws.working_file("long.py", COUNTER)
    assert changed.kind == "diff" and "+EXTRA = 1" in changed.text
    assert changed.tokens == COUNTER.count(changed.text) < COUNTER.count(long)
    tiny = ws.working_file("tiny.py", COUNTER)  # its diff's headers outweigh one line
    assert (tiny.kind, tiny.text, tiny.tokens) == ("content", "b\n", COUNTER.count("b\n"))
    assert ws.working_file("untracked.py", COUNTER).kind == "content"
    deleted = ws.working_file("gone.py", COUNTER)
    assert deleted.kind == "diff" and "-b" in deleted.text
    with pytest.raises(NotFound):
        ws.working_file("never.py", COUNTER)


@needs_git
def test_working_files_are_cached_until_the_file_or_head_changes(tmp_path: Path) -> None:
    long = "".join(f"def function_{i}(argument):\n    return argument * {i}\n" for i in range(60))
    repo = make_repo(tmp_path / "repo", {"long.py": long})
    write(repo, {"long.py": long + "EXTRA = 1\n"})
    ws = Workspace(repo)
    first, missing = ws.working_files(["long.py", "nope.py"], COUNTER)
    assert isinstance(missing, NotFound)
    assert isinstance(first, WorkingFile) and first.kind == "diff"
    assert ws.working_file("long.py", COUNTER) is first  # unchanged: from the cache
    git(repo, "commit", "-qam", "extra")  # HEAD moves: the file now equals HEAD
    again = ws.working_file("long.py", COUNTER)
    assert again.kind == "content" and again.text == long + "EXTRA = 1\n"
    write(repo, {"long.py": long + "EXTRA = 2\n"})  # the file changes: diffed again
    changed = ws.working_file("long.py", COUNTER)
    assert changed.kind == "diff" and "+EXTRA = 2" in changed.text


def test_working_file_outside_git_is_content(root: Path) -> None:
    write(root, {"a.py": "x = 1\n"})
    assert Workspace(root).working_file("a.py", COUNTER).kind == "content"


# --- codebase map ------------------------------------------------------------------------

SOURCES: dict[str, str | bytes] = {
    "pkg/parser.py": "import os\n\nclass Parser:\n    def m(self): ...\n\ndef parse(): ...\n"
    "\n@decorated\ndef main(): ...\n",
    "web/app.js": "export function render() {}\nexport class View {}\nconst go = () => 1;\n",
    "web/types.ts": "export interface Item { id: number }\ntype Id = string;\n",
    "cmd/main.go": "package main\n\ntype Tree struct{}\n\nfunc (t *Tree) Insert() {}\n"
    "func main() {}\n",
    "lib.rs": "pub struct S;\nimpl Display for S {}\nfn helper() {}\n",
    "broken.py": "def ok(): pass\nclass (((\n",
    "binary.py": b"\x00\xff\xfe\x00def",
    "notes.txt": "no symbols",
}
EXPECTED_MAP = """\
binary.py
broken.py: def ok
cmd/
  main.go: type Tree, func Tree.Insert, func main
lib.rs: struct S, impl Display for S, fn helper
notes.txt
pkg/
  parser.py: class Parser, def parse, def main
web/
  app.js: function render, class View, function go
  types.ts: interface Item, type Id"""


def test_codebase_map_shows_symbols_per_language(root: Path) -> None:
    write(root, SOURCES)
    ws = Workspace(root)
    assert ws.codebase_map(COUNTER) == EXPECTED_MAP
    assert Workspace(root).codebase_map(COUNTER) == ws.codebase_map(COUNTER)  # deterministic


def test_symbols_of_tsx_and_unknown_languages() -> None:
    assert top_level_symbols("App.tsx", b"export const App = () => <div/>;\n") == ("function App",)
    assert top_level_symbols("x.md", b"# def main") == ()
    many = "".join(f"def f{i}(): pass\n" for i in range(25)).encode()
    assert top_level_symbols("m.py", many, limit=3) == ("def f0", "def f1", "def f2", "+22 more")


IGNORING: dict[str, str | bytes] = {
    # As in git, a file in an excluded directory cannot be re-included.
    ".gitignore": "*.log\nbuild/\n!build/keep.py\n/top_only.txt\n",
    "app.py": "def run(): ...\n",
    "debug.log": "ignored",
    "build/out.py": "def built(): ...\n",
    "build/keep.py": "def kept(): ...\n",
    "top_only.txt": "ignored at the top only",
    "sub/top_only.txt": "kept",
    "sub/.gitignore": "secret.py\n!keep.log\n",
    "sub/secret.py": "def hidden(): ...\n",
    "sub/keep.log": "re-included below",
    "sub/deep/other.log": "ignored by the root file",
    "sub/deep/mod.py": "class Mod: ...\n",
}
IGNORING_MAP = [
    ".gitignore",
    "app.py: def run",
    "sub/",
    "  .gitignore",
    "  deep/",
    "    mod.py: class Mod",
    "  keep.log",
    "  top_only.txt",
]


def test_codebase_map_honours_gitignore_outside_git(root: Path) -> None:
    write(root, IGNORING)
    write(root, {".git/config": "not a repository"})  # .git is skipped even when bogus
    assert Workspace(root).codebase_map(COUNTER).splitlines() == IGNORING_MAP


@needs_git
def test_codebase_map_in_git_lists_tracked_and_untracked_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**IGNORING, "removed.py": "x = 1\n"})
    write(repo, {"sub/deep/new.py": "def fresh(): ...\n"})
    git(repo / "sub" / "deep", "init", "-q", "nested")  # an untracked nested repository
    (repo / "removed.py").unlink()
    lines = Workspace(repo).codebase_map(COUNTER).splitlines()
    assert lines == [*IGNORING_MAP[:6], "    nested", "    new.py: def fresh", *IGNORING_MAP[6:]]


@needs_git
def test_a_root_inside_a_repository_is_listed_by_git(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"sub/a.py": "x = 1\n"})
    write(repo, {"sub/b.py": "y = 2\n", "sub/c.py": "z = 3\n"})
    (repo / ".git" / "info" / "exclude").write_text("c.py\n")  # only git reads this file
    assert Workspace(repo / "sub").listed_files() == ["a.py", "b.py"]
    assert Workspace(repo / "sub").head_commit() == Workspace(repo).head_commit() is not None


def test_codebase_map_hides_symbols_behind_escaping_symlinks(tmp_path: Path, root: Path) -> None:
    write(tmp_path, {"outside.py": "def secret(): ...\n"})
    (root / "evil.py").symlink_to(tmp_path / "outside.py")
    write(root, {"good.py": "def fine(): ...\n"})
    assert Workspace(root).codebase_map(COUNTER).splitlines() == ["evil.py", "good.py: def fine"]


def test_codebase_map_limits(root: Path) -> None:
    write(root, SOURCES)
    ws = Workspace(root)
    full = ws.codebase_map(COUNTER).splitlines()
    assert ws.codebase_map(COUNTER, max_files=2).splitlines() == [*full[:2], "... 6 more files"]
    assert ws.codebase_map(COUNTER, max_tokens=0) == ""
    with pytest.raises(InvalidArgument):
        ws.codebase_map(COUNTER, max_files=-1)
    for budget in [8, 20, 35, 60, 200]:
        text = ws.codebase_map(COUNTER, max_tokens=budget)
        assert text and COUNTER.count(text) <= budget
        *shown, last = text.splitlines()
        if budget == 200:
            assert text == "\n".join(full)
            continue
        assert shown == full[: len(shown)]  # whole lines from the top
        assert not shown or not shown[-1].endswith("/")  # no dangling directory line
        files_shown = sum(1 for line in shown if not line.endswith("/"))
        assert last == f"... {len(SOURCES) - files_shown} more files"


def count_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []
    real: Callable[..., tuple[str, ...]] = code_symbols.top_level_symbols

    def counting(path: str, source: bytes) -> tuple[str, ...]:
        parsed.append(path)
        return real(path, source)

    monkeypatch.setattr(code_symbols, "top_level_symbols", counting)
    return parsed


def test_symbols_are_cached_per_unchanged_file(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, {"a.py": "def a(): ...\n", "b.py": "def b(): ...\n", "c.txt": "x"})
    parsed = count_parses(monkeypatch)
    ws = Workspace(root)
    first = ws.codebase_map(COUNTER)
    assert sorted(parsed) == ["a.py", "b.py"]
    assert ws.codebase_map(COUNTER) == first and len(parsed) == 2
    write(root, {"a.py": "def a(): ...\ndef a2(): ...\n"})
    assert "a.py: def a, def a2" in ws.codebase_map(COUNTER)
    assert parsed[2:] == ["a.py"]


def test_the_symbol_cache_is_bounded(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, {f"m{i}.py": f"def f{i}(): ...\n" for i in range(3)})
    parsed = count_parses(monkeypatch)
    ws = Workspace(root, symbol_cache_size=2)
    ws.codebase_map(COUNTER)
    ws.codebase_map(COUNTER)
    # Three files cycling through two entries: least recently used goes, so all miss again.
    assert parsed == ["m0.py", "m1.py", "m2.py"] * 2
