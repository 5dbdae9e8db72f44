"""A server whose queries another engine of the same model embeds (`query_embedder =
"minilm-int8"`), end to end: the stored vectors stay the embedder's, every query goes to the
int8 model, dense context still finds what a question asks for, and a reader that embeds a
just-appended turn does so in a pass of the stored vectors' model, its query apart."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import StartService
from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.ports.embedder import Embedder
from contextwm_client import Client, ConversationSettings, NewItem
from heron_notes import FACT, FILLER, QUERY
from recording_embedder import RecordingEmbedder
from stale_conversations import vector_models

TURN = "The spare key to the boathouse is taped under the blue canoe."


def test_queries_go_to_the_int8_model_and_stored_vectors_stay_full_precision(
    start_service: StartService, embedder: Embedder, tmp_path: Path
) -> None:
    recorder = RecordingEmbedder(embedder)
    service = start_service(model=recorder, query_embedder="minilm-int8")
    assert service.engine.query_embedder.model_name == "all-MiniLM-L6-v2-int8"
    with Client(f"127.0.0.1:{service.port}") as client:
        client.create_conversation("c", settings=ConversationSettings(window_max_items=8))
        client.append_batch("c", [NewItem(FACT), *(NewItem(t) for t in FILLER)])
        ctx = client.get_context("c", QUERY, max_tokens=300, mode="dense")
        assert FACT in [s.content for s in ctx.history]
        assert ctx.unindexed_items == 0

        service.indexer.stop()  # only the reader can embed the turn now
        client.append("c", TURN, role="user")
        ctx = client.get_context("c", "where is the boathouse key hidden?", max_tokens=500)
        assert ctx.unindexed_items == 0
        turn = next(s for s in ctx.recent if s.item.content == TURN)
        assert turn.parts.similarity > 0.3
    asked = [text for call in recorder.calls for text in call]
    assert QUERY not in asked and "where is the boathouse key hidden?" not in asked
    assert FACT in asked and [TURN] in recorder.calls  # the reader's pass, the query apart
    assert vector_models(tmp_path / "data0", "") == {"all-MiniLM-L6-v2": 2 + len(FILLER)}


def test_a_query_embedder_of_another_dimension_stops_the_start(
    start_service: StartService,
) -> None:
    with pytest.raises(RuntimeError, match="dimensions"):
        start_service(model=HashingEmbedder(), query_embedder="minilm-int8")
