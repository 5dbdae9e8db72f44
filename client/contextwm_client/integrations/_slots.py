"""A JSON value split into its texts and the rest, and joined back exactly.

An item's texts become a contextwm item's content (counted, embedded, searched); the rest of
the value, its skeleton, fits in the item's metadata. The slots say where each text goes back
and how long it is, so the join is exact whatever the texts hold.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# Between two texts of one value: a line break reads well in a rendered context; the join
# never looks for it (the slots give the lengths).
SEPARATOR = "\n"

Path = list[str | int]


@dataclass(frozen=True, slots=True)
class Split:
    """A value cut in two: its texts joined, and the rest as JSON with where the texts go."""

    text: str
    skeleton: str
    slots: str


def split(value: Any, text_keys: Sequence[str]) -> Split:
    """Moves the string values under `text_keys` (at any depth) out of a JSON value.

    Args:
        value: A JSON value (dicts with string keys, lists, strings, numbers, bools, None).
        text_keys: Keys whose string values are text, in the order their texts are joined
            within one object (a name before its arguments reads better); a key holding a
            list or a dict is walked into instead.

    Returns:
        The texts joined by SEPARATOR, the value with each text emptied, as compact JSON, and
        the slots (path and length of each text) as JSON. A value whose texts are all blank
        keeps them in its skeleton and has no slots, since a blank text is no content.

    Raises:
        TypeError: The value holds something JSON cannot carry.
        ValueError: The value holds a NaN or an infinity.
    """
    skeleton = json.loads(_dumps(value))  # a deep copy, and a check that JSON carries it
    texts: list[str] = []
    slots: list[tuple[Path, int]] = []

    def walk(node: Any, path: Path) -> None:
        if isinstance(node, dict):
            for key in text_keys:
                if isinstance(node.get(key), str):
                    texts.append(node[key])
                    slots.append(([*path, key], len(node[key])))
                    node[key] = ""
            for key, child in node.items():
                if not isinstance(child, str):
                    walk(child, [*path, key])
        elif isinstance(node, list):
            for index, child in enumerate(node):
                walk(child, [*path, index])

    walk(skeleton, [])
    text = SEPARATOR.join(texts)
    if not text.strip():
        return Split(text="", skeleton=_dumps(value), slots="[]")
    return Split(text=text, skeleton=_dumps(skeleton), slots=_dumps(slots))


def join(text: str, skeleton: str, slots: str) -> Any:
    """The value `split` cut: the skeleton with each text put back in its place.

    Args:
        text: The joined texts (the item's content).
        skeleton: The value without its texts, as JSON.
        slots: Path and length of each text, as JSON.

    Returns:
        The value, equal to the one that was split.

    Raises:
        ValueError: The parts do not fit together (not JSON, or texts of other lengths).
    """
    value = json.loads(skeleton)
    start = 0
    for path, length in json.loads(slots):
        end = start + length
        if end > len(text):
            raise ValueError(f"the content is shorter than its slots say ({len(text)} < {end})")
        node = value
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = text[start:end]
        start = end + len(SEPARATOR)
    if slots != "[]" and start - len(SEPARATOR) != len(text):
        raise ValueError("the content is longer than its slots say")
    return value


def _dumps(value: Any) -> str:
    # Compact and unescaped: metadata has a size limit, and non-ASCII text stays one character.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
