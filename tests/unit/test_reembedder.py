"""The re-embedding core on an engine, with two hashing models standing for the old and the
new one: the refusal of dense ranking on stale conversations, the runs' reports, items
appended during a run, a cancelled run and its resumption, deleted conversations, scopes, and
one run at a time."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.adapters.faiss_index import FaissIndexFiles
from contextwm.adapters.sqlite import SqliteStore
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.conversations.embedding_model import require_current, stale_model
from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.validation import scope_of
from contextwm.domain.conversations import SettingsPatch
from contextwm.domain.errors import FailedPrecondition, InvalidArgument, Unavailable
from contextwm.domain.items import NewItem
from contextwm.domain.scope import Scope
from contextwm.reembedding.progress import ReembedProgress
from contextwm.reembedding.reembedder import Reembedder
from contextwm.reembedding.runs import Run, Runs

OLD, NEW = HashingEmbedder(32), HashingEmbedder(16)
ITEMS = 7
BATCH = 3


def engine_on(tmp_path: Path, embedder: HashingEmbedder) -> ContextEngine:
    return ContextEngine(
        SqliteStore(tmp_path / "db.sqlite3"),
        embedder,
        FaissIndexFiles(tmp_path / "indexes" / embedder.model_name, embedder.dimension),
        token_counter,
        index_wait_seconds=0.0,
    )


def embed_pending(engine: ContextEngine) -> None:
    """What the indexer does, at once."""
    while pending := engine.store.pending_vectors(engine.embedder.model_name, 100):
        vectors = engine.embedder.embed([p.text for p in pending])
        for key in {p.conversation_key for p in pending}:
            rows = [n for n, p in enumerate(pending) if p.conversation_key == key]
            engine.vectors.apply(key, [pending[n].seq for n in rows], vectors[rows])


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[ContextEngine]:
    """Conversations a, b (namespace default) and c (namespace ops) of ITEMS items each,
    embedded with OLD, then opened by an engine embedding with NEW."""
    old = engine_on(tmp_path, OLD)
    for ns, cid in (("default", "a"), ("default", "b"), ("ops", "c")):
        old.create_conversation(ns, cid, SettingsPatch(window_max_items=2))
        old.append(
            ns, cid, [NewItem("user", f"{cid} note {n} about topic {n}") for n in range(ITEMS)]
        )
    embed_pending(old)
    rt = old.runtime("default", "a")
    with rt.lock:
        old.ensure_index(rt)
    old.save_indexes()
    old.store.close()
    new = engine_on(tmp_path, NEW)
    yield new
    new.store.close()


def reembedder(engine: ContextEngine, tmp_path: Path | None = None) -> Reembedder:
    files = (
        None
        if tmp_path is None
        else lambda model: FaissIndexFiles(tmp_path / "indexes" / model, 0, create=False)
    )
    return Reembedder(engine, NEW, batch_size=BATCH, index_files_of=files)


def run(r: Reembedder, scope: Scope) -> list[ReembedProgress]:
    return list(r.run(scope, threading.Event()))


def test_dense_ranking_on_a_stale_conversation_is_refused_with_the_fix(
    engine: ContextEngine,
) -> None:
    rt = engine.runtime("default", "a")
    assert stale_model(rt, NEW.model_name) == OLD.model_name
    require_current([rt], NEW.model_name, "lexical")
    with pytest.raises(FailedPrecondition) as one:
        require_current([rt], NEW.model_name, "hybrid")
    assert one.value.message == (
        "conversation 'a' of namespace 'default' holds vectors of hashing-32, but this server"
        " embeds with hashing-16: dense search on it needs it re-embedded first; run"
        " `contextwm reembed --namespace default a`; or ask in lexical mode meanwhile (this is"
        " hybrid mode)"
    )
    both = [rt, engine.runtime("default", "b")]
    with pytest.raises(FailedPrecondition, match=r"2 conversations \('a', 'b'\).*--namespace"):
        require_current(both, NEW.model_name, "dense")
    everywhere = [*both, engine.runtime("ops", "c")]
    with pytest.raises(FailedPrecondition, match="`contextwm reembed --all`"):
        require_current(everywhere, NEW.model_name, "dense")


def test_a_run_reports_its_plan_batches_and_conversations(
    engine: ContextEngine, tmp_path: Path
) -> None:
    old_file = tmp_path / "indexes" / OLD.model_name / f"{engine.runtime('default', 'a').key}.faiss"
    assert old_file.exists()
    reports = run(reembedder(engine, tmp_path), Scope("default"))
    plan, last = reports[0], reports[-1]
    assert plan == ReembedProgress(NEW.model_name, 0, 2, 0, 2 * ITEMS, 0, 0.0, "", "")
    # Batches of 3 of 7 items, then the conversation done, for a then b.
    assert [(r.conversation_id, r.items_done, r.conversations_done) for r in reports[1:-1]] == [
        ("a", 3, 0),
        ("a", 6, 0),
        ("a", 7, 0),
        ("a", 7, 1),
        ("b", 10, 1),
        ("b", 13, 1),
        ("b", 14, 1),
        ("b", 14, 2),
    ]
    assert last.finished and (last.items_done, last.items_total) == (2 * ITEMS, 2 * ITEMS)
    for cid in ("a", "b"):
        rt = engine.runtime("default", cid)
        assert stale_model(rt, NEW.model_name) is None and rt.pending == 0
        with rt.lock:  # the index is rebuilt, of the new vectors
            assert rt.index is not None
            archived = engine.store.archived_ids(rt.key, NEW.model_name)
            assert np.array_equal(np.sort(rt.index.ids()), archived) and len(archived) == 5
    assert not old_file.exists()
    assert stale_model(engine.runtime("ops", "c"), NEW.model_name) == OLD.model_name
    # Nothing left: a last report alone.
    (nothing,) = run(reembedder(engine), Scope("default"))
    assert nothing.finished and nothing.conversations_total == 0


def test_items_appended_during_a_run_are_embedded_and_counted(engine: ContextEngine) -> None:
    reports = reembedder(engine).run(Scope("default", "a"), threading.Event())
    next(reports)  # the plan
    next(reports)  # a first batch; the run waits here, as if the client were slow
    engine.append("default", "a", [NewItem("user", "appended while it is re-embedded")])
    rest = list(reports)
    assert rest[-1].finished and rest[-1].items_done == rest[-1].items_total == ITEMS + 1
    rt = engine.runtime("default", "a")
    assert rt.pending == 0 and engine.store.counts(rt.key, NEW.model_name).pending_vectors == 0


def test_a_cancelled_run_stops_after_the_batch_in_hand_and_the_next_resumes(
    engine: ContextEngine,
) -> None:
    cancelled = threading.Event()
    r = reembedder(engine)
    first = r.run(Scope(None), cancelled)
    assert next(first).conversations_total == 3
    assert next(first).items_done == BATCH
    cancelled.set()
    assert list(first) == []  # stopped: no more reports
    second = run(r, Scope(None))
    assert (second[0].items_reused, second[0].items_total) == (BATCH, 3 * ITEMS - BATCH)
    assert second[-1].items_done == 3 * ITEMS - BATCH
    assert engine.store.stale_conversations(NEW.model_name, None) == []


def test_a_conversation_deleted_before_its_turn_is_skipped(engine: ContextEngine) -> None:
    reports = reembedder(engine).run(Scope("default"), threading.Event())
    next(reports)
    engine.delete_conversation("default", "b")
    last = list(reports)[-1]
    # Counted as done, with none of its items embedded, or left to embed.
    assert last.finished and (last.conversations_done, last.conversations_total) == (2, 2)
    assert last.items_done == last.items_total == ITEMS
    assert engine.store.stale_conversations(NEW.model_name, "default") == []


def test_one_run_at_a_time_and_none_after_shutdown() -> None:
    runs = Runs()
    first = Run(Scope("default"), threading.Event())
    second = Run(Scope(None), threading.Event())
    with (
        runs.running(first),
        pytest.raises(FailedPrecondition, match="already running \\(namespace 'default'"),
        runs.running(second),
    ):
        pass
    with runs.running(Run(Scope(None), threading.Event())):
        pass  # free again
    runs.stop()
    with pytest.raises(Unavailable, match="shutting down"), runs.running(second):
        pass
    first.shutting_down = True
    with pytest.raises(Unavailable, match="resumes"):
        first.should_stop()


def test_scopes() -> None:
    assert scope_of("", "", False) == Scope("default")
    assert scope_of("ops", "c", False) == Scope("ops", "c")
    assert scope_of("", "", True) == Scope(None)
    for bad in (("ops", "", True), ("", "c", True), ("bad namespace!", "", False)):
        with pytest.raises(InvalidArgument):
            scope_of(*bad)
