"""The offline check of a data directory (`contextwm check`): reads the store and the index
files, writes nothing, and reports what is wrong with them."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from contextwm.adapters.faiss_index import FaissIndex, IndexFileError
from contextwm.adapters.sqlite.guard import UnusableStore, verify_store_file
from contextwm.adapters.sqlite.schema import SCHEMA_VERSION
from contextwm.adapters.sqlite.survey import ConversationFigures, StoreSurvey
from contextwm.datadir.findings import Report, count
from contextwm.datadir.layout import DataDir
from contextwm.domain.items import ItemState

_REBUILT = "the server rebuilds it from the stored vectors when the conversation is next searched"
_KNOWN_STATES = {int(s) for s in ItemState}
T = TypeVar("T")


def check_data_dir(data: DataDir, *, verbose: bool = False) -> Report:
    """Checks a data directory no server is running on.

    Args:
        data: the directory.
        verbose: also list every conversation with its figures.
    """
    report = Report(data.root)
    survey = _open_store(data, report)
    try:
        conversations: dict[int, ConversationFigures] | None = None
        widths: dict[str, int] | None = None
        if survey is not None:
            conversations, widths = _check_store(survey, report, verbose)
        _check_indexes(data, survey, conversations, widths, report)
    finally:
        if survey is not None:
            survey.close()
    return report


def _open_store(data: DataDir, report: Report) -> StoreSurvey | None:
    """The store opened for reading, or None (with a problem said) when it cannot be."""
    store = data.store
    if not store.exists() and not store.is_symlink():
        report.problem(
            "store", f"{store} is missing; the directory's other files are derived from it"
        )
        return None
    wal = store.with_name(store.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        report.note(
            "store",
            f"{wal.name} holds transactions not yet copied into the database (the last server"
            " did not stop cleanly); they are read as part of the store",
        )
    try:
        verify_store_file(store, scan=False)  # the full integrity_check comes next
        return StoreSurvey(store)
    except UnusableStore as exc:
        report.problem("store", str(exc))
    except sqlite3.Error as exc:
        report.problem("store", f"{store} cannot be read: {exc}")
    return None


def _check_store(
    survey: StoreSurvey, report: Report, verbose: bool
) -> tuple[dict[int, ConversationFigures] | None, dict[str, int] | None]:
    """SQLite's integrity, the schema, the vectors and every conversation's invariants.
    Returns the conversations by key and each model's vector width (None when unreadable)."""
    try:
        integrity = survey.integrity()
    except sqlite3.DatabaseError as exc:  # too damaged even to list what is wrong
        integrity = [str(exc)]
    if integrity != ["ok"]:
        report.problem("store", f"SQLite's integrity_check reports: {'; '.join(integrity)}")
    version = _read(report, "schema version", survey.schema_version)
    if version is None or not version.isdigit():
        report.problem("store", f"no valid schema version ({version!r})")
    elif int(version) > SCHEMA_VERSION:
        report.problem(
            "store", f"schema version {version} is newer than this contextwm's: upgrade it"
        )
        return None, None
    elif int(version) < SCHEMA_VERSION:
        report.note("store", f"schema version {version}: a server migrates it when it starts")
    report.line(
        f"store: {survey.path.name}, {_size(survey.path)}, "
        f"integrity {'ok' if integrity == ['ok'] else 'FAILED'}, schema version {version}"
    )
    violations = _read(report, "foreign keys", survey.foreign_key_violations)
    if violations:
        report.problem(
            "store",
            f"foreign_key_check: {count(violations, 'row')} whose conversation or item is gone",
        )
    words = _read(report, "full-text index", survey.word_index_rows)
    if words is not None and words[0] != words[1]:
        report.problem(
            "store",
            f"{words[0]} items but {words[1]} rows in the full-text index: word search"
            " misses items or finds deleted ones",
        )
    widths = _check_widths(survey, report)
    figures = _read(report, "conversations", lambda: list(survey.conversations()))
    if figures is None:
        return None, widths
    _summarise(figures, widths or {}, report)
    for conversation in figures:
        _check_conversation(conversation, report, verbose)
    return {c.key: c for c in figures}, widths


def _check_widths(survey: StoreSurvey, report: Report) -> dict[str, int] | None:
    """Each model's vector width in floats (None when unreadable); a model whose vectors
    differ in length is a problem (its conversations' indexes cannot be built)."""
    stored = _read(report, "vectors", survey.vector_widths)
    if stored is None:
        return None
    widths: dict[str, int] = {}
    for model, lengths in stored.items():
        usual = max(lengths, key=lambda n: lengths[n])
        widths[model] = usual // 4
        odd = sum(n for length, n in lengths.items() if length != usual or length % 4)
        if odd or usual % 4:
            report.problem(
                "store",
                f"{count(odd or lengths[usual], 'stored vector')} of {model} not {usual} bytes"
                " long like the others: its indexes cannot be built",
            )
    return widths


def _check_conversation(c: ConversationFigures, report: Report, verbose: bool) -> None:
    subject = f"conversation {c.namespace}/{c.conversation_id}"
    if c.settings is None:
        report.problem(subject, f"its settings do not decode ({c.settings_error})")
    unknown = sorted(set(c.states) - _KNOWN_STATES)
    if unknown:
        report.problem(subject, f"items in unknown states {unknown}")
    if c.items:
        assert c.first_seq is not None and c.top_seq is not None
        # Every seq up to the last one is an item's or counted removed: retention removes
        # archived items, an erasure any (the newest too), and both count what they removed.
        accounted = c.items + c.removed
        if c.top_seq > c.last_seq:
            report.problem(
                subject,
                f"an item has seq {c.top_seq}, past the last seq {c.last_seq} the conversation"
                " records: its next append would fail",
            )
        elif c.last_seq > c.top_seq and accounted == c.top_seq:
            report.problem(subject, f"the last seq is {c.last_seq} but the newest item {c.top_seq}")
        elif c.first_seq < 1 or accounted != c.last_seq:
            removed = f" and the {c.removed} removed" if c.removed else ""
            report.problem(
                subject,
                f"its {c.items} items{removed} have seqs {c.first_seq}..{c.top_seq}: items"
                " are missing",
            )
    elif c.last_seq != c.removed:
        report.problem(subject, f"the last seq is {c.last_seq} but it has no items")
    window = c.states.get(int(ItemState.WINDOW), 0)
    if c.settings is not None:
        token_limit = c.token_limit or c.settings.window_max_tokens
        if window > c.settings.window_max_items or c.window_tokens > token_limit:
            report.note(
                subject,
                f"its window holds {window} items and {c.window_tokens} tokens, over its limits"
                f" ({c.settings.window_max_items} items, {token_limit} tokens): the next append"
                " evicts (a server stopped between a restore or a settings change and the"
                " evictions that follow it)",
            )
    if verbose:
        states = ", ".join(
            f"{n} {ItemState(s).name.lower() if s in _KNOWN_STATES else f'state {s}'}"
            for s, n in sorted(c.states.items())
        )
        vectors = ", ".join(f"{n} {model}" for model, n in sorted(c.vectors.items()))
        report.line(
            f"{c.namespace}/{c.conversation_id} (key {c.key}): {c.items} items"
            f" ({states or 'none'}{f', {c.removed} removed' if c.removed else ''}),"
            f" last seq {c.last_seq}, window {window} items and"
            f" {c.window_tokens} tokens,"
            f" vectors: {vectors or 'none'}"
        )


def _summarise(figures: list[ConversationFigures], widths: dict[str, int], report: Report) -> None:
    items = sum(c.items for c in figures)
    by_state = {state: sum(c.states.get(int(state), 0) for c in figures) for state in ItemState}
    states = ", ".join(f"{n} {s.name.lower()}" for s, n in by_state.items() if n)
    conversations = "conversation" if len(figures) == 1 else "conversations"
    report.line(
        f"{len(figures)} {conversations}, {items} item{'' if items == 1 else 's'}"
        f" ({states or 'none'})"
    )
    for model in sorted(widths):
        embedded = sum(c.vectors.get(model, 0) for c in figures)
        report.line(f"vectors of {model} ({widths[model]} floats): {embedded} of {items} items")
        if embedded < items:
            waiting = sum(1 for c in figures if c.vectors.get(model, 0) < c.items)
            report.note(
                "store",
                f"{items - embedded} items in {waiting} conversations have no vector of"
                f" {model} yet: a server using that model embeds them when it runs (those of"
                " conversations whose vectors come from another model, once `contextwm reembed`"
                " is run)",
            )


def _check_indexes(
    data: DataDir,
    survey: StoreSurvey | None,
    conversations: dict[int, ConversationFigures] | None,
    widths: dict[str, int] | None,
    report: Report,
) -> None:
    """Every index file: readable, of its model's width, holding what the store says (as
    far as the store could be read: survey, conversations or widths None when not)."""
    if not data.indexes.is_dir():
        report.line("indexes: none yet (built from the stored vectors when searched)")
        return
    for model_dir in sorted(data.indexes.iterdir()):
        model = model_dir.name
        where = str(model_dir.relative_to(data.root))
        if not model_dir.is_dir():
            report.note(where, "not a model's folder; contextwm does not use it")
            continue
        files = sorted(model_dir.iterdir())
        report.line(f"indexes of {model}: {sum(f.suffix == '.faiss' for f in files)} files")
        if widths is not None and model not in widths:
            report.note(where, f"the store has no vectors of {model}: unused files")
        for path in files:
            subject = str(path.relative_to(data.root))
            if path.name.endswith(".faiss.tmp"):
                report.note(subject, "left over from a save that was interrupted; unused")
            elif path.suffix != ".faiss" or not path.stem.isdigit():
                report.note(subject, "not an index file; contextwm does not use it")
            elif conversations is not None and int(path.stem) not in conversations:
                report.note(subject, f"no conversation has key {path.stem}: unused")
            else:
                _check_index_file(path, subject, model, survey, widths, report)


def _check_index_file(
    path: Path,
    subject: str,
    model: str,
    survey: StoreSurvey | None,
    widths: dict[str, int] | None,
    report: Report,
) -> None:
    key = int(path.stem)
    try:
        index = FaissIndex.read(path)
    except IndexFileError as exc:
        # An index file is a cache of the stored vectors: damage to it is repaired, not lost.
        report.note(subject, f"{exc.reason}; {_REBUILT}, nothing is lost")
        return
    width = None if widths is None else widths.get(model)
    if width is not None and index.dimension != width:
        report.note(
            subject,
            f"has dimension {index.dimension}, the stored vectors {width}; {_REBUILT}",
        )
        return
    if survey is None or width is None:
        return
    what = f"vectors of conversation key {key}"
    expected = _read(report, what, lambda: survey.archived_ids(key, model))
    if expected is None:
        return
    ids = np.sort(index.ids())
    if not np.array_equal(ids, expected):
        missing = len(np.setdiff1d(expected, ids))
        extra = len(np.setdiff1d(ids, expected))
        report.note(
            subject,
            f"stale: holds {len(ids)} vectors, the store {len(expected)} ({missing} missing,"
            f" {extra} not archived); {_REBUILT}",
        )
        return
    try:
        stored = _read(report, what, lambda: survey.archived_vectors(key, model))
    except ValueError:  # vectors of odd widths: a problem said by _check_widths
        return
    if stored is None or len(stored[0]) == 0:
        return
    if not np.allclose(index.vectors(stored[0].tolist()), stored[1], atol=1e-6):
        report.note(subject, f"its vectors are not the stored ones; {_REBUILT}")


def _size(path: Path) -> str:
    """The file's size with its -wal file, in KiB or MiB."""
    wal = path.with_name(path.name + "-wal")
    size = path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    return f"{size / 2**10:.0f} KiB" if size < 2**20 else f"{size / 2**20:.1f} MiB"


def _read(report: Report, what: str, read: Callable[[], T]) -> T | None:
    """read(), or None with a problem said when the store is too damaged to answer."""
    try:
        return read()
    except sqlite3.DatabaseError as exc:
        report.problem("store", f"cannot read the {what}: {exc}")
        return None
