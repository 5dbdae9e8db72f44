"""The client's statistics: the response read with every field set, unset item times, and
the scope each call of get_stats sends."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from contextwm_client import (
    ChunkCacheStats,
    Client,
    ConversationStats,
    StateStats,
    StatsResult,
    StoreStats,
)
from contextwm_client._convert.common import to_proto_timestamp
from contextwm_client._convert.stats import from_proto_get_stats_response
from contextwm_client.v1 import contextwm_pb2 as pb
from google.protobuf.message import Message

T0 = datetime(2025, 3, 3, 14, 10, 5, 250000, tzinfo=UTC)
T1 = datetime(2025, 3, 4, 9, 5, tzinfo=UTC)

PB_STORE = pb.StoreStats(
    items=10,
    tokens=900,
    window=pb.StateStats(items=4, tokens=400),
    archived=pb.StateStats(items=3, tokens=300),
    compacted=pb.StateStats(items=2, tokens=150),
    reverted=pb.StateStats(items=1, tokens=50),
    vectors=8,
    missing_vectors=2,
    index_bytes=4096,
    oldest_item_at=to_proto_timestamp(T0),
    newest_item_at=to_proto_timestamp(T1),
)
EXPECTED_STORE = StoreStats(
    items=10,
    tokens=900,
    window=StateStats(4, 400),
    archived=StateStats(3, 300),
    compacted=StateStats(2, 150),
    reverted=StateStats(1, 50),
    vectors=8,
    missing_vectors=2,
    index_bytes=4096,
    oldest_item_at=T0,
    newest_item_at=T1,
)


def _unset(message: Message) -> set[str]:
    """Fields not set in the message or, by dotted name, in the contextwm messages it holds
    (a timestamp may well have no nanos)."""
    present = {field.name: value for field, value in message.ListFields()}
    found = {f.name for f in message.DESCRIPTOR.fields} - set(present)
    for name, value in present.items():
        if isinstance(value, Message) and value.DESCRIPTOR.full_name.startswith("contextwm."):
            found |= {f"{name}.{inner}" for inner in _unset(value)}
    return found


def test_a_response_with_every_field_set_reads_back_whole() -> None:
    message = pb.GetStatsResponse(
        conversations=[pb.ConversationStats(namespace="ns", conversation_id="c", stats=PB_STORE)],
        total=PB_STORE,
        chunk_cache=pb.ChunkCacheStats(
            hits=9, misses=1, hit_rate=0.9, bytes=5, max_bytes=50, entries=2, evictions=3
        ),
        conversation_count=3,
        next_page_token="ns/c",
        model="all-MiniLM-L6-v2",
    )
    # Guards the fixture: a field the proto gains must be added here and to the converter.
    assert _unset(message) == set()
    assert _unset(message.conversations[0]) == set()
    reparsed = pb.GetStatsResponse.FromString(message.SerializeToString())
    assert from_proto_get_stats_response(reparsed) == StatsResult(
        conversations=(ConversationStats("ns", "c", EXPECTED_STORE),),
        total=EXPECTED_STORE,
        conversation_count=3,
        next_page_token="ns/c",
        model="all-MiniLM-L6-v2",
        chunk_cache=ChunkCacheStats(
            hits=9, misses=1, hit_rate=0.9, bytes=5, max_bytes=50, entries=2, evictions=3
        ),
    )


def test_a_scope_without_items_has_no_item_times() -> None:
    total = from_proto_get_stats_response(pb.GetStatsResponse()).total
    assert (total.items, total.oldest_item_at, total.newest_item_at) == (0, None, None)


class Stub:
    def __init__(self) -> None:
        self.sent: list[pb.GetStatsRequest] = []

    def GetStats(self, request: pb.GetStatsRequest, **kwargs: Any) -> pb.GetStatsResponse:
        self.sent.append(request)
        return pb.GetStatsResponse()


def test_each_scope_sends_its_fields() -> None:
    stub = Stub()
    with Client("127.0.0.1:1", namespace="team") as client:
        client._stub = stub  # type: ignore[assignment]
        client.get_stats("c")
        client.get_stats(namespace="other", page_size=10, page_token="other/b")
        client.get_stats(all_namespaces=True)
        client.get_stats(all_namespaces=True, namespace="team")  # the server refuses it
    assert stub.sent == [
        pb.GetStatsRequest(namespace="team", conversation_id="c", page_size=100),
        pb.GetStatsRequest(namespace="other", page_size=10, page_token="other/b"),
        # Across namespaces the client's own is not sent: it would name a second scope.
        pb.GetStatsRequest(all_namespaces=True, page_size=100),
        pb.GetStatsRequest(namespace="team", all_namespaces=True, page_size=100),
    ]
