"""LangChain messages as contextwm items and back: the role, a searchable text, and every
other field of the message kept in the item's metadata, so a message reads back equal."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeGuard, get_args

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

from contextwm_client import Flag, Item, NewItem, Role

# Item metadata the adapter writes; other keys are the caller's and are left alone.
TYPE_KEY = "langchain.type"
NAME_KEY = "langchain.name"
ID_KEY = "langchain.id"
TOOL_CALL_ID_KEY = "langchain.tool_call_id"
FIELDS_KEY = "langchain.fields"
# The fields with keys of their own: short strings a search's metadata filter can name.
_OWN_KEYS = {"name": NAME_KEY, "id": ID_KEY, "tool_call_id": TOOL_CALL_ID_KEY}

ROLES: frozenset[str] = frozenset(get_args(Role))
# The server refuses an item whose content is blank; a message may have no text at all.
NO_TEXT = "(no text)"


def message_role(message: BaseMessage) -> Role:
    """The item role of a message: human user, AI assistant, system, tool (function messages
    too), a chat message's own role when contextwm has it, else user.

    Raises:
        ValueError: The message is not one to store (a LangGraph RemoveMessage, say).
    """
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, ToolMessage | FunctionMessage):
        return "tool"
    if isinstance(message, ChatMessage):
        role = message.role
        return role if _is_role(role) else "user"
    raise ValueError(f"a {type(message).__name__} is not a message to store")


def item_text(message: BaseMessage) -> str:
    """What the item's content is: the message's text, then one line per tool call, so that
    search and the enhanced context see what an assistant asked for; never blank."""
    text = str(message.text)
    lines = [text] if text.strip() else []
    if isinstance(message, AIMessage):
        lines += [f"tool call {call['name']}({_json(call['args'])})" for call in message.tool_calls]
    if lines:
        return "\n".join(lines)
    if isinstance(message.content, list):  # blocks without text: say what they were
        kinds = [b.get("type", "block") if isinstance(b, dict) else "text" for b in message.content]
        return " ".join(f"[{kind}]" for kind in kinds) or NO_TEXT
    return NO_TEXT


def message_to_item(message: BaseMessage, metadata: Mapping[str, str] | None = None) -> NewItem:
    """One message as an item to append.

    The item's content is `item_text`; its metadata holds the caller's pairs, the message's
    type, name, id and tool_call_id under keys of their own, and its other fields that are
    set (tool calls, usage, additional_kwargs, response_metadata, a ToolMessage's status and
    artifact, the content itself when it is not the item's text) as JSON. A message with an
    id gets the idempotency key `langchain:<id>`, so a retried append stores it once; a tool
    message with status "error" is flagged "error".

    Args:
        message: The message.
        metadata: Pairs to add to the item's metadata (keys starting "langchain." are the
            adapter's).

    Returns:
        The item.

    Raises:
        ValueError: The message is not one to store, or a field is not JSON.
    """
    role = message_role(message)
    serialized = message_to_dict(message)
    data: dict[str, Any] = dict(serialized["data"])
    content = data.pop("content")
    data.pop("type", None)
    text = item_text(message)
    pairs = dict(metadata or {})
    pairs[TYPE_KEY] = str(serialized["type"])
    for field, key in _OWN_KEYS.items():
        value = data.pop(field, None)
        if value is not None:
            pairs[key] = str(value)
    fields = {k: v for k, v in data.items() if v is not None and v != {} and v != []}
    if content != text:
        fields["content"] = content
    if fields:
        try:
            pairs[FIELDS_KEY] = _json(fields)
        except TypeError as exc:
            raise ValueError(f"a {type(message).__name__}'s fields are not JSON: {exc}") from exc
    flags: tuple[Flag, ...] = ("error",) if getattr(message, "status", None) == "error" else ()
    return NewItem(
        content=text,
        role=role,
        flags=flags,
        metadata=pairs,
        idempotency_key=f"langchain:{message.id}" if message.id else None,
    )


def item_to_message(item: Item) -> BaseMessage:
    """The message an item holds: the message written by `message_to_item`, equal to it, or
    for an item appended otherwise, a message of its role (user HumanMessage, assistant
    AIMessage, system SystemMessage, tool ToolMessage, file and error ChatMessage).

    Raises:
        ValueError: The item's langchain metadata cannot be read back (the message names it).
    """
    meta = item.metadata
    kind = meta.get(TYPE_KEY)
    if kind is None:
        return _plain_message(item)
    try:
        data: dict[str, Any] = json.loads(meta[FIELDS_KEY]) if FIELDS_KEY in meta else {}
        data.setdefault("content", item.content)
        data.update({field: meta[key] for field, key in _OWN_KEYS.items() if key in meta})
        return messages_from_dict([{"type": kind, "data": data}])[0]
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f"item {item.seq} of {item.conversation_id!r} does not read back as a"
            f" LangChain {kind!r} message: {exc}"
        ) from exc


def _plain_message(item: Item) -> BaseMessage:
    """A message for an item that another client appended, by its role."""
    if item.role == "user":
        return HumanMessage(content=item.content)
    if item.role == "assistant":
        return AIMessage(content=item.content)
    if item.role == "system":
        return SystemMessage(content=item.content)
    if item.role == "tool":
        return ToolMessage(
            content=item.content, tool_call_id=item.metadata.get(TOOL_CALL_ID_KEY, "")
        )
    return ChatMessage(role=item.role, content=item.content)


def _is_role(name: str) -> TypeGuard[Role]:
    return name in ROLES


def _json(value: object) -> str:
    # Compact and in a stable order: metadata is limited in bytes, and equal values compare
    # equal as text.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
