"""Erasure through real gRPC: a conversation whose user=42 items sit in every place a text can
reach (window, archive, a compaction summary and its ledger, a checkpoint, a file read and the
server's chunk cache, superseded file copies, kept events) is made to forget them; then every
read path is asked for their canary words and finds none, on both stores, before and after a
restart (and on SQLite, neither do the raw bytes of the database file and its log); what else
was there is intact; the receipt counts what was there and its digest is the one an auditor
computes from an export taken before."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import StartService
from contextwm.adapters.faiss_index import FaissIndex
from contextwm.adapters.fts5_terms import Fts5Terms
from contextwm.app import Service
from contextwm.datadir.checkup import check_data_dir
from contextwm.datadir.layout import DataDir
from contextwm_client import (
    Client,
    ConversationSettings,
    ErasureReceipt,
    Event,
    FileRef,
    InvalidArgumentError,
    NotFoundError,
)

NS = "audit"
MAIN, OTHER = "main", "other"
USER = {"user": "42"}
# Made-up words, one per erased item: nothing else in the conversation holds them, and the
# full-text index keeps them whole (their stems are themselves), so the raw bytes can be
# searched for them too.
CANARIES = ("zorblaxqi", "quixotrqe", "vexmantlq", "plumbagqx", "kestrivqo", "gantholqy")
PLAN = "notes/plan.txt"


def auditor_digest(lines: Iterable[str], erased: dict[str, set[int]]) -> str:
    """The receipt's digest, computed the way docs/security.md tells an auditor to, from the
    lines of an export taken before the erasure."""
    found: list[tuple[bytes, int, str, str]] = []
    namespace = ""
    for line in lines:
        record = json.loads(line)
        if record["type"] == "conversation":
            namespace, cid = record["namespace"], record["conversation_id"]
        elif record["type"] == "item" and record["seq"] in erased.get(cid, set()):
            found.append((cid.encode(), record["seq"], cid, record["content"]))
    digest = hashlib.sha256()
    for _, seq, cid, content in sorted(found):
        for field in (namespace, cid, str(seq), content):
            data = field.encode()
            digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def build(client: Client, workspace: Path) -> None:
    """The conversation: user=42 items everywhere a text can reach, among others."""
    client.create_conversation(
        MAIN, settings=ConversationSettings(window_max_items=6), namespace=NS
    )

    def say(text: str, *, user: bool = False, **kw: Any) -> int:
        return client.append(MAIN, text, metadata=USER if user else None, namespace=NS, **kw).seq

    say("I am planning a trip to the mountains in spring.")
    say(f"My passport number is {CANARIES[0]} 55 and I live near the old harbour.", user=True)
    say("Noted: a spring trip to the mountains.", role="assistant")
    # An instruction: the fact ledger records it verbatim.
    say(f"Always book the aisle seat; my loyalty code is {CANARIES[1]}.", user=True)
    # A file read by this user (the server's chunk cache holds the file as well).
    (workspace / PLAN).write_text(f"Day 1: hike to the {CANARIES[2]} hut.\nDay 2: rest.\n")
    client.read_file_chunk(MAIN, PLAN, record=False, namespace=NS)
    plan = (workspace / PLAN).read_text()
    say(plan, user=True, role="tool", file=FileRef(PLAN, "read", whole_file=True))
    # A copy superseded by a later whole read: a duplicate-read edit names it.
    say(f"old notes: {CANARIES[4]} list", user=True, role="tool", file=FileRef("old.txt", "read"))
    say("old notes: the packing list", role="tool", file=FileRef("old.txt", "read"))
    for k in range(4):
        say(f"Train timetable question number {k} about the valley line.")
    # An LLM summary that quotes the first erased item word for word.
    client.compact(
        MAIN,
        "The user is planning a spring trip. They said: My passport number is"
        f" {CANARIES[0]} 55 and I live near the old harbour. Trains were discussed.",
        namespace=NS,
    )
    client.create_checkpoint(MAIN, "after-summary", namespace=NS)
    say(f"Remember my window note {CANARIES[3]} for later.", user=True)
    say("Which valley train leaves first in the morning?")
    say(f"Also my seat preference code is {CANARIES[5]}.", user=True, role="assistant")

    client.create_conversation(OTHER, namespace=NS)
    client.append(OTHER, "The valley line runs every hour.", metadata=USER, namespace=NS)
    client.append(OTHER, "Pack a rain jacket for the hut.", namespace=NS)


def texts_of(value: Any) -> str:
    """Every string inside a result, for a canary search."""
    return repr(value)


def has_canary(text: str) -> list[str]:
    return [c for c in CANARIES if c in text]


def watch_replay(client: Client) -> list[Event]:
    """The kept events from the first, up to the usage event that follows the erasure."""
    events: list[Event] = []
    erased = False
    with client.watch(MAIN, namespace=NS, timeout=30) as stream:
        for event in stream:
            events.append(event)
            erased = erased or event.kind == "erasure"
            if erased and event.kind == "usage":
                break
    return events


def everything_read(client: Client, erased: set[int]) -> Iterator[tuple[str, str]]:
    """(where, text) of every read path a caller has, for the canaries."""
    # What the erased items were about, in other words, and their canaries themselves (the
    # context's text repeats its query: there only the items it chose are looked at).
    about = "passport harbour loyalty aisle seat hike hut window note packing seat preference"
    ctx = client.get_context(MAIN, about, max_tokens=4000, namespace=NS)
    yield "GetContext", ctx.text
    queries = [f"{c} passport loyalty hike window note seat code" for c in CANARIES]
    for query in queries:
        ctx = client.get_context(MAIN, query, max_tokens=4000, namespace=NS)
        yield "GetContext", texts_of(ctx.recent) + texts_of(ctx.history)
        for mode in ("dense", "lexical", "hybrid"):
            for conversation in (MAIN, None):
                hits = client.search(
                    query,
                    conversation_id=conversation,
                    include_window=True,
                    top_k=50,
                    mode=mode,
                    similarity_threshold=-1.0,
                    namespace=NS,
                )
                where = f"Search {mode} in {conversation or 'the namespace'}"
                assert not [
                    h for h in hits.hits if h.item.conversation_id == MAIN and h.item.seq in erased
                ]
                yield where, texts_of(hits)
    for state in ("window", "archived", "compacted", "reverted"):
        items = list(client.iter_items(MAIN, states=[state], namespace=NS))
        assert not [i for i in items if i.seq in erased]
        yield f"ListItems {state}", texts_of(items)
    edits = list(client.iter_context_edits(MAIN, namespace=NS))
    assert not [e for e in edits if erased & set(e.seqs)]
    yield "ListContextEdits", texts_of(edits)
    yield "GetActiveContext", texts_of(list(client.iter_active_context(MAIN, namespace=NS)))
    yield "GetUsage", texts_of(client.get_usage(MAIN, namespace=NS))
    yield "Export", "\n".join(client.export(namespace=NS))
    yield "ListCheckpoints", texts_of(client.list_checkpoints(MAIN, namespace=NS))


def raw_bytes(data_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in data_dir.glob("contextwm.sqlite3*") if p.is_file()}


def grep(files: dict[str, bytes]) -> list[str]:
    return [f"{name}: {c}" for name, data in files.items() for c in CANARIES if c.encode() in data]


def index_file(service: Service, key: int) -> Path:
    return (
        service.settings.data_dir / "indexes" / service.engine.embedder.model_name / f"{key}.faiss"
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "notes").mkdir(parents=True)
    return root


@pytest.mark.both_stores
def test_forget_leaves_no_trace_of_the_items_anywhere_a_caller_or_the_disk_can_look(
    start_service: StartService, store_kind: str, workspace: Path, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    service = start_service(workspace_root=str(workspace), data_dir=data_dir)
    with Client(f"127.0.0.1:{service.port}") as client:
        build(client, workspace)
        # Every item embedded (a dense search waits for them), the namespace's index built,
        # and the index files written: all of them hold the items before.
        client.search("mountains", namespace=NS, mode="dense")
        client.search("mountains", conversation_id=MAIN, namespace=NS, mode="dense")
        service.engine.save_indexes()
        store = service.engine.store
        key = store.get_conversation(NS, MAIN).key  # type: ignore[union-attr]
        before = list(client.iter_items(MAIN, namespace=NS))
        erased = {
            i.seq for i in before if i.metadata.get("user") == "42" and i.kind != "compaction"
        }
        assert len(erased) == len(CANARIES)
        export = list(client.export(namespace=NS))
        assert all(c in "\n".join(export) for c in CANARIES)  # the test looks where they were
        facts = [f for f in store.facts(key) if f.seq in erased]
        held = set(FaissIndex.read(index_file(service, key)).ids().tolist())
        assert held & erased
        events_before = store.events_after(key, 0, 1000)
        assert service.engine.caches["workspace_chunks"].entries == 1  # type: ignore[attr-defined]
        if store_kind == "sqlite":
            assert len(grep(raw_bytes(data_dir))) >= len(CANARIES)  # where the grep will look

        with pytest.raises(InvalidArgumentError):
            client._invoke(client._stub.Forget, _empty_forget())
        with pytest.raises(NotFoundError):
            client.forget("nobody", metadata=USER, namespace=NS)
        receipt = client.forget(MAIN, metadata=USER, namespace=NS)

        # The receipt: what went, and the digest an auditor computes from the export.
        check_receipt(receipt, erased, before, facts, held, events_before)
        assert receipt.digest == auditor_digest(export, {MAIN: erased})
        assert service.engine.caches["workspace_chunks"].entries == 0  # type: ignore[attr-defined]
        assert client.get_session(MAIN, namespace=NS).view is None

        # Every read path, then the files.
        for where, text in everything_read(client, erased):
            assert has_canary(text) == [], where
        events = watch_replay(client)
        assert has_canary(texts_of(events)) == []
        assert [e.erased_seqs for e in events if e.kind == "erasure"] == [tuple(sorted(erased))]
        assert not [e for e in events if erased & set(e.eviction_seqs)]
        stats = client.get_stats(MAIN, namespace=NS).total
        assert stats.items == len(before) - len(erased)
        assert stats.missing_vectors <= 1  # the rewritten marker, embedded again
        index = FaissIndex.read(index_file(service, key))
        assert set(index.ids().tolist()) & erased == set()
        if store_kind == "sqlite":
            assert grep(raw_bytes(data_dir)) == []

        # What else was there is intact and still found.
        kept = [i for i in before if i.seq not in erased]
        assert [
            (i.seq, i.content)
            for i in client.iter_items(MAIN, namespace=NS)
            if i.kind != "compaction"
        ] == [(i.seq, i.content) for i in kept if i.kind != "compaction"]
        hits = client.search("valley line", namespace=NS, include_window=True, mode="lexical")
        assert {h.item.conversation_id for h in hits.hits} == {MAIN, OTHER}
        other = [i.content for i in client.iter_items(OTHER, namespace=NS)]
        assert other == ["The valley line runs every hour.", "Pack a rain jacket for the hut."]
        hits = client.search("rain jacket hut", namespace=NS, mode="dense", include_window=True)
        assert hits.hits and hits.hits[0].item.conversation_id == OTHER

        # A restore of the checkpoint brings back nothing erased.
        client.restore_checkpoint(MAIN, "after-summary", namespace=NS)
        for where, text in everything_read(client, erased):
            assert has_canary(text) == [], f"after the restore: {where}"

    service.stop(grace=0)
    again = start_service(workspace_root=str(workspace), data_dir=data_dir)
    with Client(f"127.0.0.1:{again.port}") as client:
        for where, text in everything_read(client, erased):
            assert has_canary(text) == [], f"after a restart: {where}"
        assert has_canary(texts_of(watch_replay(client))) == []
        assert client.forget(MAIN, metadata=USER, namespace=NS).counts.items == 0
    again.stop(grace=0)
    if store_kind == "sqlite":
        assert grep(raw_bytes(data_dir)) == []
        # The offline check finds the store and its index files consistent: the erased
        # items' seqs are counted as removed.
        report = check_data_dir(DataDir(data_dir))
        assert report.healthy, report.render()


def _empty_forget() -> Any:
    from contextwm_client.v1 import contextwm_pb2 as pb

    return pb.ForgetRequest(namespace=NS, conversation_id=MAIN)


def check_receipt(
    receipt: ErasureReceipt,
    erased: set[int],
    before: list[Any],
    facts: list[Any],
    held: set[int],
    events_before: list[Any],
) -> None:
    gone = [i for i in before if i.seq in erased]
    (conversation,) = receipt.conversations
    assert conversation.conversation_id == MAIN and not conversation.deleted
    assert {s for first, last in conversation.seqs for s in range(first, last + 1)} == erased
    counts = receipt.counts
    assert counts.items == len(erased)
    assert counts.tokens == sum(i.token_count for i in gone)
    # The items' vectors, and the rewritten marker's.
    assert counts.vectors == len(erased) + counts.markers
    assert counts.postings == sum(len(t) for t in Fts5Terms().terms([i.content for i in gone]))
    assert counts.facts == len(facts) > 0
    assert counts.index_entries == len(held & erased)
    # Every erased item, and the marker, were in the namespace-wide index.
    assert counts.namespace_index_entries == len(erased) + counts.markers
    assert (counts.compactions, counts.summaries, counts.markers) == (1, 1, 1)
    assert counts.checkpoints == 1
    assert counts.edits == 2  # the compaction's seqs, the duplicate read of the erased copy
    assert counts.sessions == 1  # it viewed the erased file read's file
    assert counts.chunk_cache_entries == 1
    touched = [e for e in events_before if _names(e.payload, erased)]
    assert counts.events == len(touched) > 0


def _names(payload: Any, erased: set[int]) -> bool:
    """Whether a stored event's payload names an erased item (or is the compaction)."""
    if isinstance(payload, tuple):
        return bool(erased & set(payload))
    if hasattr(payload, "marker_seq"):  # the compaction
        return True
    if hasattr(payload, "related_seq"):  # an edit
        return bool(erased & {*payload.seqs, payload.related_seq})
    if hasattr(payload, "checkpoint"):
        return any(r.first <= s <= r.last for r in payload.checkpoint.states for s in erased)
    return False
