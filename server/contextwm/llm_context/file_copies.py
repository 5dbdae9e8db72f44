"""Duplicate file reads: a newer whole copy of a file supersedes the older ones."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from contextwm.domain.active import Replacement
from contextwm.domain.history import ContextEdit, EditKind
from contextwm.domain.items import Item
from contextwm.ports.tokens import TokenCounter


def duplicate_notice(path: str, seq: int, newer: int) -> str:
    """The one line shown instead of a superseded copy of a file."""
    return (
        f"[file {path}: this copy (seq {seq}) is omitted because the whole file appears again"
        f" at seq {newer}; the stored item is unchanged]"
    )


@dataclass(frozen=True, slots=True)
class Superseded:
    """What new items do to the file copies: edits to record, the notices to show (counted
    once, here), and the newest copy per path."""

    edits: tuple[ContextEdit, ...]
    replacements: tuple[Replacement, ...]
    copies: Mapping[str, int]


def supersede(
    copies: Mapping[str, int],
    items: Sequence[Item],
    *,
    tokens_of: Callable[[int], int],
    counter: TokenCounter,
    at: float,
    first_edit_id: int,
    replace: bool,
) -> Superseded:
    """Finds the copies the new items supersede.

    Args:
        copies: per path, the seq of the newest item holding the whole file so far.
        items: new items in seq order; those whose file reference carries the whole file
            (a read, or a write marked whole_file) become the newest copy of their path.
        tokens_of: the stored token count of an older item, by seq.
        counter: counts the notices in the conversation's encoding.
        at: the time to record.
        first_edit_id: the id of the first edit; the rest follow on.
        replace: the conversation's replace_duplicate_reads; when False no edits are made
            but the newest copies are still tracked.

    Returns:
        One duplicate_read edit per superseded copy (its notice in detail) with the notice as
        a Replacement, and the paths' newest copies after the items.
    """
    whole = [i for i in items if i.file is not None and i.file.carries_whole_file]
    if not whole:  # most appends: no copy of the mapping
        return Superseded((), (), copies)
    newest = dict(copies)
    edits: list[ContextEdit] = []
    replacements: list[Replacement] = []
    for item in whole:
        assert item.file is not None
        path = item.file.path
        older = newest.get(path)
        newest[path] = item.seq
        if older is None or not replace:
            continue
        notice = duplicate_notice(path, older, item.seq)
        notice_tokens = counter.count(notice)
        replacements.append(Replacement(older, notice, notice_tokens))
        edits.append(
            ContextEdit(
                id=first_edit_id + len(edits),
                at=at,
                kind=EditKind.DUPLICATE_READ,
                seqs=(older,),
                related_seq=item.seq,
                tokens_saved=max(0, tokens_of(older) - notice_tokens),
                detail=notice,
            )
        )
    return Superseded(tuple(edits), tuple(replacements), newest)
