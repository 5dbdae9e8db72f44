"""The erasure calls through real gRPC, beside the proof in test_e2e_erasure.py: forgetting
across a namespace and by time, deleting a conversation with its receipt (and nothing of it
left in the SQLite files), refusals, and the command line."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import StartService
from contextwm.cli import main
from contextwm_client import Client, InvalidArgumentError, NotFoundError

T0 = datetime(2024, 3, 1, tzinfo=UTC)


def day(n: int) -> datetime:
    return T0.replace(day=1 + n)


def digest(namespace: str, items: list[tuple[str, int, str]]) -> str:
    """The receipt's digest, as docs/security.md defines it."""
    out = hashlib.sha256()
    for cid, seq, content in sorted(items, key=lambda i: (i[0].encode(), i[1])):
        for field in (namespace, cid, str(seq), content):
            data = field.encode()
            out.update(len(data).to_bytes(8, "big") + data)
    return out.hexdigest()


def test_forget_across_a_namespace_takes_every_conversation_and_no_other_namespace(
    start_service: StartService,
) -> None:
    service = start_service()
    with Client(f"127.0.0.1:{service.port}") as client:
        for ns in ("team", "elsewhere"):
            for cid in ("b", "a", "é"):
                client.append(cid, f"{cid} says hello", namespace=ns)
                client.append(cid, f"{cid} secret walnut", metadata={"user": "7"}, namespace=ns)
        client.create_conversation("empty", namespace="team")
        receipt = client.forget(metadata={"user": "7"}, namespace="team")
        # In order of conversation id, compared as UTF-8 bytes.
        assert [c.conversation_id for c in receipt.conversations] == ["a", "b", "é"]
        assert all(c.seqs == ((2, 2),) for c in receipt.conversations)
        assert receipt.counts.items == 3
        erased = [(cid, 2, f"{cid} secret walnut") for cid in ("a", "b", "é")]
        assert receipt.digest == digest("team", erased)
        for cid in ("a", "b", "é"):
            assert [i.seq for i in client.iter_items(cid, namespace="team")] == [1]
            assert [i.seq for i in client.iter_items(cid, namespace="elsewhere")] == [1, 2]
        hits = client.search("walnut", namespace="elsewhere", include_window=True, mode="lexical")
        assert len(hits.hits) == 3
        # Nothing left to forget: an empty receipt, the digest of nothing.
        again = client.forget(metadata={"user": "7"}, namespace="team")
        assert (again.conversations, again.counts.items) == ((), 0)
        assert again.digest == hashlib.sha256().hexdigest()


def test_forget_by_time_takes_items_from_since_up_to_until(start_service: StartService) -> None:
    service = start_service()
    with Client(f"127.0.0.1:{service.port}") as client:
        for n in range(5):
            client.append("log", f"entry of day {n}", timestamp=day(n))
        receipt = client.forget("log", since=day(1), until=day(3))
        assert receipt.conversations[0].seqs == ((2, 3),)
        assert [i.content for i in client.iter_items("log")] == [
            "entry of day 0",
            "entry of day 3",
            "entry of day 4",
        ]
        receipt = client.forget("log", since=day(4), metadata={"absent": "x"})
        assert receipt.counts.items == 0  # every criterion must match


def test_forget_refuses_what_it_cannot_do(start_service: StartService) -> None:
    service = start_service()
    with Client(f"127.0.0.1:{service.port}") as client:
        client.append("c", "text")
        with pytest.raises(ValueError, match="delete"):
            client.forget("c")
        with pytest.raises(InvalidArgumentError, match="before"):
            client.forget("c", since=day(3), until=day(1))
        with pytest.raises(NotFoundError):
            client.forget("absent", metadata={"user": "1"})


@pytest.mark.both_stores
def test_deleting_a_conversation_returns_its_receipt_and_leaves_nothing_in_the_files(
    start_service: StartService, store_kind: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    service = start_service(data_dir=data_dir)
    canary = "thornquillz"
    with Client(f"127.0.0.1:{service.port}") as client:
        for n in range(12):
            client.append("gone", f"turn {n} mentions {canary} {n}")
        client.compact("gone", f"The turns all mention {canary}.")
        client.create_checkpoint("gone", "cp")
        client.append("kept", "an unrelated conversation")
        client.search(canary, conversation_id="gone", mode="dense")  # every item embedded
        items = [(i.conversation_id, i.seq, i.content) for i in client.iter_items("gone")]
        receipt = client.erase_conversation("gone")
        (erased,) = receipt.conversations
        assert erased.deleted and erased.seqs == ((1, 13),)
        counts = receipt.counts
        assert (counts.items, counts.vectors, counts.compactions, counts.checkpoints) == (
            13,
            13,
            1,
            1,
        )
        assert counts.facts == 0 and counts.events > 0 and counts.edits == 1
        assert counts.index_entries == 12  # the archived ones (the marker is in the window)
        assert receipt.digest == digest("default", items)
        with pytest.raises(NotFoundError):
            client.get_conversation("gone")
        assert [i.content for i in client.iter_items("kept")] == ["an unrelated conversation"]
        assert client.delete_conversation("kept") == 1
    if store_kind == "sqlite":
        for path in data_dir.glob("contextwm.sqlite3*"):
            assert canary.encode() not in path.read_bytes(), path.name


def test_the_command_line_forgets_and_prints_the_receipt(
    start_service: StartService, capsys: pytest.CaptureFixture[str]
) -> None:
    service = start_service()
    target = ["--target", f"127.0.0.1:{service.port}"]
    with Client(f"127.0.0.1:{service.port}") as client:
        client.append("c", "keep this")
        client.append("c", "forget this", metadata={"user": "42"}, timestamp=day(2))
        client.append("d", "and this", metadata={"user": "42"})
    status = main([*target, "forget", "--metadata", "user=42", "--since", "2024-03-02", "c"])
    out = capsys.readouterr().out
    assert status == 0
    assert "default/c: 1 item erased (seqs 2)" in out
    assert "digest: sha256:" in out
    status = main([*target, "forget", "--metadata", "user=42", "--json"])
    receipt = json.loads(capsys.readouterr().out)
    assert [c["conversation_id"] for c in receipt["conversations"]] == ["d"]
    assert receipt["counts"]["items"] == 1
    status = main([*target, "forget", "c"])
    assert status == 2 and "delete" in capsys.readouterr().err
    status = main([*target, "delete", "c", "--receipt"])
    out = capsys.readouterr().out
    assert status == 0 and "deleted c (1 item)" in out and "deleted whole" in out
