"""Range checks shared by every module that validates a caller's numbers."""

from __future__ import annotations

import math

from contextwm.domain.errors import InvalidArgument

# The largest integer SQLite stores and protobuf's int64 carries.
INT64_MAX = 2**63 - 1


def check_range(name: str, value: float, low: float, high: float) -> None:
    """Raises InvalidArgument unless low <= value <= high (and value is finite)."""
    if not (math.isfinite(value) and low <= value <= high):
        raise InvalidArgument(
            f"{name} must be between {_number(low)} and {_number(high)}, got {value!r}"
        )


def _number(x: float) -> str:
    """1000000 rather than 1e+06: bounds are read by people."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"
