"""The command line offers what the client offers for search, context and conversation
settings: run as a user would, in-process against a real server."""

from __future__ import annotations

import pytest
from contextwm.app import Service
from contextwm.cli import main
from contextwm_client import Client, RetentionPolicy, ScoringWeights


@pytest.fixture
def cli(service: Service, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    def run(*argv: str) -> tuple[int, str, str]:
        status = main(["--target", f"127.0.0.1:{service.port}", *argv])
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


def test_search_finds_what_was_just_appended_with_include_window(cli, client: Client) -> None:  # type: ignore[no-untyped-def]
    client.append("ops", "The billing service listens on port 8443.", role="assistant")
    client.append("ops", "Deploy failed: ConnectionError on db-3", role="tool")
    status, out, err = cli("search", "ConnectionError", "--conversation", "ops")
    assert (status, out) == (0, "")
    assert "no hits in the archive (--include-window: the window too)" in err
    status, out, _ = cli(
        "search", "ConnectionError", "--conversation", "ops", "--include-window", "--role", "tool"
    )
    assert status == 0 and "ConnectionError on db-3" in out and "8443" not in out
    status, out, _ = cli(
        "search", "port", "--conversation", "ops", "--include-window", "--role", "user"
    )
    assert (status, out) == (0, "")
    status, out, _ = cli(
        "search", "port", "--include-window", "--mode", "lexical", "--since", "2000-01-01"
    )
    assert status == 0 and "8443" in out
    status, out, _ = cli("search", "port", "--include-window", "--until", "2000-01-01")
    assert (status, out) == (0, "")


def test_context_needs_no_budget_and_takes_the_clients_options(cli, client: Client) -> None:  # type: ignore[no-untyped-def]
    for n in range(6):
        client.append("c", f"Note {n}: the cache runs on port {9000 + n}.")
    status, out, _ = cli("context", "c", "which port does the cache use?")
    assert status == 0 and "# Current Query" in out
    status, out, _ = cli(
        "context",
        "c",
        "which port?",
        "--max-tokens",
        "300",
        "--recent-share",
        "0.5",
        "--mode",
        "lexical",
        "--no-neighbors",
        "--no-time-hints",
        "--json",
    )
    assert status == 0 and '"budget": 300' in out
    status, _, err = cli("context", "c", "q", "--recent-share", "2")
    assert status == 1 and "INVALID_ARGUMENT" in err and "recent_share" in err


def test_create_and_update_set_every_setting_retention_included(cli, client: Client) -> None:  # type: ignore[no-untyped-def]
    status, out, _ = cli(
        "create",
        "kept",
        "--retention-max-archived-items",
        "4",
        "--retention-inactive-seconds",
        "86400",
        "--focus-items",
        "3",
        "--recency-weight",
        "0.4",
        "--no-detect-importance",
        "--recent-min-items",
        "1",
    )
    assert status == 0 and "retention" in out
    settings = client.get_conversation("kept").settings
    assert settings.retention == RetentionPolicy(
        max_age_seconds=settings.retention.max_age_seconds if settings.retention else None,
        max_archived_items=4,
        inactive_seconds=86400.0,
        remove_pinned=settings.retention.remove_pinned if settings.retention else None,
    )
    assert (settings.focus_items, settings.detect_importance, settings.recent_min_items) == (
        3,
        False,
        1,
    )
    assert settings.weights is not None and settings.weights.recency == 0.4
    status, _, _ = cli(
        "update", "kept", "--retention-max-archived-items", "0", "--focus-items", "5"
    )
    assert status == 0
    updated = client.get_conversation("kept").settings
    assert updated.retention is not None and updated.retention.max_archived_items == 0
    assert updated.retention.inactive_seconds == 86400.0  # untouched
    assert updated.focus_items == 5
    assert isinstance(updated.weights, ScoringWeights) and updated.weights.recency == 0.4
