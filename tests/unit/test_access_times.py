"""Expiries as `contextwm keys create --expires` takes them, and times as keys show them."""

from __future__ import annotations

import pytest
from contextwm.access.times import expiry_of, utc_text

NOW = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", NOW + 30 * 86400),
        ("12h", NOW + 12 * 3600),
        ("90m", NOW + 90 * 60),
        ("2027-01-31", 1_801_353_600.0),  # 00:00 UTC that day
        ("2027-01-31T12:00", 1_801_353_600.0 + 12 * 3600),  # no offset: UTC
        ("2027-01-31T12:00+02:00", 1_801_353_600.0 + 10 * 3600),
    ],
)
def test_durations_run_from_now_and_dates_are_utc(text: str, expected: float) -> None:
    assert expiry_of(text, NOW) == expected


@pytest.mark.parametrize("text", ["", "30", "0d", "-1d", "3y", "1.5h", "30 d", "d", "tomorrow"])
def test_other_forms_are_refused_with_the_forms_shown(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a duration \(30d, 12h, 90m\)"):
        expiry_of(text, NOW)


def test_times_are_shown_in_utc() -> None:
    assert utc_text(NOW) == "2023-11-14 22:13:20 UTC"
    assert utc_text(1_801_353_600.0) == "2027-01-31 00:00:00 UTC"
