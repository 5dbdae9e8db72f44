"""Search/replace edits of workspace files: one exact match, line endings kept, written
atomically, and the file left as it was when anything is off.

The rules an edit follows:

- The search text must occur exactly once in the file (overlapping occurrences count). Absent
  or ambiguous, the edit is refused with the lines to look at.
- Line endings: a file whose lines all end in CRLF is matched and written with CRLF, the
  bare LFs of the search and replace texts translated. A file with mixed endings is matched
  exactly as given first; only when that finds nothing is the CRLF-translated search tried,
  and then the replace text is translated too. A file without CRLF is matched as given.
- Only valid UTF-8 text files within max_bytes are edited, before and after the edit: a file
  with other bytes is refused, since writing its decoded text back would replace them.
- The new content goes to a temporary file in the same directory (written, flushed, synced,
  given the old file's mode and, when the server may, its owner), which os.replace puts over
  the file; the directory is synced after. Any failure removes the temporary file.
- Just before the replace the file is read again and compared with the bytes the edit was
  made from, so an edit never overwrites a change made meanwhile (Aborted).

os.replace gives the path a new inode: hard links to the old file keep the old content, and
a symlink inside the workspace is edited through (its target is replaced, the link kept).
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import hashlib
import os
import re
import secrets
import stat
from pathlib import Path
from typing import NoReturn

from contextwm.domain.errors import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    PermissionDenied,
    ResourceExhausted,
)
from contextwm.domain.workspace_files import EditResult, FileText
from contextwm.ports.workspace import Workspace

__all__ = ["edit_file"]

# Messages list at most this many line numbers; an agent needs a few to look at, not all.
MAX_LISTED_LINES = 10
_HEX_SHA256 = re.compile(r"[0-9a-f]{64}")
# A newline not already preceded by a carriage return.
_BARE_LF = re.compile(r"(?<!\r)\n")


def edit_file(
    workspace: Workspace,
    path: str,
    search: str,
    replace: str,
    *,
    expected_sha256: str = "",
    max_bytes: int,
) -> EditResult:
    """Replaces the one occurrence of search in a workspace file with replace.

    Args:
        workspace: the confined workspace the path is in.
        path: workspace-relative, or absolute inside the workspace root.
        search: the exact text to replace, occurring once in the file; bare LFs also match
            CRLFs in a CRLF file (see the module docstring).
        replace: the text to put in its place; "" deletes the search text.
        expected_sha256: when given, the hex SHA-256 of the file's bytes as the agent read
            them (FileText.sha256); the edit is refused if the file has changed since.
        max_bytes: a file larger than this, before or after the edit, is refused.

    Returns:
        The replaced text's first and last line in the new file (for a deletion, both are
        the line where the text was removed), with the hashes of the old and new bytes.

    Raises:
        InvalidArgument: an empty search text; search equal to replace (the edit would
            change nothing, which is more likely a mistake than a wish); a malformed
            expected_sha256; a binary, non-UTF-8 or irregular file.
        FailedPrecondition: the search text is absent, or occurs more than once.
        Aborted: the file's hash is not expected_sha256, or it changed during the edit.
        PermissionDenied: the path leaves the workspace (`..`, an absolute path elsewhere, a
            symlink out), or the server may not write the file or its directory.
        NotFound: no such file.
        ResourceExhausted: the file is over max_bytes, before or after the edit, or the disk
            is full.
    """
    if not search:
        raise InvalidArgument("the search text is empty: give the exact text to replace")
    if search == replace:
        raise InvalidArgument("the search and replace texts are the same: nothing to change")
    expected = _checked_hash(expected_sha256)
    name = workspace.relative(path)
    read = workspace.read_file(name, max_bytes)
    if read.replaced:
        raise InvalidArgument(
            f"{read.path!r} is not valid UTF-8: writing it back would replace its undecodable"
            " bytes, so it cannot be edited here"
        )
    if expected and expected != read.sha256:
        raise Aborted(
            f"{read.path!r} changed since it was read (its sha256 is {read.sha256[:12]}…, not"
            f" {expected[:12]}…): read it again and edit the current text"
        )
    start, found, put = _locate(read, search, replace)
    text = read.text[:start] + put + read.text[start + len(found) :]
    data = text.encode("utf-8")
    if len(data) > max_bytes:
        raise ResourceExhausted(
            f"the edit would make {read.path!r} {len(data)} bytes, over the limit of {max_bytes}"
        )
    # The decode was strict (read.replaced is False), so encoding gives back the exact bytes
    # the hash was taken of.
    _write_over(workspace.resolve(name), read.text.encode("utf-8"), data, read.path)
    first, last = _lines_of(text, start, put)
    return EditResult(
        path=read.path,
        first_line=first,
        last_line=last,
        sha256_before=read.sha256,
        sha256_after=hashlib.sha256(data).hexdigest(),
    )


def _checked_hash(expected: str) -> str:
    """expected_sha256 in lower case; "" when not given.

    Raises:
        InvalidArgument: not 64 hex digits.
    """
    lowered = expected.strip().lower()
    if lowered and not _HEX_SHA256.fullmatch(lowered):
        raise InvalidArgument(
            f"expected_sha256 must be 64 hex digits (the sha256 a read returned), got {expected!r}"
        )
    return lowered


def _to_crlf(text: str) -> str:
    return _BARE_LF.sub("\r\n", text)


def _locate(read: FileText, search: str, replace: str) -> tuple[int, str, str]:
    """Where the one match starts, and the search and replace texts in the file's endings.

    Raises:
        FailedPrecondition: no match, or more than one.
    """
    text = read.text
    tries = [(search, replace)]
    if "\r\n" in text:
        translated = (_to_crlf(search), _to_crlf(replace))
        if text.count("\n") == text.count("\r\n"):  # every line ends in CRLF
            tries = [translated]
        elif translated[0] != search:  # mixed: as given first, then translated
            tries.append(translated)
    for found, put in tries:
        starts = _occurrences(text, found)
        if len(starts) == 1:
            return starts[0], found, put
        if starts:
            raise FailedPrecondition(
                f"the search text occurs {len(starts)} times in {read.path!r}, at"
                f" {_listed(_line_numbers(read, starts))}: include more of the surrounding"
                " lines in the search text so that it matches only once"
            )
    raise FailedPrecondition(_absent_message(read, search))


def _occurrences(text: str, needle: str) -> list[int]:
    """Start of every occurrence, overlapping ones included: "aa" occurs twice in "aaa",
    which makes an edit of it ambiguous."""
    starts = []
    at = text.find(needle)
    while at != -1:
        starts.append(at)
        at = text.find(needle, at + 1)
    return starts


def _line_numbers(read: FileText, offsets: list[int]) -> list[int]:
    """The distinct 1-based lines the offsets (in ascending order) fall on."""
    lines: list[int] = []
    for offset in offsets:
        line = bisect.bisect_right(read.line_starts, offset)
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def _listed(lines: list[int]) -> str:
    """ "line 4" or "lines 4, 10 and 22", at most MAX_LISTED_LINES of them."""
    if len(lines) == 1:
        return f"line {lines[0]}"
    shown = ", ".join(str(n) for n in lines[:MAX_LISTED_LINES])
    if len(lines) > MAX_LISTED_LINES:
        return f"lines {shown} and {len(lines) - MAX_LISTED_LINES} more"
    head, _, tail = shown.rpartition(", ")
    return f"lines {head} and {tail}"


def _absent_message(read: FileText, search: str) -> str:
    """Why a search text may have missed, with a hint where one is cheap to give."""
    message = (
        f"the search text was not found in {read.path!r}; it must match the file exactly,"
        " whitespace, indentation and line endings included: read the file again and copy"
        " the text from it"
    )
    if "\r\n" in search and "\r\n" not in read.text:
        return f"{message} (the search text has CRLF line endings, the file has none)"
    # The first non-blank line, stripped, found elsewhere usually means the indentation or
    # a later line differs; listing where it is saves the agent a search.
    first = next((line.strip() for line in search.splitlines() if line.strip()), "")
    if first and first != search:
        lines = _line_numbers(read, _occurrences(read.text, first))
        if 0 < len(lines) <= MAX_LISTED_LINES:
            message += f" (its first line, {first!r}, is at {_listed(lines)})"
    return message


def _lines_of(text: str, start: int, put: str) -> tuple[int, int]:
    """First and last 1-based line of put, which starts at offset start of the new text."""
    first = text.count("\n", 0, start) + 1
    if not put:
        # A deletion at the very end may leave first one past the last line; it is capped
        # so the lines named always exist (line 1 of an emptied file).
        total = text.count("\n") + (0 if text.endswith("\n") else 1) if text else 1
        first = min(first, max(total, 1))
        return first, first
    # The last character of put ends its last line; a trailing newline starts no new one.
    return first, first + put.count("\n", 0, len(put) - 1)


def _write_over(real: Path, before: bytes, after: bytes, shown: str) -> None:
    """Puts after in place of the file at real, atomically, if it still holds before.

    Every step goes through one descriptor of the file's directory, so the temporary file,
    the check and the replace all happen in the directory that was checked.

    Raises:
        Aborted: the file no longer holds before.
        PermissionDenied: the file is read-only to the server, or its directory unwritable
            or moved.
        ResourceExhausted: no space left.
        OSError: any other failure of the filesystem.
    """
    try:
        dir_fd = os.open(real.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        _raise_mapped(exc, shown)
    try:
        _check_directory(dir_fd, real.parent, shown)
        # rename() ignores the file's own mode, so a file the server could not write in
        # place is refused here rather than silently replaced.
        if not os.access(real.name, os.W_OK, dir_fd=dir_fd, follow_symlinks=False):
            raise PermissionDenied(f"{shown!r} is read-only to the server")
        # Hidden and short enough for NAME_MAX whatever the file's name.
        temp = f".{real.name[:60]}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, 0o600, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(after)
                out.flush()
                info = _unchanged(real.name, dir_fd, before, shown)
                _copy_owner_and_mode(out.fileno(), info)
                os.fsync(out.fileno())
            os.replace(temp, real.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        # The edit is in place and visible by now; some filesystems refuse to sync a
        # directory, which must not turn a done edit into a reported failure.
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
    except OSError as exc:
        _raise_mapped(exc, shown)
    finally:
        os.close(dir_fd)


def _check_directory(dir_fd: int, expected: Path, shown: str) -> None:
    """The opened directory is the one resolved, not a symlink swapped in on the way."""
    try:
        opened = os.readlink(f"/proc/self/fd/{dir_fd}")
    except OSError:  # no /proc: the resolve and O_NOFOLLOW are the check
        return
    if opened != str(expected):
        raise PermissionDenied(f"the directory of {shown!r} moved while it was being edited")


def _unchanged(name: str, dir_fd: int, before: bytes, shown: str) -> os.stat_result:
    """The file's status, after checking it still holds exactly before.

    Raises:
        Aborted: it is gone, no longer a regular file, or its bytes differ.
    """
    changed = Aborted(
        f"{shown!r} changed since it was read, while the edit was being made: read it again"
        " and retry the edit"
    )
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError as exc:
        raise changed from exc
    with os.fdopen(fd, "rb") as current:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(before):
            raise changed
        if current.read(len(before) + 1) != before:
            raise changed
    return info


def _copy_owner_and_mode(fd: int, info: os.stat_result) -> None:
    """Gives the temporary file the old file's owner when allowed, and its permission bits."""
    # Only root may give a file away; an owner may still set a group it belongs to.
    try:
        os.fchown(fd, info.st_uid, info.st_gid)
    except PermissionError:
        with contextlib.suppress(PermissionError):
            os.fchown(fd, -1, info.st_gid)
    # After fchown, which clears the set-user-ID and set-group-ID bits.
    os.fchmod(fd, stat.S_IMODE(info.st_mode))


def _raise_mapped(exc: OSError, shown: str) -> NoReturn:
    """Raises the domain error for a filesystem failure a caller can act on, else exc."""
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        raise PermissionDenied(f"cannot write {shown!r}: {exc.strerror}") from exc
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        raise ResourceExhausted(f"cannot write {shown!r}: {exc.strerror}") from exc
    raise exc
