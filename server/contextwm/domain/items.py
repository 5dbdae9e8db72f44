"""Items and what is said about them: roles, flags, states, file references, scores, filters."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from contextwm.domain.errors import InvalidArgument

ROLES: frozenset[str] = frozenset({"user", "assistant", "system", "tool", "file", "error"})
FILE_KINDS: frozenset[str] = frozenset({"read", "write", "mention"})


class Flag(enum.IntFlag):
    """Importance flags, stored as a bitmask."""

    NONE = 0
    PINNED = 1
    ERROR = 2
    CODE = 4
    QUESTION = 8
    SOLUTION = 16


# "user_starred" is an alias of pinned; both are accepted, "pinned" is returned.
FLAG_BY_NAME: Mapping[str, Flag] = MappingProxyType(
    {
        "pinned": Flag.PINNED,
        "user_starred": Flag.PINNED,
        "error": Flag.ERROR,
        "code": Flag.CODE,
        "question": Flag.QUESTION,
        "solution": Flag.SOLUTION,
    }
)
FLAG_NAMES: tuple[tuple[Flag, str], ...] = (
    (Flag.PINNED, "pinned"),
    (Flag.ERROR, "error"),
    (Flag.CODE, "code"),
    (Flag.QUESTION, "question"),
    (Flag.SOLUTION, "solution"),
)


def parse_flags(names: Iterable[str]) -> Flag:
    """Turns flag names into a bitmask.

    Raises:
        InvalidArgument: for a name that is not a known flag.
    """
    flags = Flag.NONE
    for name in names:
        try:
            flags |= FLAG_BY_NAME[name.strip().lower()]
        except KeyError:
            known = ", ".join(sorted(FLAG_BY_NAME))
            raise InvalidArgument(
                f"unknown importance flag {name!r}; known flags: {known}"
            ) from None
    return flags


_FLAG_BITS: tuple[tuple[int, str], ...] = tuple((int(f), n) for f, n in FLAG_NAMES)


def flag_names(flags: Flag) -> tuple[str, ...]:
    """The names of the flags set in a bitmask, in a fixed order."""
    bits = int(flags)  # plain ints: IntFlag arithmetic is slow on the eviction path
    return tuple(name for bit, name in _FLAG_BITS if bits & bit)


class ItemState(enum.IntEnum):
    """Every item is in exactly one state; the values are stored."""

    WINDOW = 1
    ARCHIVED = 2
    COMPACTED = 3
    REVERTED = 4


@dataclass(frozen=True, slots=True)
class FileRef:
    """A file an item refers to: read, write or mention.

    whole_file says whether the item's content is the file's whole content; unset, a read
    is taken to be whole and a write or mention not (a write is usually an edit or diff).
    """

    path: str
    kind: str
    whole_file: bool | None = None

    @property
    def carries_whole_file(self) -> bool:
        """Whether the item holds the whole file, so a later whole copy supersedes it."""
        if self.whole_file is not None:
            return self.whole_file and self.kind in ("read", "write")
        return self.kind == "read"


@dataclass(frozen=True, slots=True)
class NewItem:
    """An item as a client sends it, validated by the engine."""

    role: str
    content: str
    timestamp: float | None = None
    flags: Flag = Flag.NONE
    metadata: Mapping[str, str] = field(default_factory=dict)
    file: FileRef | None = None
    idempotency_key: str | None = None


@dataclass(frozen=True, slots=True)
class Item:
    """A stored item. Timestamps are Unix seconds (UTC) throughout the service."""

    conversation_id: str
    seq: int
    role: str
    content: str
    timestamp: float
    token_count: int
    flags: Flag
    metadata: Mapping[str, str]
    file: FileRef | None
    state: ItemState
    # "message" for what clients append; "compaction" for the marker a compaction adds.
    kind: str = "message"


@dataclass(frozen=True, slots=True)
class ScoreParts:
    """Why an item scored what it did; parts that do not apply are 0."""

    recency: float = 0.0
    importance: float = 0.0
    similarity: float = 0.0
    lexical: float = 0.0
    role: float = 0.0
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class ScoredItem:
    item: Item
    score: float
    parts: ScoreParts
    neighbor_of: int | None = None
    # The content shown is a notice standing for a superseded file copy.
    replaced: bool = False


@dataclass(frozen=True, slots=True)
class ItemFilter:
    """Conditions an item must meet; empty fields do not restrict."""

    roles: frozenset[str] = frozenset()
    flags: Flag = Flag.NONE
    since: float | None = None
    until: float | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return (
            not self.roles
            and not self.flags
            and self.since is None
            and self.until is None
            and not self.metadata
        )

    def matches(self, item: Item) -> bool:
        return (
            (not self.roles or item.role in self.roles)
            and (item.flags & self.flags) == self.flags
            and (self.since is None or item.timestamp >= self.since)
            and (self.until is None or item.timestamp < self.until)
            and all(item.metadata.get(k) == v for k, v in self.metadata.items())
        )


def tool_of(metadata: Mapping[str, str]) -> str | None:
    """The tool an item came from, as its metadata names it ("tool", else "tool_name")."""
    return metadata.get("tool") or metadata.get("tool_name")
