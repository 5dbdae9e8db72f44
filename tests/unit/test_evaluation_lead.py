"""Tests for contextwm.cli.evaluation.lead and its table in the report: the lead over the
best simple selector with a paired bootstrap interval."""

from __future__ import annotations

import io

import pytest
from contextwm.cli.evaluation.labels import Label
from contextwm.cli.evaluation.lead import lead
from contextwm.cli.evaluation.run import Outcome, report


def test_the_lead_is_over_the_best_selector_with_an_interval_around_it() -> None:
    service = [True] * 80 + [False] * 20
    selectors = {"dense": [True] * 70 + [False] * 30, "BM25": [True] * 50 + [False] * 50}
    found = lead(service, selectors)
    assert found is not None
    assert found.selector == "dense"
    assert found.points == pytest.approx(10.0)
    assert found.low < 10.0 < found.high
    # Ten questions of difference in a hundred: the interval does not reach zero.
    assert found.low > 0.0
    assert str(found).startswith("+10.0 [")


def test_pairing_narrows_the_interval_where_both_fail_the_same_questions() -> None:
    # The service hits exactly the selector's questions and two more: paired, the interval
    # spans a few points; resampled apart, each hit rate alone would move by about ten.
    selector = [True, False] * 50
    service = [*selector[:96], True, True, True, True]
    found = lead(service, {"RRF": selector})
    assert found is not None
    assert found.points == pytest.approx(2.0)
    assert 0.0 <= found.low <= found.high <= 6.0


def test_no_lead_without_questions_or_selectors() -> None:
    assert lead([], {"dense": []}) is None
    assert lead([True], {}) is None
    with pytest.raises(ValueError, match="same questions"):
        lead([True, False], {"dense": [True]})


def test_the_report_prints_the_lead_overall_and_by_kind() -> None:
    outcomes = []
    for line in range(40):
        label = Label(line, "c", f"q{line}", (1,), None, kind=("a", "b")[line % 2])
        outcomes.append(Outcome(label, "contextwm", 1024, 1, int(line < 30)))
        outcomes.append(Outcome(label, "dense", 1024, 1, int(line < 20)))
        outcomes.append(Outcome(label, "BM25", 1024, 1, int(line < 10)))
    out = io.StringIO()
    report(outcomes, [1024], out)
    text = out.getvalue()
    assert "== Lead over the best simple selector" in text
    assert "+25.0 [" in text and "vs dense" in text
    assert "== Lead by kind: contextwm" in text
