"""Quotas and the audit trail through real gRPC: a key over its request rate gets
RESOURCE_EXHAUSTED with a retry-after while another key goes on; a request over the size
quota is refused; a namespace holds no more items than its quota; the audit file holds one
JSON line per key change, refused call and deletion, and never a token or any content;
per-key metrics by key id."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from contextwm.access.keys import Keys
from contextwm.conversations.validation import Limits
from contextwm.domain.access import Role
from contextwm_client import (
    Client,
    ImportItem,
    NewItem,
    ResourceExhaustedError,
    UnauthenticatedError,
)
from metrics_scrape import Scrape

CANARY = "the launch code is zebra-quartz-1187"


def test_quotas_audit_and_key_metrics(tmp_path: Path, start_service: Any) -> None:
    audit_path = tmp_path / "audit.jsonl"
    service = start_service(
        require_api_keys=True,
        key_requests_per_second=1.0,
        key_request_burst=3,
        key_max_request_bytes=4000,
        audit_log=str(audit_path),
        metrics_port=0,
    )
    keys = Keys(service.store, time.time)
    admin_key, admin = keys.create("admin", Role.ADMIN, ["*"])
    busy_key, busy = keys.create("busy", Role.WRITE, ["team-a"])
    _, calm = keys.create("calm", Role.WRITE, ["team-a"])
    target = f"127.0.0.1:{service.port}"

    with Client(target, api_key=busy, namespace="team-a") as c:
        began = time.monotonic()
        c.append("c", CANARY)
        admitted, refusals = 1, []
        for _ in range(8):  # far faster than 1 a second, unless the machine is busy
            try:
                c.get_conversation("c")
                admitted += 1
            except ResourceExhaustedError as exc:
                refusals.append(exc)
        took = time.monotonic() - began
    # The burst of 3, and at most one more token refilled for each second (or part) taken.
    assert 3 <= admitted <= 3 + math.ceil(took) and len(refusals) == 9 - admitted, took
    assert all(0 < (e.retry_after or 0) <= 1.0 for e in refusals), [e.retry_after for e in refusals]
    assert "over its quota of 1 requests per second" in refusals[0].details
    waits = sorted(e.retry_after or 0 for e in refusals)
    print(
        f"rate quota: {admitted} of 9 calls admitted, {len(refusals)} refused; retry-after"
        f" {waits[0]:.2f}..{waits[-1]:.2f} s"
    )

    with Client(target, api_key=calm, namespace="team-a") as c:
        c.get_conversation("c")  # its own bucket
        with pytest.raises(ResourceExhaustedError, match=r"over API key .* quota of 4,000 bytes"):
            c.append("c", "x" * 5000)
    time.sleep(waits[-1])  # the refusal said how long
    with Client(target, api_key=busy, namespace="team-a") as c:
        c.get_conversation("c")  # a token again after a second
    with (
        Client(target, api_key="cwm_000000000000_" + "0" * 64) as c,
        pytest.raises(UnauthenticatedError),
    ):
        c.list_conversations()
    with Client(target, api_key=admin) as c:
        made = c.create_key("ci", "read", ["team-b"])
        c.revoke_key(made.key.key_id)
        c.delete_conversation("c", namespace="team-a")

    recorded = [json.loads(line) for line in audit_path.read_text().splitlines()]
    summary = [(r["method"], r["outcome"], r["key_id"]) for r in recorded]
    assert ("GetConversation", "RESOURCE_EXHAUSTED", busy_key.key_id) in summary
    assert (
        "Append",
        "RESOURCE_EXHAUSTED",
        next(k.key_id for k in keys.list() if k.name == "calm"),
    ) in summary
    assert ("ListConversations", "UNAUTHENTICATED", None) in summary
    assert ("CreateKey", "OK", admin_key.key_id) in summary
    create = next(r for r in recorded if r["method"] == "CreateKey")
    assert create["target_key"] == made.key.key_id
    revoke = next(r for r in recorded if r["method"] == "RevokeKey")
    assert revoke["target_key"] == made.key.key_id
    delete = next(r for r in recorded if r["method"] == "DeleteConversation")
    assert (delete["namespace"], delete["conversation"], delete["outcome"]) == ("team-a", "c", "OK")
    text = audit_path.read_text()
    for secret in (admin, busy, calm, made.token, CANARY, "x" * 100):
        assert secret not in text
    assert not any(
        r["method"] in ("Append", "GetConversation") and r["outcome"] == "OK" for r in recorded
    )
    print(
        f"audit: {len(recorded)} lines: " + ", ".join(sorted({f"{m} {o}" for m, o, _ in summary}))
    )

    scrape = Scrape(service.metrics_port)
    refused = scrape.value(
        "contextwm_key_requests_total", key_id=busy_key.key_id, code="RESOURCE_EXHAUSTED"
    )
    assert refused == len(refusals)
    assert (
        scrape.value("contextwm_key_requests_total", key_id=busy_key.key_id, code="OK")
        == admitted + 1
    )


def test_a_namespace_holds_no_more_items_than_its_quota(start_service: Any) -> None:
    service = start_service(limits=Limits(max_items_per_namespace=5))
    with Client(f"127.0.0.1:{service.port}", namespace="small") as c:
        c.append_batch("a", [NewItem(f"item {n}") for n in range(3)])
        with pytest.raises(ResourceExhaustedError, match=r"holds 3 items, and 3 more would pass"):
            c.append_batch("b", [NewItem(f"more {n}") for n in range(3)])
        assert c.append("b", "the fourth").seq == 1
        result = c.import_items(ImportItem("b", NewItem(f"imported {n}")) for n in range(3))
        assert (result.appended, result.failed) == (1, 2)
        assert {f.code for f in result.failures} == {"RESOURCE_EXHAUSTED"}
        c.append("a", "another namespace is not counted", namespace="big")
        with pytest.raises(ResourceExhaustedError, match="quota of 5"):
            c.append("a", "one too many")
        c.delete_conversation("b")
        assert c.append("a", "room again").seq == 4
