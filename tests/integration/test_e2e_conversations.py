"""Conversations are created, read back, listed per namespace, and deleted."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from contextwm.app import Service
from contextwm_client import (
    AlreadyExistsError,
    Client,
    ConversationSettings,
    InvalidArgumentError,
    NewItem,
    NotFoundError,
)


def test_explicit_create_returns_effective_settings(client: Client) -> None:
    conv = client.create_conversation(
        "c1", settings=ConversationSettings(window_max_tokens=500, encoding="o200k_base")
    )
    assert conv.settings.window_max_tokens == 500
    assert conv.settings.encoding == "o200k_base"
    assert conv.settings.window_max_items == 100  # the default fills what was not set
    assert conv.settings.similarity_threshold == pytest.approx(0.3)
    assert conv.window.token_limit == 500
    assert (conv.total_items, conv.archived_items, conv.last_seq) == (0, 0, 0)
    with pytest.raises(AlreadyExistsError, match="already exists"):
        client.create_conversation("c1")


def test_implicit_create_on_first_append_uses_defaults(client: Client) -> None:
    client.append("implicit", "hello there", role="user")
    conv = client.get_conversation("implicit")
    assert conv.settings.window_max_tokens == 8000
    assert conv.settings.window_max_items == 100
    assert conv.settings.encoding == "cl100k_base"
    assert conv.window.item_count == 1
    assert conv.window.token_count == 2  # "hello there" is two cl100k tokens
    assert conv.last_seq == 1
    assert conv.state == "general"


def test_read_back_reports_window_archive_and_state(client: Client) -> None:
    client.create_conversation("small", settings=ConversationSettings(window_max_items=3))
    for n in range(5):
        client.append("small", f"We should refactor the parser function number {n} in the module.")
    conv = client.get_conversation("small")
    assert conv.window.item_count == 3
    assert conv.archived_items == 2
    assert conv.total_items == 5
    assert conv.window.item_limit == 3
    assert conv.state == "coding"


def test_list_is_paged_and_scoped_by_namespace(client: Client) -> None:
    for cid in ["e", "a", "d", "c", "b"]:
        client.create_conversation(cid, namespace="team-a")
    client.create_conversation("z", namespace="team-b")
    first = client.list_conversations(page_size=2, namespace="team-a")
    assert [c.conversation_id for c in first.entries] == ["a", "b"]
    assert first.next_page_token
    second = client.list_conversations(
        page_size=2, page_token=first.next_page_token, namespace="team-a"
    )
    assert [c.conversation_id for c in second.entries] == ["c", "d"]
    assert [c.conversation_id for c in client.iter_conversations(namespace="team-a")] == list(
        "abcde"
    )
    assert [c.conversation_id for c in client.iter_conversations(namespace="team-b")] == ["z"]
    assert list(client.iter_conversations(namespace="nobody")) == []


def test_delete_removes_items_vectors_and_index(client: Client, service: Service) -> None:
    client.create_conversation("gone", settings=ConversationSettings(window_max_items=2))
    for n in range(6):
        client.append("gone", f"Planting note {n} about the greenhouse tomatoes.")
    client.get_context("gone", "greenhouse tomatoes", max_tokens=300)  # builds the index
    service.engine.save_indexes()
    key = service.store.get_conversation("default", "gone")
    assert key is not None
    index_files = list((service.settings.data_dir / "indexes").rglob(f"{key.key}.faiss"))
    assert index_files
    assert client.delete_conversation("gone") == 6
    with pytest.raises(NotFoundError):
        client.get_conversation("gone")
    with pytest.raises(NotFoundError):
        client.get_context("gone", "tomatoes", max_tokens=100)
    with pytest.raises(NotFoundError):
        client.list_items("gone")
    with pytest.raises(NotFoundError):
        client.delete_conversation("gone")
    assert not any(p.exists() for p in index_files)
    assert client.search("greenhouse tomatoes", include_window=True).hits == ()
    assert service.store.pending_vectors(service.engine.embedder.model_name, 10) == []


def test_items_appended_after_a_delete_are_embedded(client: Client) -> None:
    # SQLite hands the ids of the deleted items out again: the indexer, which scans for
    # pending items past the last id it embedded, must not skip them.
    client.append("kept", "Greenhouse tomatoes need water every morning.")
    for n in range(5):
        client.append("gone", f"Planting note {n} about the greenhouse tomatoes.")
    _wait_embedded(client, "gone")
    client.delete_conversation("gone")
    client.append("gone", "A second life: the greenhouse gets a new roof.")
    client.append("kept", "Tomatoes ripen in August.")
    _wait_embedded(client, "gone")
    _wait_embedded(client, "kept")


def _wait_embedded(client: Client, conversation_id: str) -> None:
    deadline = time.monotonic() + 30
    while client.get_conversation(conversation_id).pending_embeddings:
        assert time.monotonic() < deadline, f"{conversation_id}: items never embedded"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"conversation_id": ""}, "conversation_id is required"),
        ({"conversation_id": "x" * 201}, "1..200 characters"),
        ({"conversation_id": "ok", "namespace": "bad name!"}, "invalid namespace"),
        (
            {"conversation_id": "ok", "settings": ConversationSettings(window_max_tokens=0)},
            "window_max_tokens",
        ),
        (
            {"conversation_id": "ok", "settings": ConversationSettings(encoding="latin1")},
            "unknown encoding",
        ),
    ],
)
def test_bad_create_requests_are_invalid_argument(
    client: Client, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        client.create_conversation(**kwargs)  # type: ignore[arg-type]


def test_a_listing_piped_to_head_ends_quietly(service: Service, client: Client) -> None:
    # More than a pipe's buffer of output: the command is still writing when head leaves.
    client.create_conversation("long")
    for start in range(0, 3000, 500):
        client.append_batch(
            "long",
            [NewItem(f"line {k} " + "x" * 40, role="user") for k in range(start, start + 500)],
        )
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root / "server"), str(root / "client")]),
    }
    cli = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "contextwm",
            "--target",
            f"127.0.0.1:{service.port}",
            "items",
            "long",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert cli.stdout is not None and cli.stderr is not None
    first = cli.stdout.readline()
    cli.stdout.close()  # what head does after its lines
    err = cli.stderr.read().decode()
    assert cli.wait(timeout=60) == 141
    assert b"line 0" in first
    assert err == ""
