"""Tests for contextwm.workspace_files.editing on real temporary workspaces."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

import pytest
from contextwm.adapters.workspace import Workspace
from contextwm.domain.errors import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)
from contextwm.domain.workspace_files import EditResult, FileText
from contextwm.workspace_files.editing import edit_file
from hypothesis import given, settings
from hypothesis import strategies as st

LIMIT = 1_000_000


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    return path


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def snapshot(path: Path) -> tuple[bytes, int, int]:
    """What must not change when an edit fails: the bytes, the mtime and the inode."""
    info = path.stat()
    return path.read_bytes(), info.st_mtime_ns, info.st_ino


def edit(
    root: Path, path: str, search: str, replace: str, *, max_bytes: int = LIMIT, sha: str = ""
) -> EditResult:
    return edit_file(
        Workspace(root), path, search, replace, expected_sha256=sha, max_bytes=max_bytes
    )


# --- success -----------------------------------------------------------------------------


def test_replaces_the_one_match_and_reports_lines_and_hashes(root: Path) -> None:
    before = b"one\ntwo\nthree\n"
    (root / "f.txt").write_bytes(before)
    result = edit(root, "f.txt", "two\n", "2a\n2b\n")
    after = b"one\n2a\n2b\nthree\n"
    assert (root / "f.txt").read_bytes() == after
    assert (result.path, result.first_line, result.last_line) == ("f.txt", 2, 3)
    assert (result.sha256_before, result.sha256_after) == (sha256(before), sha256(after))


def test_lines_of_a_replacement_without_trailing_newline(root: Path) -> None:
    (root / "f.txt").write_text("def f():\n    return 1\n")
    result = edit(root, "f.txt", "return 1", "x = 1\n    return x")
    assert (root / "f.txt").read_text() == "def f():\n    x = 1\n    return x\n"
    assert (result.first_line, result.last_line) == (2, 3)


def test_a_deletion_names_the_line_where_the_text_was(root: Path) -> None:
    (root / "f.txt").write_text("a\nb\nc\n")
    result = edit(root, "f.txt", "b\n", "")
    assert (root / "f.txt").read_text() == "a\nc\n"
    assert (result.first_line, result.last_line) == (2, 2)
    # Removing the last line leaves no line 3: the last existing line is named.
    result = edit(root, "f.txt", "c\n", "")
    assert (result.first_line, result.last_line) == (1, 1)


def test_nested_path_and_absolute_path_inside_the_root(root: Path) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "m.py").write_text("x = 1\n")
    result = edit(root, str(root / "pkg" / "m.py"), "x = 1", "x = 2")
    assert result.path == "pkg/m.py"
    assert (root / "pkg" / "m.py").read_text() == "x = 2\n"


def test_a_symlink_inside_the_workspace_is_edited_through(root: Path) -> None:
    (root / "real.txt").write_text("old\n")
    (root / "link.txt").symlink_to("real.txt")
    edit(root, "link.txt", "old", "new")
    assert (root / "link.txt").is_symlink()
    assert (root / "real.txt").read_text() == "new\n"


# --- refused, and the file left as it was ------------------------------------------------


def test_absent_search_text_is_refused_with_advice(root: Path) -> None:
    (root / "f.txt").write_text("def f():\n    return 1\n")
    before = snapshot(root / "f.txt")
    with pytest.raises(FailedPrecondition, match="not found") as info:
        edit(root, "f.txt", "def f():\n  return 1\n", "pass")
    assert "read the file again" in info.value.message
    assert "line endings" in info.value.message
    # The first line is there: the message points at it.
    assert "'def f():', is at line 1" in info.value.message
    assert snapshot(root / "f.txt") == before


def test_absent_names_crlf_in_the_search_of_an_lf_file(root: Path) -> None:
    (root / "f.txt").write_text("a\nb\n")
    with pytest.raises(FailedPrecondition, match="CRLF"):
        edit(root, "f.txt", "a\r\nb", "c")


def test_ambiguous_search_text_lists_the_lines(root: Path) -> None:
    (root / "f.txt").write_text("x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n")
    before = snapshot(root / "f.txt")
    with pytest.raises(FailedPrecondition, match="3 times") as info:
        edit(root, "f.txt", "x = 1", "x = 9")
    assert "lines 1, 3 and 5" in info.value.message
    assert "surrounding lines" in info.value.message
    assert snapshot(root / "f.txt") == before


def test_overlapping_occurrences_are_ambiguous(root: Path) -> None:
    (root / "f.txt").write_text("aaa\n")
    with pytest.raises(FailedPrecondition, match=r"2 times.*line 1"):
        edit(root, "f.txt", "aa", "b")


def test_many_occurrences_list_a_few_lines(root: Path) -> None:
    (root / "f.txt").write_text("x\n" * 30)
    with pytest.raises(FailedPrecondition, match=r"30 times.*and 20 more"):
        edit(root, "f.txt", "x", "y")


def test_empty_or_unchanged_texts_are_invalid(root: Path) -> None:
    (root / "f.txt").write_text("a\n")
    with pytest.raises(InvalidArgument, match="empty"):
        edit(root, "f.txt", "", "b")
    with pytest.raises(InvalidArgument, match="nothing to change"):
        edit(root, "f.txt", "a", "a")


def test_missing_file(root: Path) -> None:
    with pytest.raises(NotFound):
        edit(root, "missing.txt", "a", "b")


def test_binary_file_is_refused(root: Path) -> None:
    (root / "f.bin").write_bytes(b"a\0b\nneedle\n")
    before = snapshot(root / "f.bin")
    with pytest.raises(InvalidArgument, match="binary"):
        edit(root, "f.bin", "needle", "pin")
    assert snapshot(root / "f.bin") == before


def test_non_utf8_file_is_refused(root: Path) -> None:
    (root / "f.txt").write_bytes(b"caf\xe9\nneedle\n")
    before = snapshot(root / "f.txt")
    with pytest.raises(InvalidArgument, match="not valid UTF-8"):
        edit(root, "f.txt", "needle", "pin")
    assert snapshot(root / "f.txt") == before


def test_a_file_over_max_bytes_before_or_after_is_refused(root: Path) -> None:
    (root / "f.txt").write_text("0123456789")
    before = snapshot(root / "f.txt")
    with pytest.raises(ResourceExhausted, match="10 bytes, over the limit of 5"):
        edit(root, "f.txt", "0", "x", max_bytes=5)
    with pytest.raises(ResourceExhausted, match=r"would make .f\.txt. 13 bytes"):
        edit(root, "f.txt", "0", "0000", max_bytes=12)
    assert snapshot(root / "f.txt") == before


def test_dotdot_is_refused(root: Path) -> None:
    outside = root.parent / "outside.txt"
    outside.write_text("secret\n")
    with pytest.raises(PermissionDenied):
        edit(root, "../outside.txt", "secret", "leaked")
    with pytest.raises(PermissionDenied):
        edit(root, str(outside), "secret", "leaked")
    assert outside.read_text() == "secret\n"


def test_symlink_out_of_the_root_is_refused(root: Path) -> None:
    outside = root.parent / "outside.txt"
    outside.write_text("secret\n")
    (root / "link.txt").symlink_to(outside)
    (root / "dir").symlink_to(root.parent)
    with pytest.raises(PermissionDenied, match="symlink"):
        edit(root, "link.txt", "secret", "leaked")
    with pytest.raises(PermissionDenied, match="symlink"):
        edit(root, "dir/outside.txt", "secret", "leaked")
    assert outside.read_text() == "secret\n"


def test_a_read_only_file_is_refused(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (root / "f.txt").write_text("a\n")
    (root / "f.txt").chmod(0o444)
    if os.geteuid() == 0:  # root may write any file: the check is made to answer no
        monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
    with pytest.raises(PermissionDenied, match="read-only"):
        edit(root, "f.txt", "a", "b")
    assert (root / "f.txt").read_text() == "a\n"


# --- line endings ------------------------------------------------------------------------


def test_crlf_file_is_matched_and_written_with_crlf(root: Path) -> None:
    (root / "f.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = edit(root, "f.txt", "one\ntwo\n", "1\n2\n2b\n")
    assert (root / "f.txt").read_bytes() == b"1\r\n2\r\n2b\r\nthree\r\n"
    assert (result.first_line, result.last_line) == (1, 3)
    # A one-line search in a CRLF file still writes the replace text's newlines as CRLF.
    edit(root, "f.txt", "three", "3\n3b")
    assert (root / "f.txt").read_bytes() == b"1\r\n2\r\n2b\r\n3\r\n3b\r\n"


def test_mixed_endings_match_as_given_first_then_translated(root: Path) -> None:
    (root / "f.txt").write_bytes(b"a\nb\r\nc\n")
    # "a\n" is there as given: replaced as given.
    edit(root, "f.txt", "a\n", "x\ny\n")
    assert (root / "f.txt").read_bytes() == b"x\ny\nb\r\nc\n"
    # "b\n" is not, "b\r\n" is: both texts translated.
    edit(root, "f.txt", "b\n", "p\nq\n")
    assert (root / "f.txt").read_bytes() == b"x\ny\np\r\nq\r\nc\n"


def test_lf_file_is_left_with_lf(root: Path) -> None:
    (root / "f.txt").write_bytes(b"a\nb\n")
    edit(root, "f.txt", "a\n", "x\ny\n")
    assert (root / "f.txt").read_bytes() == b"x\ny\nb\n"


# --- what the file keeps -----------------------------------------------------------------


def test_mode_is_kept(root: Path) -> None:
    script = root / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    edit(root, "run.sh", "old", "new")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert script.read_text() == "#!/bin/sh\necho new\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may give a file to another owner")
def test_owner_is_kept_when_the_server_may(root: Path) -> None:
    path = root / "f.txt"
    path.write_text("a\n")
    os.chown(path, 4321, 4322)
    edit(root, "f.txt", "a", "b")
    assert (path.stat().st_uid, path.stat().st_gid) == (4321, 4322)


def test_a_bom_is_kept(root: Path) -> None:
    (root / "f.txt").write_bytes(b"\xef\xbb\xbfa = 1\n")
    edit(root, "f.txt", "a = 1", "a = 2")
    assert (root / "f.txt").read_bytes() == b"\xef\xbb\xbfa = 2\n"


# --- expected hash and concurrent changes ------------------------------------------------


def test_expected_hash_that_matches_allows_the_edit(root: Path) -> None:
    (root / "f.txt").write_text("a\n")
    read = Workspace(root).read_file("f.txt", LIMIT)
    result = edit(root, "f.txt", "a", "b", sha=read.sha256.upper())
    assert result.sha256_before == read.sha256
    assert (root / "f.txt").read_text() == "b\n"


def test_expected_hash_that_differs_aborts(root: Path) -> None:
    (root / "f.txt").write_text("a\n")
    read = Workspace(root).read_file("f.txt", LIMIT)
    (root / "f.txt").write_text("a\nchanged\n")
    before = snapshot(root / "f.txt")
    with pytest.raises(Aborted, match=r"changed since it was read.*read it again") as info:
        edit(root, "f.txt", "a", "b", sha=read.sha256)
    assert info.value.code.name == "ABORTED"
    assert snapshot(root / "f.txt") == before


def test_malformed_expected_hash_is_invalid(root: Path) -> None:
    (root / "f.txt").write_text("a\n")
    with pytest.raises(InvalidArgument, match="64 hex digits"):
        edit(root, "f.txt", "a", "b", sha="abc")


class ChangedAfterRead(Workspace):
    """A workspace whose file another writer changes right after each read."""

    def read_file(self, path: str, max_bytes: int) -> FileText:
        read = super().read_file(path, max_bytes)
        (self.root / path).write_text("someone else's change\na\n")
        return read


def test_a_change_during_the_edit_aborts_and_is_kept(root: Path) -> None:
    (root / "f.txt").write_text("a\n")
    with pytest.raises(Aborted, match="changed since it was read"):
        edit_file(ChangedAfterRead(root), "f.txt", "a", "b", max_bytes=LIMIT)
    assert (root / "f.txt").read_text() == "someone else's change\na\n"
    assert os.listdir(root) == ["f.txt"]


# --- a crash mid-write -------------------------------------------------------------------


@pytest.mark.parametrize("failing", ["replace", "fsync", "fchmod"])
def test_a_failure_mid_write_leaves_the_original_and_no_temp_file(
    root: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    (root / "f.txt").write_text("a\n")
    before = snapshot(root / "f.txt")

    def crash(*args: object, **kwargs: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, failing, crash)
    with pytest.raises(OSError, match="Input/output error"):
        edit(root, "f.txt", "a", "b")
    monkeypatch.undo()
    assert snapshot(root / "f.txt") == before
    assert os.listdir(root) == ["f.txt"]


def test_a_full_disk_is_resource_exhausted(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (root / "f.txt").write_text("a\n")

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(ResourceExhausted, match="No space left"):
        edit(root, "f.txt", "a", "b")
    monkeypatch.undo()
    assert os.listdir(root) == ["f.txt"]


# --- the result is the one occurrence replaced ----------------------------------------

AROUND = st.text(alphabet="ab \n", max_size=30)
# Every x of the file is in the inserted search text, so a search with an x occurs once.
SEARCH = st.text(alphabet="xy\n", min_size=1, max_size=6).filter(lambda s: "x" in s)


@settings(max_examples=60, deadline=None)
@given(
    prefix=AROUND,
    search=SEARCH,
    suffix=AROUND,
    put=st.text(alphabet="ab\nxy", max_size=8),
    crlf=st.booleans(),
)
def test_a_unique_match_is_replaced_in_place(
    prefix: str, search: str, suffix: str, put: str, crlf: bool
) -> None:
    # A file with no line ending at all has none to keep: the replace text goes in as given.
    crlf = crlf and "\n" in prefix + search + suffix

    def ending(text: str) -> str:
        return text.replace("\n", "\r\n") if crlf else text

    if search == put:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "f.txt")
        path.write_bytes(ending(prefix + search + suffix).encode())
        result = edit_file(Workspace(Path(tmp)), "f.txt", search, put, max_bytes=LIMIT)
        assert path.read_bytes().decode() == ending(prefix + put + suffix)
    first = prefix.count("\n") + 1
    if put:
        assert (result.first_line, result.last_line) == (first, first + put[:-1].count("\n"))
