"""Times as keys show and take them: UTC text, and expiries given as a duration or a date."""

from __future__ import annotations

import re
from datetime import UTC, datetime

_DURATION = re.compile(r"([1-9][0-9]{0,6})([dhm])")
_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60}
EXPIRY_FORM = "a duration (30d, 12h, 90m) or a UTC date or time (2027-01-31, 2027-01-31T12:00)"


def utc_text(seconds: float) -> str:
    """Unix seconds as `2027-01-31 12:00:00 UTC`."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def expiry_of(text: str, now: float) -> float:
    """When a key given `--expires text` at `now` expires, in Unix seconds.

    Args:
        text: A duration from now (`30d`, `12h`, `90m`), or an ISO 8601 date or time: a
            date means 00:00 UTC that day, a time without an offset is UTC.
        now: The current time, Unix seconds.

    Raises:
        ValueError: text is neither; the message shows the forms.
    """
    if match := _DURATION.fullmatch(text):
        return now + int(match[1]) * _UNIT_SECONDS[match[2]]
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--expires {text!r} is not {EXPIRY_FORM}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
