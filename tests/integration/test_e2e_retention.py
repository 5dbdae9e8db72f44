"""Retention through a real server: dry runs, removal by age, count and inactivity, what is
kept, the store and the index left together (also across a restart and `contextwm check`),
the background run, field-by-field policies, refusals, and the command line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from conftest import StartService
from contextwm import cli
from contextwm.app import Service
from contextwm.domain.retention import RetentionPolicies
from contextwm.domain.retention import RetentionPolicy as Policy
from contextwm.domain.scope import Scope
from contextwm.retention.apply import Retention
from contextwm.settings import load_settings
from contextwm_client import (
    Client,
    ConversationSettings,
    InvalidArgumentError,
    NewItem,
    NotFoundError,
    RetentionPolicy,
)
from metrics_scrape import Scrape

DAY = 86400.0
# Words that name one old item each, for lexical search.
WORDS = ("zebra", "quokka", "narwhal", "axolotl", "pangolin", "okapi", "tapir", "wombat")


class Clock:
    """The server's wall clock, moved on by the test."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def old_items(clock: Clock, n: int, days_ago: float, first: int = 0) -> list[NewItem]:
    """n items timestamped days_ago, a minute apart, each naming an animal and a number."""
    start = clock.now - days_ago * DAY
    return [
        NewItem(
            f"Old note {first + i}: the {WORDS[(first + i) % len(WORDS)]} pipeline {first + i}"
            " finished its nightly import",
            role="assistant" if i % 2 else "user",
            timestamp=at(start + 60 * i),
        )
        for i in range(n)
    ]


def compacted_history(client: Client, cid: str, clock: Clock, n: int = 10, **kw: object) -> None:
    """n items 60 days old, compacted behind a marker (seq n + 1), then two fresh turns; waits
    until every item has its vector (only embedded items are removed)."""
    client.create_conversation(
        cid,
        settings=ConversationSettings(window_max_items=3, **kw),  # type: ignore[arg-type]
    )
    client.append_batch(cid, old_items(clock, n, days_ago=60))
    client.compact(cid, "The nightly imports ran; nothing is pending.")
    client.append(cid, "What changed today?")
    client.append(cid, "Only the dashboard colours.", role="assistant")
    embedded(client, cid)


def embedded(client: Client, cid: str, namespace: str | None = None) -> None:
    client.search("pipeline", conversation_id=cid, namespace=namespace)  # waits for vectors
    assert client.get_conversation(cid, namespace=namespace).pending_embeddings == 0


def seqs_of(client: Client, cid: str, namespace: str | None = None) -> list[int]:
    return [i.seq for i in client.iter_items(cid, namespace=namespace)]


def index_matches_store(service: Service, cid: str, namespace: str = "default") -> int:
    """Asserts the conversation's loaded FAISS index holds exactly the store's archived
    vectors, and its counts match the store's; returns the index size."""
    engine = service.engine
    with engine.holding(namespace, cid) as rt:
        engine.ensure_index(rt)
        assert rt.index is not None
        expected = service.store.archived_ids(rt.key, engine.embedder.model_name)
        assert np.array_equal(np.sort(rt.index.ids()), expected)
        counts = service.store.counts(rt.key, engine.embedder.model_name)
        assert (rt.total, rt.archived, rt.tokens) == (counts.total, counts.archived, counts.tokens)
        return rt.index.size


def start(start_service: StartService, clock: Clock, **policies: Policy) -> Service:
    """A server whose default policy is `default` and namespaces' the other keywords; the
    background run is off unless a test sets an interval."""
    default = policies.pop("default", Policy())
    return start_service(
        clock=clock,
        retention=RetentionPolicies(default, policies),
        retention_interval_seconds=0,
    )


# ---------------------------------------------------------------- dry runs and removal


@pytest.mark.both_stores
def test_a_dry_run_lists_exactly_what_a_run_removes_and_changes_nothing(
    start_service: StartService, clock: Clock
) -> None:
    service = start(start_service, clock, default=Policy(max_age_seconds=30 * DAY))
    with Client(f"127.0.0.1:{service.port}") as client:
        compacted_history(client, "t", clock)
        client.pin("t", 3)
        before = seqs_of(client, "t")
        conversation = client.get_conversation("t")

        dry = client.apply_retention("t", dry_run=True)
        assert dry.dry_run and dry.conversations_checked == 1
        (outcome,) = dry.conversations
        # Items 1..10 are 60 days old and compacted; the pinned one stays.
        assert outcome.seqs == (1, 2, 4, 5, 6, 7, 8, 9, 10)
        assert (outcome.removed_by_age, outcome.removed_by_count) == (9, 0)
        assert outcome.policy == RetentionPolicy(30 * DAY, 0, 0.0, False)
        assert not outcome.conversation_removed and dry.items_removed == 9
        assert seqs_of(client, "t") == before  # a dry run removes nothing
        assert client.get_conversation("t") == conversation
        assert service.engine.retention_counters.items_removed == 0

        real = client.apply_retention("t")
        assert not real.dry_run
        assert real.conversations[0].seqs == outcome.seqs and real.items_removed == 9
        assert seqs_of(client, "t") == [s for s in before if s not in outcome.seqs]
        after = client.get_conversation("t")
        assert after.total_items == conversation.total_items - 9
        assert after.archived_items == conversation.archived_items - 9
        counters = service.engine.retention_counters
        assert (counters.items_removed, counters.conversations_removed, counters.runs) == (9, 0, 1)
        # Nothing left to remove: a second run finds nothing.
        assert client.apply_retention("t").conversations == ()

        # The conversation's own policy lets pinned items go too.
        client.update_conversation(
            "t", ConversationSettings(retention=RetentionPolicy(remove_pinned=True))
        )
        assert client.apply_retention("t").conversations[0].seqs == (3,)


@pytest.mark.both_stores
def test_by_count_the_oldest_go_first(start_service: StartService, clock: Clock) -> None:
    service = start(start_service, clock, default=Policy(max_archived_items=4))
    with Client(f"127.0.0.1:{service.port}") as client:
        compacted_history(client, "t", clock)
        report = client.apply_retention("t")
        # 10 compacted items and none archived: 6 go, the oldest first (seqs 1..6).
        assert report.conversations[0].seqs == (1, 2, 3, 4, 5, 6)
        assert report.conversations[0].removed_by_count == 6
        assert client.get_conversation("t").archived_items == 4
        assert index_matches_store(service, "t") == 4


def test_removals_are_counted_in_the_metrics(start_service: StartService, clock: Clock) -> None:
    service = start_service(
        clock=clock,
        retention=RetentionPolicies(Policy(max_archived_items=4, inactive_seconds=30 * DAY)),
        retention_interval_seconds=0,
        metrics_port=0,
    )
    assert service.metrics_port is not None
    with Client(f"127.0.0.1:{service.port}") as client:
        compacted_history(client, "t", clock)
        client.apply_retention("t", dry_run=True)
        before = Scrape(service.metrics_port)
        assert before.value("contextwm_retention_removed_items_total") == 0
        client.apply_retention("t")
        clock.now += 31 * DAY  # nothing appended since: "t" goes whole
        client.apply_retention("t")
        after = Scrape(service.metrics_port)
    # 6 of its 13 items by count, then the 7 left with the conversation.
    assert after.value("contextwm_retention_removed_items_total") == 13
    assert after.value("contextwm_retention_removed_conversations_total") == 1


@pytest.mark.both_stores
def test_window_and_active_context_items_stay(start_service: StartService, clock: Clock) -> None:
    service = start(start_service, clock, default=Policy(max_age_seconds=30 * DAY))
    with Client(f"127.0.0.1:{service.port}") as client:
        # Never compacted: no bounded active context to keep, only the window stays.
        client.create_conversation("never", settings=ConversationSettings(window_max_items=3))
        client.append_batch("never", old_items(clock, 8, days_ago=60))
        embedded(client, "never")
        old = tuple(i.seq for i in client.iter_items("never", states=["archived"]))
        window = [i.seq for i in client.iter_items("never", states=["window"])]
        assert len(old) == 5
        assert client.apply_retention("never").conversations[0].seqs == old
        assert seqs_of(client, "never") == window
        assert [e.seq for e in client.iter_active_context("never")] == window

        # Compacted, then old items appended after the marker: those evicted from the window
        # are archived but still in the active context, so only items before it go.
        compacted_history(client, "t", clock, n=6)
        client.append_batch("t", old_items(clock, 5, days_ago=90, first=20))
        embedded(client, "t")
        archived = [i.seq for i in client.iter_items("t", states=["archived"])]
        assert archived and min(archived) > 7  # after the marker (seq 7)
        report = client.apply_retention("t")
        assert report.conversations[0].seqs == (1, 2, 3, 4, 5, 6)
        window = [i.seq for i in client.iter_items("t", states=["window"])]
        assert set(archived) | set(window) <= set(seqs_of(client, "t"))
        active = [e.seq for e in client.iter_active_context("t")]
        assert active == list(range(7, client.get_conversation("t").last_seq + 1))


def test_what_a_checkpoint_restore_needs_stays(start_service: StartService, clock: Clock) -> None:
    service = start(start_service, clock, default=Policy(max_age_seconds=30 * DAY))
    with Client(f"127.0.0.1:{service.port}") as client:
        client.create_conversation("t", settings=ConversationSettings(window_max_items=3))
        client.append_batch("t", old_items(clock, 10, days_ago=60))
        client.compact("t", "First summary.")  # marker 11
        client.append_batch("t", old_items(clock, 10, days_ago=50, first=10))  # 12..21
        window = [i.seq for i in client.iter_items("t", states=["window"])]
        client.create_checkpoint("t", "cp")  # its active context: 11..21
        client.compact("t", "Second summary.")  # marker 22: 11..21 compacted
        embedded(client, "t")
        report = client.apply_retention("t")
        assert report.conversations[0].seqs == tuple(range(1, 11))  # before the checkpoint's
        restored = client.restore_checkpoint("t", "cp")
        assert restored.checkpoint.name == "cp"
        assert [i.seq for i in client.iter_items("t", states=["window"])] == window
        assert [e.seq for e in client.iter_active_context("t")] == list(range(11, 22))
        index_matches_store(service, "t")


@pytest.mark.both_stores
def test_removed_items_are_gone_from_search_context_and_index_also_after_a_restart(
    start_service: StartService, clock: Clock, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    policies = RetentionPolicies(Policy(max_age_seconds=55 * DAY))
    settings = {"retention": policies, "retention_interval_seconds": 0, "data_dir": data_dir}
    service = start_service(clock=clock, **settings)
    with Client(f"127.0.0.1:{service.port}") as client:
        client.create_conversation("t", settings=ConversationSettings(window_max_items=3))
        client.append_batch("t", old_items(clock, 8, days_ago=60))  # 1..8: go
        client.append_batch("t", old_items(clock, 8, days_ago=50, first=8))  # 9..16: stay
        client.compact("t", "Imports summary.")
        embedded(client, "t")
        gone_text = next(i.content for i in client.iter_items("t") if i.seq == 2)  # quokka

        def found(query: str, mode: str) -> set[int]:
            hits = client.search(query, conversation_id="t", mode=mode, top_k=50)  # type: ignore[arg-type]
            return {h.seq for h in hits.hits}

        def in_context() -> set[int]:
            ctx = client.get_context("t", gone_text, max_tokens=4000)
            return {h.seq for h in ctx.history}

        assert 2 in found("quokka", "lexical") and 2 in found(gone_text, "dense")
        assert 2 in in_context()
        size = index_matches_store(service, "t")

        report = client.apply_retention("t")
        assert report.conversations[0].seqs == tuple(range(1, 9))
        for mode in ("lexical", "dense", "hybrid"):
            assert found("quokka", mode).isdisjoint(range(1, 9)), mode
            assert found(gone_text, mode).isdisjoint(range(1, 9)), mode
        assert 10 in found("quokka", "lexical")  # seq 10 names the quokka too, and stays
        assert in_context().isdisjoint(range(1, 9))
        assert index_matches_store(service, "t") == size - 8
        conversation = client.get_conversation("t")

    service.stop(grace=0)
    sqlite = not service.settings.store  # `contextwm check` reads a SQLite data directory
    if sqlite:
        check_is_clean(data_dir)  # the index file saved at the stop holds no removed item
    again = start_service(clock=clock, **settings)
    with Client(f"127.0.0.1:{again.port}") as client:
        assert seqs_of(client, "t")[0] == 9
        assert client.get_conversation("t") == conversation
        assert found_after_restart(client, "quokka").isdisjoint(range(1, 9))
        assert index_matches_store(again, "t") == size - 8
        # New items get new seqs and are embedded and found (the indexer rescanned).
        client.append("t", "The capybara pipeline finished too.")
        embedded(client, "t")
        hits = client.search("capybara", conversation_id="t", include_window=True, mode="lexical")
        assert {h.seq for h in hits.hits} == {conversation.last_seq + 1}
    again.stop(grace=0)
    if sqlite:
        assert "8 removed" in check_is_clean(data_dir)


def check_is_clean(data_dir: Path) -> str:
    """Runs `contextwm check --verbose` on a stopped server's directory: exit 0 and no stale
    index file. Returns its report."""
    checked = subprocess.run(
        [sys.executable, "-m", "contextwm", "check", str(data_dir), "--verbose"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "stale" not in checked.stdout, checked.stdout
    return checked.stdout


def found_after_restart(client: Client, word: str) -> set[int]:
    return {h.seq for h in client.search(word, conversation_id="t", top_k=50).hits}


@pytest.mark.both_stores
def test_inactive_conversations_go_whole(start_service: StartService, clock: Clock) -> None:
    service = start(start_service, clock, default=Policy(inactive_seconds=7 * DAY))
    with Client(f"127.0.0.1:{service.port}") as client:
        # Historic items appended today: inactivity counts from the append, not the items.
        client.append_batch("imported", old_items(clock, 4, days_ago=400))
        client.append("quiet", "Anyone there?")
        client.create_conversation("empty")
        clock.now += 6 * DAY
        client.append("busy", "Still working on it.")
        assert client.apply_retention(every_namespace=True, dry_run=True).conversations == ()
        clock.now += 2 * DAY  # "busy" was appended to 2 days ago, the others 8

        dry = client.apply_retention(every_namespace=True, dry_run=True)
        assert [
            (c.conversation_id, c.conversation_removed, c.removed_by_inactivity)
            for c in dry.conversations
        ] == [
            ("empty", True, 0),
            ("imported", True, 4),
            ("quiet", True, 1),
        ]
        client.append("quiet", "Back again.")  # an append between the dry run and the run
        real = client.apply_retention(every_namespace=True)
        assert [c.conversation_id for c in real.conversations] == ["empty", "imported"]
        assert (real.items_removed, real.conversations_removed) == (4, 2)
        for gone in ("empty", "imported"):
            with pytest.raises(NotFoundError):
                client.get_conversation(gone)
        assert {c.conversation_id for c in client.iter_conversations()} == {"busy", "quiet"}
        counters = service.engine.retention_counters
        assert (counters.items_removed, counters.conversations_removed) == (4, 2)


# ---------------------------------------------------------------- policies


@pytest.mark.both_stores
def test_the_background_run_applies_a_namespace_policy(
    start_service: StartService, clock: Clock, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    service = start_service(
        clock=clock,
        retention=RetentionPolicies(namespaces={"team-a": Policy(max_age_seconds=30 * DAY)}),
        retention_interval_seconds=0.05,
        audit_log=str(audit),
    )
    with (
        Client(f"127.0.0.1:{service.port}", namespace="team-a") as team,
        Client(f"127.0.0.1:{service.port}") as other,
    ):
        compacted_history(team, "t", clock)
        compacted_history(other, "t", clock)
        counters = service.engine.retention_counters
        assert counters.wait_for(lambda c: c.items_removed >= 10, timeout=30)
        assert seqs_of(team, "t") == [11, 12, 13]
        assert seqs_of(other, "t") == list(range(1, 14))  # the default policy removes nothing
        runs = counters.runs
        assert counters.wait_for(lambda c: c.runs > runs, timeout=30)  # it keeps running
        assert counters.items_removed == 10 and counters.failed_runs == 0
    # The runs that removed them are in the audit trail, the runs that removed nothing not.
    recorded = [json.loads(line) for line in audit.read_text().splitlines()]
    assert {(r["method"], r["key_id"]) for r in recorded} == {("retention", None)}
    assert sum(r["items_removed"] for r in recorded) == 10 and len(recorded) < counters.runs


def test_a_conversations_policy_overrides_its_namespaces_field_by_field(
    start_service: StartService, clock: Clock
) -> None:
    service = start(
        start_service, clock, default=Policy(max_age_seconds=30 * DAY, max_archived_items=4)
    )
    with Client(f"127.0.0.1:{service.port}") as client:
        compacted_history(client, "plain", clock)
        compacted_history(client, "no-age", clock, retention=RetentionPolicy(max_age_seconds=0))
        compacted_history(
            client,
            "more",
            clock,
            retention=RetentionPolicy(max_archived_items=8, max_age_seconds=0),
        )
        # Read back: only the fields the conversation set.
        assert client.get_conversation("no-age").settings.retention == RetentionPolicy(
            max_age_seconds=0.0
        )
        assert client.get_conversation("plain").settings.retention == RetentionPolicy()
        report = {c.conversation_id: c for c in client.apply_retention().conversations}
        assert report["plain"].policy == RetentionPolicy(30 * DAY, 4, 0.0, False)
        assert (report["plain"].removed_by_age, report["plain"].removed_by_count) == (10, 0)
        # Its own age limit is off; the namespace's count limit still applies.
        assert report["no-age"].policy == RetentionPolicy(0.0, 4, 0.0, False)
        assert report["no-age"].seqs == (1, 2, 3, 4, 5, 6)
        assert report["more"].seqs == (1, 2)
        # An update changes one field and keeps the others.
        client.update_conversation(
            "more", ConversationSettings(retention=RetentionPolicy(max_archived_items=5))
        )
        assert client.get_conversation("more").settings.retention == RetentionPolicy(
            max_age_seconds=0.0, max_archived_items=5
        )
        assert client.apply_retention("more").conversations[0].seqs == (3, 4, 5)


def test_bad_policies_and_scopes_are_refused(start_service: StartService, clock: Clock) -> None:
    service = start(start_service, clock)
    with Client(f"127.0.0.1:{service.port}") as client:
        with pytest.raises(InvalidArgumentError, match=r"retention\.max_age_seconds must be"):
            client.create_conversation(
                "t", settings=ConversationSettings(retention=RetentionPolicy(max_age_seconds=-1))
            )
        client.create_conversation("t")
        with pytest.raises(InvalidArgumentError, match=r"retention\.inactive_seconds must be"):
            client.update_conversation(
                "t",
                ConversationSettings(retention=RetentionPolicy(inactive_seconds=float("nan"))),
            )
        with pytest.raises(InvalidArgumentError, match=r"retention\.max_archived_items must be"):
            client.update_conversation(
                "t", ConversationSettings(retention=RetentionPolicy(max_archived_items=-2))
            )
        assert client.get_conversation("t").settings.retention == RetentionPolicy()
        with pytest.raises(
            InvalidArgumentError,
            match="all_namespaces covers every conversation: leave conversation_id empty",
        ):
            client.apply_retention("t", every_namespace=True)
        with pytest.raises(NotFoundError, match="'nope' not found in namespace 'default'"):
            client.apply_retention("nope", dry_run=True)
        with pytest.raises(InvalidArgumentError, match="invalid namespace"):
            client.apply_retention(namespace="not a namespace")


def test_a_checkpoint_before_any_compaction_brings_back_its_window(
    start_service: StartService, clock: Clock
) -> None:
    service = start(start_service, clock, default=Policy(max_age_seconds=30 * DAY))
    with Client(f"127.0.0.1:{service.port}") as client:
        client.create_conversation("t", settings=ConversationSettings(window_max_items=3))
        client.append_batch("t", old_items(clock, 6, days_ago=60))
        window = [i.seq for i in client.iter_items("t", states=["window"])]
        client.create_checkpoint("t", "start")
        client.compact("t", "Summary.")
        embedded(client, "t")
        removed = client.apply_retention("t").conversations[0].seqs
        assert set(removed) == set(range(1, 7)) - set(window)
        client.restore_checkpoint("t", "start")
        assert [i.seq for i in client.iter_items("t", states=["window"])] == window
        assert [e.seq for e in client.iter_active_context("t")] == window


# ---------------------------------------------------------------- command line


def test_the_retention_command(
    start_service: StartService, clock: Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    service = start(start_service, clock, **{"team-a": Policy(max_age_seconds=30 * DAY)})
    target = f"127.0.0.1:{service.port}"
    with Client(target, namespace="team-a") as client:
        compacted_history(client, "t", clock)

    def run(*argv: str) -> str:
        assert cli.main(["--target", target, *argv]) == 0
        return capsys.readouterr().out

    out = run("retention", "--dry-run", "--namespace", "team-a")
    assert out.splitlines() == [
        "team-a/t: 10 items (10 by age, 0 by count): seqs 1-10",
        "would remove 10 items, 0 of them in whole conversations; 1 conversation checked"
        " (dry run: nothing was removed)",
    ]
    report = json.loads(run("--namespace", "team-a", "retention", "t", "--dry-run", "--json"))
    assert report["dry_run"] and report["conversations"][0]["seqs"] == list(range(1, 11))
    # No namespace and no conversation: every namespace (the default one has none).
    assert run("retention").splitlines()[-1] == (
        "removed 10 items, 0 of them in whole conversations; 1 conversation checked"
    )
    assert json.loads(run("retention", "--namespace", "team-a", "--json"))["conversations"] == []


# ---------------------------------------------------------------- the documentation


PAGE = Path(__file__).resolve().parents[2] / "docs" / "retention.md"
SECTION = PAGE.read_text()


def test_the_documented_settings_give_the_policies_they_say(tmp_path: Path) -> None:
    (toml,) = re.findall(r"```toml\n(.*?)```", SECTION, flags=re.S)
    config = tmp_path / "cwm.toml"
    config.write_text(toml)
    settings = load_settings(config)
    assert settings.retention_interval_seconds == 600
    assert settings.retention.for_namespace("team-a") == Policy(30 * DAY, 5000, 90 * DAY)
    assert settings.retention.for_namespace("team-b") == Policy(30 * DAY, None, 90 * DAY)


def test_the_documented_example_runs(
    start_service: StartService, clock: Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    (example,) = re.findall(r"```python\n(.*?)```", SECTION, flags=re.S)
    service = start(start_service, clock, default=Policy(max_age_seconds=30 * DAY))
    with Client(f"127.0.0.1:{service.port}") as cwm:
        compacted_history(cwm, "task-7", clock)
        compacted_history(cwm, "task-8", clock)
        exec(compile(example, str(PAGE), "exec"), {"cwm": cwm})
        assert capsys.readouterr().out.splitlines() == [f"task-8 10 0 False {tuple(range(1, 11))}"]


def test_a_run_removes_in_small_steps_and_never_below_the_limit(
    start_service: StartService, clock: Clock
) -> None:
    service = start(start_service, clock, default=Policy(max_archived_items=4))
    with Client(f"127.0.0.1:{service.port}") as client:
        compacted_history(client, "t", clock)
        # Three items per unit of work: six go by count in two steps, the limit checked in each.
        retention = Retention(service.engine, chunk_items=3)
        report = retention.apply(Scope("default", "t"), dry_run=False)
        assert report.conversations[0].seqs == (1, 2, 3, 4, 5, 6)
        assert client.get_conversation("t").archived_items == 4
        assert retention.apply(Scope("default", "t"), dry_run=False).conversations == ()
        index_matches_store(service, "t")
