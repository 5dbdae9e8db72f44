"""Old names kept for one release: each use warns with a DeprecationWarning naming the new one."""

from __future__ import annotations

import warnings
from typing import TypeVar

T = TypeVar("T")


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warns that old is a deprecated name of new.

    Args:
        old: The deprecated name, e.g. "Client.append_many".
        new: The name to use instead.
        stacklevel: As for `warnings.warn`, counted from here; the default points at the
            caller of the function that calls this one (the user's code behind an alias).
    """
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed_argument(old: str, old_value: T | None, new: str, new_value: T, default: T) -> T:
    """The value of a renamed keyword argument: the new one, or the old one with a warning.

    Args:
        old: The deprecated keyword's name.
        old_value: Its value; None when it was not passed.
        new: The keyword's new name.
        new_value: The new keyword's value.
        default: The new keyword's default, which tells whether it was passed.

    Returns:
        new_value, or old_value when only the old keyword was passed.

    Raises:
        TypeError: Both keywords were passed.
    """
    if old_value is None:
        return new_value
    if new_value != default:
        raise TypeError(f"pass {new} only ({old} is its deprecated name)")
    # 4 skips warn_renamed, this function and the client method: it points at the user's call.
    warn_renamed(old, new, stacklevel=4)
    return old_value
