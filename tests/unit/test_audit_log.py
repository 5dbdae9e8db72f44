"""Audit lines: one JSON object per line with the time, who, what, where and the outcome;
only audited methods and refusals are recorded; a file is created for its owner only."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

from contextwm.observability.audit import AuditLog, CallSubject


def lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_audited_calls_and_refusals_are_recorded_and_nothing_else() -> None:
    out = io.StringIO()
    audit = AuditLog(out, lambda: 1_800_000_000.25)
    who = CallSubject("k1", "team-a", "c1")
    audit.call("Append", "OK", who)  # an ordinary call: not recorded
    audit.call("Append", "PERMISSION_DENIED", who)
    audit.call("RevokeKey", "OK", CallSubject("k1", target_key="k2"))
    audit.call("DeleteConversation", "NOT_FOUND", who)
    recorded = lines(out)
    assert [(r["method"], r["outcome"]) for r in recorded] == [
        ("Append", "PERMISSION_DENIED"),
        ("RevokeKey", "OK"),
        ("DeleteConversation", "NOT_FOUND"),
    ]
    assert recorded[0] == {
        "time": "2027-01-15T08:00:00.250+00:00",
        "key_id": "k1",
        "method": "Append",
        "namespace": "team-a",
        "conversation": "c1",
        "outcome": "PERMISSION_DENIED",
    }
    assert recorded[1]["target_key"] == "k2"


def test_a_run_records_its_figures() -> None:
    out = io.StringIO()
    AuditLog(out, lambda: 0.0).record("retention", "OK", items_removed=3)
    (line,) = lines(out)
    assert line["key_id"] is None and line["items_removed"] == 3


def test_a_file_is_appended_to_and_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"earlier": true}\n')
    path.chmod(0o600)
    audit = AuditLog.open(str(path), lambda: 0.0)
    assert audit is not None
    audit.record("CreateKey", "OK")
    audit.close()
    assert len(path.read_text().splitlines()) == 2
    fresh = tmp_path / "fresh.jsonl"
    made = AuditLog.open(str(fresh), lambda: 0.0)
    assert made is not None
    made.close()
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert AuditLog.open("", lambda: 0.0) is None
