"""Short reprs for value types with long text, so that a REPL print stays readable."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar, cast

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# Long enough for a sentence, short enough that a result with a few items fits on a screen.
PREVIEW_CHARS = 80


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """The repr of text, cut at limit characters with a note of the full length when longer.

    Args:
        text: The text.
        limit: Characters to keep.

    Returns:
        `repr(text)` when it is short enough, else e.g. `'first words...' (5230 chars)`.
    """
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit] + '...'!r} ({len(text)} chars)"


class ShortRepr:
    """Base of dataclasses whose repr shows their long string fields cut short.

    A subclass is declared with `@dataclass(..., repr=False)` and names its long fields in
    `_long_fields`; every other field shows as usual, and nested values use their own reprs.
    """

    __slots__ = ()
    _long_fields: ClassVar[frozenset[str]] = frozenset()

    def __repr__(self) -> str:
        parts = []
        for field in dataclasses.fields(cast("DataclassInstance", self)):
            if not field.repr:
                continue
            value = getattr(self, field.name)
            if field.name in self._long_fields and isinstance(value, str):
                parts.append(f"{field.name}={preview(value)}")
            else:
                parts.append(f"{field.name}={value!r}")
        return f"{type(self).__qualname__}({', '.join(parts)})"
