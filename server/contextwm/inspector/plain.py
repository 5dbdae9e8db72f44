"""Protocol buffer messages as plain JSON values for the inspector's pages: numbers stay
numbers (the proto JSON mapping writes int64 as strings), times are Unix seconds, enums are
their names, and an unset message field is null."""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

_TIMESTAMP = "google.protobuf.Timestamp"


def plain(message: Message) -> dict[str, Any]:
    """Every field of message, set or not, by its proto name."""
    return {f.name: _field(message, f) for f in message.DESCRIPTOR.fields}


def _field(message: Message, field: Any) -> Any:
    value = getattr(message, field.name)
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        value_field = field.message_type.fields_by_name["value"]
        return {k: _value(v, value_field) for k, v in value.items()}
    if field.is_repeated:
        return [_value(v, field) for v in value]
    if field.message_type is not None and not message.HasField(field.name):
        return None
    return _value(value, field)


def _value(value: Any, field: Any) -> Any:
    if field.message_type is not None:
        if field.message_type.full_name == _TIMESTAMP:
            return value.seconds + value.nanos / 1e9
        return plain(value)
    if field.enum_type is not None:
        known = field.enum_type.values_by_number.get(value)
        return known.name if known is not None else value
    return value
