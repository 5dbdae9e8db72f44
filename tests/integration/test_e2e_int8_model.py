"""A server on the quantised model (`--embedder minilm-int8`), end to end: it exports the
model into its cache at first start, stores vectors under the int8 model's own name, serves
dense context from them, and a server on the full-precision model refuses them until they
are re-embedded."""

from __future__ import annotations

from pathlib import Path

import pytest
from contextwm_client import Client, ConversationSettings, FailedPreconditionError, NewItem
from heron_notes import FACT, FILLER, QUERY
from server_process import ServerProcess
from stale_conversations import vector_models


def test_a_server_on_the_int8_model_serves_its_own_vectors(tmp_path: Path) -> None:
    data = tmp_path / "data"
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}  # exported here, not in the user's
    server = ServerProcess(data, "--embedder", "minilm-int8", env=cache)
    try:
        with Client(server.target) as client:
            client.create_conversation("c", settings=ConversationSettings(window_max_items=8))
            client.append_batch("c", [NewItem(FACT), *(NewItem(t) for t in FILLER)])
            ctx = client.get_context("c", QUERY, max_tokens=300, mode="dense")
            assert FACT in [s.content for s in ctx.history]
            assert ctx.unindexed_items == 0
    finally:
        assert server.terminate() == 0
    assert vector_models(data, "") == {"all-MiniLM-L6-v2-int8": 1 + len(FILLER)}
    assert list((tmp_path / "cache").rglob("*.onnx"))

    server = ServerProcess(data)  # the default: full precision
    try:
        with Client(server.target) as client:
            with pytest.raises(FailedPreconditionError, match=r"all-MiniLM-L6-v2-int8.*reembed"):
                client.get_context("c", QUERY, max_tokens=300)
            lexical = client.get_context(
                "c", "Heron staging database", max_tokens=300, mode="lexical"
            )
            assert FACT in [s.content for s in lexical.history]
    finally:
        assert server.terminate() == 0
