"""Re-embedding after a change of embedding model, through a real server: conversations whose
vectors come from the old model refuse dense search (lexical search and appends still work)
and are left alone by the indexer; a re-embed runs while the server serves other calls, stops
when cancelled and resumes where it stopped; afterwards dense search answers as a fresh
embedding with the new model ranks, also after a restart."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import StartService
from contextwm.app import Service
from contextwm.ports.embedder import Embedder
from contextwm_client import (
    Client,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
)
from stale_conversations import (
    ITEMS,
    OLD_MODEL,
    QUERY,
    STALE,
    TOPICS,
    WatchedEmbedder,
    content,
    vector_models,
    write_stale_data,
)

# The paths that differ by store: each test runs on SQLite, then PostgreSQL.
pytestmark = pytest.mark.both_stores

DEFAULT = [cid for ns, cid in STALE if ns == "default"]
BATCH = 8


@pytest.fixture
def data_dir(tmp_path: Path, start_service: StartService) -> Path:
    """A data directory whose conversations all hold vectors of the hashing model."""
    path = tmp_path / "stale"
    write_stale_data(start_service, path)
    return path


def test_stale_conversations_refuse_dense_search_and_wait_for_a_reembed(
    start_service: StartService, data_dir: Path, embedder: Embedder
) -> None:
    # The same data served with the bundled model.
    service = start_service(data_dir=data_dir)
    model, store = embedder.model_name, service.settings.store
    with Client(f"127.0.0.1:{service.port}") as client:
        calls: dict[str, Callable[[], object]] = {
            "dense search": lambda: client.search(QUERY, conversation_id="a", mode="dense"),
            "hybrid search": lambda: client.search(QUERY, conversation_id="a"),
            "context": lambda: client.get_context("a", QUERY, max_tokens=400),
            "context by category": lambda: client.get_context(
                "a", QUERY, max_tokens=400, categories=True
            ),
            "context in recent-share layout": lambda: client.get_context(
                "a", QUERY, max_tokens=400, recent_share=0.5, mode="dense"
            ),
        }
        for what, call in calls.items():
            with pytest.raises(FailedPreconditionError) as refused:
                call()
            message = refused.value.details
            assert OLD_MODEL in message and model in message, what
            assert "contextwm reembed --namespace default a" in message, what
        # A namespace-wide search that includes stale conversations is refused as a whole.
        with pytest.raises(FailedPreconditionError, match="contextwm reembed --namespace default"):
            client.search(QUERY)

        # Lexical calls and appends work.
        hits = client.search("rudder cable fjord", conversation_id="a", mode="lexical").hits
        assert hits and "kayak rudder cable" in hits[0].content
        ctx = client.get_context("a", "kayak rudder cable", max_tokens=400, mode="lexical")
        assert "kayak rudder cable" in ctx.text
        appended = client.append("a", "a new note about the rudder cable", role="user")
        assert appended.seq == ITEMS + 1

        # The indexer leaves stale conversations to the re-embed: a current conversation's
        # items get embedded (dense search waits for them), the stale ones' do not.
        client.append_batch(
            "fresh", [{"content": content("default", "fresh", n)} for n in range(6)]
        )
        client.search(QUERY, conversation_id="fresh", mode="dense", include_window=True)
        assert client.get_conversation("fresh").pending_embeddings == 0
        assert client.get_conversation("a").pending_embeddings == ITEMS + 1
        stale_keys = {service.engine.runtime(ns, cid).key for ns, cid in STALE}
        waiting = service.engine.store.pending_vectors(model, 10_000)
        assert not {p.conversation_key for p in waiting} & stale_keys
        assert vector_models(data_dir, store) == {OLD_MODEL: len(STALE) * ITEMS, model: 6}

        # Scopes the request cannot mean are refused before anything runs.
        with pytest.raises(NotFoundError):
            next(client.reembed("no-such-conversation"))
        with pytest.raises(InvalidArgumentError, match="all_namespaces"):
            next(client.reembed("a", all_namespaces=True))
        # A current conversation has nothing to re-embed.
        (report,) = list(client.reembed("fresh"))
        assert report.finished and report.conversations_total == report.items_total == 0


class StaleAppends:
    """Appends to a stale conversation from its own thread while allowed; `pause` returns once
    no append is in flight."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._on = False
        self._busy = False
        self.stopped = False

    def allow(self) -> None:
        with self._changed:
            self._on = True
            self._changed.notify_all()

    def pause(self) -> None:
        with self._changed:
            self._on = False
            self._changed.wait_for(lambda: not self._busy)

    def stop(self) -> None:
        with self._changed:
            self.stopped = True
            self._changed.notify_all()

    def next_turn(self) -> bool:
        """Waits until appending is allowed; False once stopped."""
        with self._changed:
            self._changed.wait_for(lambda: self._on or self.stopped)
            self._busy = not self.stopped
            return self._busy

    def done(self) -> None:
        with self._changed:
            self._busy = False
            self._changed.notify_all()


class Traffic:
    """Other clients calling while a re-embed runs, each in its own thread: agents appending
    to current conversations and asking for search or context after each append (which waits
    for the append's vector, so they go at the embedder's pace), and appends to the stale
    conversation "b" (gated by `stale`), each followed by a lexical search of it."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.stale = StaleAppends()
        self.calls: Counter[str] = Counter()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._guarded, args=(run,), daemon=True)
            for run in (self._search_live, self._context_live, self._append_stale)
        ]

    def __enter__(self) -> Traffic:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.stale.stop()
        for thread in self._threads:
            thread.join(60)

    def _guarded(self, run: Callable[[Client], None]) -> None:
        with Client(self.target) as client:
            try:
                run(client)
            except Exception as exc:  # reported by the test: no call may fail
                self.errors.append(f"{run.__name__}: {exc!r}")

    def _search_live(self, client: Client) -> None:
        n = 0
        while not self._stop.is_set():
            client.append("live-0", content("default", "live-0", n))
            client.search(QUERY, conversation_id="live-0", mode="dense", include_window=True)
            self.calls["append and search"] += 1
            n += 1

    def _context_live(self, client: Client) -> None:
        n = 0
        while not self._stop.is_set():
            client.append("live-1", content("default", "live-1", n))
            client.get_context("live-1", QUERY, max_tokens=300)
            self.calls["append and context"] += 1
            n += 1

    def _append_stale(self, client: Client) -> None:
        n = ITEMS
        while self.stale.next_turn():
            try:
                client.append("b", content("default", "b", n))
                client.search(TOPICS[n % len(TOPICS)], conversation_id="b", mode="lexical")
            finally:
                self.stale.done()
            self.calls["append stale and search"] += 1
            n += 1


def _top_archived_seq(client: Client, embedder: Embedder, cid: str) -> int:
    """The archived item a fresh embedding with the model ranks first for QUERY."""
    archived = list(client.iter_items(cid, states=["archived"]))
    vectors = embedder.embed([i.content for i in archived])
    similarities = vectors @ embedder.embed([QUERY])[0]
    assert float(similarities.max()) > 0.3  # above the dense threshold: a real answer
    return archived[int(np.argmax(similarities))].seq


def _assert_current(service: Service, client: Client, embedder: Embedder, cid: str) -> None:
    """Dense search on cid answers as a fresh embedding ranks, and its index holds exactly
    its archived items."""
    hits = client.search(QUERY, conversation_id=cid, mode="dense", top_k=1).hits
    assert [h.seq for h in hits] == [_top_archived_seq(client, embedder, cid)], cid
    assert client.get_context(cid, QUERY, max_tokens=400).unindexed_items == 0
    assert client.get_conversation(cid).pending_embeddings == 0
    archived = {i.seq for i in client.iter_items(cid, states=["archived"])}
    with service.engine.holding("default", cid) as rt:
        assert rt.index is not None
        assert set(rt.index.ids().tolist()) == archived, cid


def test_a_reembed_runs_beside_other_calls_stops_when_cancelled_and_resumes(
    start_service: StartService, data_dir: Path, embedder: Embedder
) -> None:
    # Only a re-embed embeds items of "b" (the indexer leaves stale conversations alone).
    watched = WatchedEmbedder(embedder, "in default/b)")
    service = start_service(data_dir=data_dir, indexer_batch_size=BATCH, model=watched)
    model, store = embedder.model_name, service.settings.store
    target = f"127.0.0.1:{service.port}"
    old_index = {
        cid: data_dir / "indexes" / OLD_MODEL / f"{service.engine.runtime(ns, cid).key}.faiss"
        for ns, cid in STALE
    }
    assert all(f.exists() for f in old_index.values())
    with Client(target) as client, Traffic(target) as traffic:
        # The first run re-embeds "a", then holds a batch of "b" it cannot store while the
        # test holds b's lock; then it is cancelled.
        with service.engine.holding("default", "b"):
            first = client.reembed()
            plan = next(first)
            assert (plan.model, plan.conversations_total, plan.items_total) == (
                model,
                3,
                3 * ITEMS,
            )
            assert (plan.items_done, plan.items_reused, plan.finished) == (0, 0, False)
            traffic.stale.allow()  # "b" gets appends while it is re-embedded
            a_done = next(p for p in first if p.conversations_done == 1)
            assert (a_done.conversation_id, a_done.items_done) == ("a", ITEMS)
            assert watched.seen.wait(60)  # b's first batch is in hand
            with pytest.raises(FailedPreconditionError, match="already running"):
                next(client.reembed("c"))
            first.close()  # cancels: the server stores the batch in hand, then stops
        # What the first run finished stays finished, before any other run.
        _assert_current(service, client, embedder, "a")

        traffic.stale.pause()
        totals = {cid: client.get_conversation(cid).total_items for cid in DEFAULT}
        # Started at once, the second run waits for the cancelled one to stop.
        reports = client.reembed()
        resumed = next(reports)  # its plan
        traffic.stale.allow()  # "b" gets appends again, while the second run goes on
        second = [resumed, *reports]
    assert traffic.errors == []
    assert len(traffic.calls) == 3 and min(traffic.calls.values()) > 0, traffic.calls

    last = second[-1]
    # Only the rest: "a" is not done again, and of "b" only what the first run left.
    scope = {r.conversation_id for r in second[1:]}
    assert "a" not in scope and "c" in scope
    assert resumed.items_reused >= BATCH if "b" in scope else resumed.items_reused == 0
    assert resumed.items_reused + resumed.items_total == sum(totals[cid] for cid in scope)
    assert last.finished and last.conversations_done == last.conversations_total == len(scope)
    assert last.items_done >= resumed.items_total  # and what "b" got meanwhile
    assert [r.items_done for r in second] == sorted(r.items_done for r in second)
    with Client(target) as client:
        for cid in DEFAULT:
            _assert_current(service, client, embedder, cid)
            assert not old_index[cid].exists()  # made of the dropped vectors
        assert vector_models(data_dir, store, "default").keys() == {model}
        # The other namespace was not in the scope: still stale, until it is re-embedded.
        with pytest.raises(FailedPreconditionError, match="reembed --namespace ops d"):
            client.search(QUERY, conversation_id="d", mode="dense", namespace="ops")
        plan, *_, done = client.reembed(all_namespaces=True)
        assert (plan.conversations_total, plan.items_total, done.items_done) == (1, ITEMS, ITEMS)
        client.search(QUERY, conversation_id="d", mode="dense", namespace="ops")
        assert vector_models(data_dir, store).keys() == {model}
        hits = {
            cid: client.search(QUERY, conversation_id=cid, mode="dense").hits for cid in DEFAULT
        }

    service.stop(grace=0)
    again = start_service(data_dir=data_dir)
    with Client(f"127.0.0.1:{again.port}") as client:
        for cid in DEFAULT:
            assert client.search(QUERY, conversation_id=cid, mode="dense").hits == hits[cid]
            _assert_current(again, client, embedder, cid)
    assert vector_models(data_dir, store).keys() == {model}
