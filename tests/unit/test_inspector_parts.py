"""The inspector's pure parts: messages as plain JSON values, sign-in sessions, the thinning
and replay of a long usage chart, the timeline's filter, and where it may be served."""

from __future__ import annotations

import json

from contextwm.exposure import Exposure, inspector_refusal
from contextwm.inspector.pages import ItemFilter, thinned
from contextwm.inspector.plain import plain
from contextwm.inspector.replay import Rules, usage_points
from contextwm.inspector.sessions import IDLE_SECONDS, Sessions
from contextwm.llm_context.active_context import mask_placeholder
from contextwm_client.v1 import contextwm_pb2 as pb


def test_messages_become_plain_values_with_numbers_times_and_enum_names() -> None:
    item = pb.Item(seq=2**40, role="tool", token_count=7, state=pb.ITEM_STATE_ARCHIVED)
    item.timestamp.FromSeconds(1_700_000_000)
    item.timestamp.nanos = 500_000_000
    item.flags.extend(["code", "error"])
    item.metadata["k"] = "v"
    value = plain(item)
    assert value["seq"] == 2**40  # a number, not the JSON mapping's string
    assert value["timestamp"] == 1_700_000_000.5
    assert value["state"] == "ITEM_STATE_ARCHIVED"
    assert value["flags"] == ["code", "error"] and value["metadata"] == {"k": "v"}
    assert value["file"] is None and value["compaction"] is None  # unset messages
    assert value["content"] == "" and value["kind"] == ""  # every field, set or not
    json.dumps(value, allow_nan=False)


def test_nested_and_repeated_messages_and_oneofs() -> None:
    event = pb.Event(id=3, kind="eviction", eviction=pb.Eviction(seqs=[1, 2]))
    value = plain(event)
    assert value["eviction"] == {"seqs": [1, 2]}
    assert value["usage"] is None and value["compaction"] is None
    report = pb.AllocationReport(categories=[pb.CategoryAllocation(category=pb.CATEGORY_DIALOG)])
    assert plain(report)["categories"][0]["category"] == "CATEGORY_DIALOG"


def test_sessions_hold_a_token_until_signed_out_or_idle() -> None:
    now = [0.0]
    sessions = Sessions(lambda: now[0])
    first = sessions.open("cwm_a")
    second = sessions.open("cwm_b")
    assert first != second and len(first) >= 40
    assert sessions.token(first) == "cwm_a" and sessions.token("made-up") is None
    sessions.close(first)
    assert sessions.token(first) is None
    now[0] = IDLE_SECONDS - 1
    assert sessions.token(second) == "cwm_b"  # use keeps it live
    now[0] += IDLE_SECONDS - 1
    assert sessions.token(second) == "cwm_b"
    now[0] += IDLE_SECONDS + 1
    assert sessions.token(second) is None


def test_a_long_chart_isthinned_but_keeps_every_drop() -> None:
    points = [{"seq": s, "tokens": s, "event": ""} for s in range(1, 10_001)]
    for s in (500, 5_000, 9_999):
        points[s - 1]["event"] = "compaction"
    thin = thinned(points, 100)
    assert len(thin) < 120
    seqs = [p["seq"] for p in thin]
    assert seqs == sorted(seqs) and seqs[0] == 1 and seqs[-1] == 10_000
    for s in (500, 5_000, 9_999):
        assert s in seqs and s - 1 in seqs  # the drop and the point before it
    assert thinned(points[:50], 100) == points[:50]


def test_the_inspector_is_served_off_loopback_only_with_keys_and_tls_or_insecure() -> None:
    assert inspector_refusal(Exposure("127.0.0.1", 8080)) is None
    assert inspector_refusal(Exposure("localhost", 8080)) is None
    no_keys = inspector_refusal(Exposure("0.0.0.0", 8080, tls=True, insecure=True))
    assert no_keys is not None and no_keys.startswith(
        "refusing to serve the inspector on 0.0.0.0:8080 without API keys"
    )
    no_tls = inspector_refusal(Exposure("10.0.0.5", 8080, api_keys=True))
    assert no_tls is not None and "without TLS" in no_tls and "--insecure" in no_tls
    assert inspector_refusal(Exposure("10.0.0.5", 8080, api_keys=True, tls=True)) is None
    assert inspector_refusal(Exposure("::", 8080, api_keys=True, insecure=True)) is None


class WordCounter:
    """A token per word: enough to see what the replay counts."""

    encoding = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def test_the_usage_replay_counts_masked_outputs_as_placeholders_and_restarts_at_compactions() -> (
    None
):
    def item(seq: int, role: str, tokens: int, **fields: object) -> pb.Item:
        return pb.Item(seq=seq, role=role, token_count=tokens, **fields)  # type: ignore[arg-type]

    placeholder = WordCounter().count(mask_placeholder(None, 2, 500))
    items = [
        item(1, "user", 5),
        item(2, "tool", 500),
        item(3, "assistant", 5),  # the tool output is one assistant turn old: masked
        item(4, "user", 7, state=pb.ITEM_STATE_REVERTED),  # undone by a restore: not counted
        item(5, "user", 20, kind="compaction", compaction=pb.Compaction(number=1)),
        item(6, "user", 3),
    ]
    points = usage_points(items, [], Rules(1, True), WordCounter())
    assert [(p["seq"], p["tokens"]) for p in points] == [
        (1, 5),
        (2, 505),
        (3, 5 + placeholder + 5),
        (5, 20),
        (6, 23),
    ]
    assert points[3]["event"] == "compaction #1"
    # Without masking the output stays at its full size.
    unmasked = usage_points(items, [], Rules(0, True), WordCounter())
    assert unmasked[2]["tokens"] == 510


def test_an_item_filter_lets_through_any_of_its_roles_and_flags() -> None:
    tool = pb.Item(role="tool", flags=["error"])
    user = pb.Item(role="user", flags=["pinned", "code"])
    assert ItemFilter().lets(tool) and ItemFilter().lets(user)
    assert [ItemFilter(roles=frozenset({"tool", "system"})).lets(i) for i in (tool, user)] == [
        True,
        False,
    ]
    assert [ItemFilter(flags=frozenset({"code"})).lets(i) for i in (tool, user)] == [False, True]
    both = ItemFilter(roles=frozenset({"user"}), flags=frozenset({"error"}))
    assert not both.lets(tool) and not both.lets(user)
