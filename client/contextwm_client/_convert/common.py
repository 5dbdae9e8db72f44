"""What every feature's converters share: enum names, unset fields, flags, timestamps, files."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Final, TypeVar, cast

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from contextwm_client._types import FileRef
from contextwm_client._vocabulary import FileKind, Flag
from contextwm_client.v1 import contextwm_pb2 as pb

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

N = TypeVar("N", bound=str)
E = TypeVar("E", bound=int)
V = TypeVar("V")

UNSPECIFIED: Final = "unspecified"


# Each module lists the lower-case names the client uses for its proto enums as (name, number)
# pairs ("_UNSPECIFIED" has none: it means "not set"), and looks them up both ways. A test
# checks that every proto value is listed.
def by_name(pairs: Iterable[tuple[N, E]]) -> Mapping[str, E]:
    return {name: number for name, number in pairs}


def by_number(pairs: Iterable[tuple[N, E]]) -> Mapping[int, N]:
    return {number: name for name, number in pairs}


def enum_value(names: Mapping[str, E], name: str, what: str) -> E:
    # Enums cannot carry an unknown name over the wire, so this check cannot be left to the
    # server: an unknown name fails here, before any call.
    try:
        return names[name]
    except KeyError:
        raise ValueError(f"unknown {what} {name!r}; expected one of {sorted(names)}") from None


def if_set(message: Message, name: str, value: V) -> V | None:
    # Proto3 `optional` and message fields: unset reads as the zero value, HasField tells.
    return value if message.HasField(name) else None


def as_flags(names: Iterable[str]) -> tuple[Flag, ...]:
    # The server returns only names it knows (see _vocabulary for a newer server's).
    return cast("tuple[Flag, ...]", tuple(names))


def to_proto_timestamp(value: datetime) -> Timestamp:
    """Converts a datetime to a Timestamp; a naive datetime is taken as UTC.

    Args:
        value: The datetime.

    Returns:
        The Timestamp, with microsecond precision.
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    message = Timestamp()
    message.FromDatetime(value)
    return message


def from_proto_timestamp(message: Timestamp) -> datetime:
    """Converts a Timestamp to a timezone-aware UTC datetime (nanoseconds are truncated)."""
    # As Timestamp.ToDatetime does, in a third of its time (a context has a hundred items).
    return _EPOCH + timedelta(seconds=message.seconds, microseconds=message.nanos // 1000)


def to_proto_file_ref(value: FileRef) -> pb.FileRef:
    """Converts a FileRef to its message; whole_file None stays unset (the server decides)."""
    return pb.FileRef(path=value.path, kind=value.kind, whole_file=value.whole_file)


def from_proto_file_ref(message: pb.FileRef) -> FileRef:
    """Converts a FileRef message to a FileRef; an unset whole_file becomes None."""
    return FileRef(
        path=message.path,
        kind=cast("FileKind", message.kind),
        whole_file=if_set(message, "whole_file", message.whole_file),
    )
