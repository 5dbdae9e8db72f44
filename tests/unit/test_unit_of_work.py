"""The unit of work: what a change commits is published, what fails is undone in memory, and
a check that fails before memory changed costs no reload."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from contextwm.conversations.engine import ContextEngine
from contextwm.domain.conversations import SettingsPatch
from contextwm.domain.errors import Unavailable
from contextwm.domain.history import EventKind
from contextwm.domain.items import NewItem
from hashing_engine import hashing_engine

NS, CID = "default", "c"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[ContextEngine]:
    with hashing_engine(tmp_path, index_wait_seconds=0.0) as engine:
        engine.create_conversation(NS, CID, SettingsPatch())
        engine.append(NS, CID, [NewItem(role="user", content="first")])
        yield engine


def test_a_commit_numbers_its_events_and_publishes_them_after_the_block(
    engine: ContextEngine,
) -> None:
    rt = engine.runtime(NS, CID)
    subscription = engine.events.subscribe(rt.key, rt.last_event)
    before = rt.last_event
    with engine.change(NS, CID) as change:
        change.emit(EventKind.EVICTION, (1,))
        change.commit(lambda events: engine.store.record_events(rt.key, events))
        assert rt.last_event == before + 1
        assert change.committed[0].number == before + 1
    published = next(iter(subscription))
    subscription.close()
    assert (published.number, published.kind) == (before + 1, EventKind.EVICTION)
    assert engine.store.events_after(rt.key, before, 10)[0].number == before + 1


def test_a_failed_write_leaves_memory_as_the_store_has_it_and_publishes_nothing(
    engine: ContextEngine,
) -> None:
    rt = engine.runtime(NS, CID)
    subscription = engine.events.subscribe(rt.key, rt.last_event)
    window, event = [e.item.seq for e in rt.window], rt.last_event

    def fail(_: object) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError), engine.change(NS, CID) as change:
        change.touch()
        rt.window.remove(1)  # memory changed, then the write fails
        change.emit(EventKind.EVICTION, (1,))
        change.commit(fail)
    assert [e.item.seq for e in rt.window] == window
    assert rt.last_event == event
    engine.append(NS, CID, [NewItem(role="user", content="second")])
    first = next(iter(subscription))  # the failed change's event never came
    subscription.close()
    assert (first.number, first.kind) == (event + 1, EventKind.USAGE)


def test_a_check_that_fails_before_memory_changes_costs_no_reload(
    engine: ContextEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    reloads: list[int] = []
    monkeypatch.setattr(engine.runtimes, "reload", lambda rt: reloads.append(rt.key))
    with pytest.raises(ValueError), engine.change(NS, CID):
        raise ValueError("refused")
    assert reloads == []
    with pytest.raises(ValueError), engine.change(NS, CID) as change:
        change.touch()
        raise ValueError("failed half-way")
    assert reloads == [engine.runtime(NS, CID).key]


def test_events_emitted_but_never_committed_are_a_bug_not_a_silent_loss(
    engine: ContextEngine,
) -> None:
    with pytest.raises(RuntimeError, match="never committed"), engine.change(NS, CID) as c:
        c.emit(EventKind.EVICTION, (1,))


def test_a_reload_the_store_cannot_answer_is_not_taken_for_a_deletion(
    engine: ContextEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = engine.runtime(NS, CID)

    def down(*_: object) -> None:
        raise Unavailable("the store cannot be reached; retry the call")

    def cut_off(_: object) -> None:
        # The store goes down with the write: the reload after it cannot read either.
        monkeypatch.setattr(engine.store, "version", down)
        raise Unavailable("the store cannot be reached; retry the call")

    with pytest.raises(Unavailable), engine.change(NS, CID) as change:
        change.touch()
        change.commit(cut_off)
    assert not rt.deleted
    # A call that waited for the conversation meanwhile is told to retry, not that it is gone.
    with pytest.raises(Unavailable, match="retry"), engine.runtimes.holding(rt):
        pass
    monkeypatch.undo()
    engine.append(NS, CID, [NewItem(role="user", content="second")])
    assert [e.item.content for e in engine.runtime(NS, CID).window] == ["first", "second"]
