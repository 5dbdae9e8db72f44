"""`contextwm eval` against a real server: a user's labelled queries scored per budget beside
the simple selectors on the same items, and labels it cannot use refused by line."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from contextwm.app import Service
from contextwm.cli import main
from contextwm_client import Client, ConversationSettings, NewItem

T0 = datetime(2024, 3, 1, tzinfo=UTC)
FILLER = [
    "Lunch today was a mushroom risotto.",
    "The office printer jammed again this morning.",
    "The garden needs watering twice a day in this heat.",
    "I started a novel about a lighthouse keeper.",
    "The marathon plan says ten kilometres on Sunday.",
]


def _conversation(client: Client) -> None:
    client.create_conversation("ops", settings=ConversationSettings(window_max_items=4))
    texts = [
        "The billing service listens on port 8443 behind the load balancer.",
        *[FILLER[k % len(FILLER)] + f" ({k})" for k in range(30)],
        "Backups of the orders database run nightly at 02:30 UTC.",
        *[FILLER[k % len(FILLER)] + f" (more {k})" for k in range(30)],
    ]
    client.append_batch(
        "ops",
        [
            NewItem(t, role="user", timestamp=T0 + timedelta(hours=k), metadata={"turn": f"t{k}"})
            for k, t in enumerate(texts)
        ],
    )


def _labels(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_eval_scores_the_service_beside_the_selectors(
    service: Service, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _conversation(client)
    labels = _labels(
        tmp_path / "labels.jsonl",
        [
            {"conversation": "ops", "query": "which port does billing use?", "expected": [1]},
            {
                "conversation": "ops",
                "query": "when do the orders database backups run?",
                "expected_metadata": {"turn": ["t31"]},
                "kind": "ops",
                "as_of": "2024-03-05T00:00:00",
            },
            {
                "conversation": "ops",
                "query": "port of billing and the backup time",
                "expected": [1, 32],
                "budgets": [64],
            },
        ],
    )
    out = tmp_path / "outcomes.json"
    target = ["--target", f"127.0.0.1:{service.port}"]
    status = main([*target, "eval", str(labels), "--budget", "200", "--json", str(out)])
    printed = capsys.readouterr().out
    assert status == 0
    assert "Hit rate: every expected item returned (3 queries); mean recall" in printed
    for who in ("contextwm", "recency", "BM25", "dense", "BM25+dense RRF"):
        assert f"\n{who} " in printed
    rows = json.loads(out.read_text())
    # Each query at its budgets (the third at 64 tokens only), for the service and the
    # four selectors.
    assert len(rows) == (1 + 1 + 1) * 5
    got = {(r["line"], r["who"], r["budget"]): r for r in rows}
    assert got[(1, "contextwm", 200)]["hit"] and got[(2, "contextwm", 200)]["hit"]
    assert 0 < got[(1, "contextwm", 200)]["tokens"] <= 200
    # The facts are old: the newest turns alone miss them.
    assert not got[(1, "recency", 200)]["hit"] and not got[(2, "recency", 200)]["hit"]
    # Two facts in 64 tokens: recall counts the half that came back.
    assert got[(3, "contextwm", 64)]["recall"] in (0.0, 0.5, 1.0)
    assert {r["kind"] for r in rows if r["line"] == 2} == {"ops"}
    assert "Hit rate by kind at 200 tokens" in printed
    assert "== Lead over the best simple selector at each budget" in printed
    assert "paired bootstrap interval" in printed


def test_labels_it_cannot_use_are_refused_by_line(
    service: Service, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _conversation(client)
    target = ["--target", f"127.0.0.1:{service.port}", "eval"]
    good = {"conversation": "ops", "query": "port?", "expected": [1]}
    cases: list[tuple[list[object], str]] = [
        ([good, "{not json"], "line 2: not JSON"),
        # The json module's own message ends in "at": said once.
        ([good, '{"query": "a\tb"}'], "line 2: not JSON (Invalid control character at column 13)"),
        ([good, {"conversation": "ops", "query": "q"}], "line 2: give either expected"),
        ([{**good, "expected": []}], "line 1: expected is a non-empty list of seqs"),
        ([{**good, "colour": "red"}], "line 1: unknown field 'colour'"),
        ([{**good, "as_of": "yesterday"}], "line 1: as_of is not an ISO 8601 time"),
        (
            [{"conversation": "ops", "query": "q", "expected_metadata": {"turn": ["t999"]}}],
            "line 1: no item of conversation 'ops' has metadata turn = t999",
        ),
        ([], "no labelled queries"),
    ]
    for n, (rows, message) in enumerate(cases):
        status = main([*target, str(_labels(tmp_path / f"bad{n}.jsonl", rows))])
        assert (status, message in capsys.readouterr().err) == (2, True), message
    missing = _labels(tmp_path / "missing.jsonl", [{**good, "conversation": "nope"}])
    assert main([*target, str(missing)]) == 1
    assert "error: NOT_FOUND" in capsys.readouterr().err
    assert main([*target, str(tmp_path / "absent.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
