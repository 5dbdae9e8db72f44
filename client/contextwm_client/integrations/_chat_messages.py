"""LlamaIndex chat messages as contextwm items and back.

A message is stored as one item: the texts of its blocks (and of tool calls) are the
content, under a role read from the message's; the rest of the message, its skeleton, is
in the metadata with the places its texts go back to, so that it is rebuilt equal to the
message that was stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from llama_index.core.base.llms.types import ChatMessage, TextBlock

from contextwm_client import Item, NewItem, Role
from contextwm_client.integrations import _slots

MESSAGE_KEY = "llama_index.message"
"""Metadata: the message without its texts, as JSON."""
SLOTS_KEY = "llama_index.slots"
"""Metadata: where each text of the content goes back in the message, as JSON."""
SESSION_KEY = "llama_index.session_id"
"""Metadata: the session of the Memory that flushed the message."""

# Where a message keeps its text: text and thinking blocks, tool calls (a ToolCallBlock's
# name and arguments, or an LLM's tool_calls in additional_kwargs); names before arguments.
TEXT_KEYS = ("tool_name", "name", "tool_kwargs", "arguments", "text", "content")

_ROLES: Mapping[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "chatbot": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
}
# Memory writes its session id into each message it flushes to a block: it is the
# conversation's business (SESSION_KEY), not the message's.
_MEMORY_SESSION_KWARG = "session_id"


def role_of(message: ChatMessage) -> Role:
    """The contextwm role of a message: a developer message is "system", a function's
    "tool", a chatbot's or model's "assistant"."""
    return _ROLES.get(str(message.role.value), "user")


def to_new_item(message: ChatMessage) -> NewItem:
    """A chat message as the contextwm item that stores it.

    Args:
        message: The message (Memory's session id in its additional_kwargs is left out of
            the message and kept in the metadata).

    Returns:
        The item to append: the message's texts as content (or "[ROLE message]" when it
        has none), its role, and the metadata that rebuilds it.

    Raises:
        TypeError: The message holds something JSON cannot carry.
    """
    value = message.model_dump(mode="json")
    session_id = value["additional_kwargs"].pop(_MEMORY_SESSION_KWARG, None)
    parts = _slots.split(value, TEXT_KEYS)
    metadata = {MESSAGE_KEY: parts.skeleton, SLOTS_KEY: parts.slots}
    if session_id is not None:
        metadata[SESSION_KEY] = str(session_id)
    role = role_of(message)
    return NewItem(
        content=parts.text or f"[{message.role.value} message]", role=role, metadata=metadata
    )


def from_item(item: Item) -> ChatMessage:
    """The message a contextwm item stores: equal to the stored one (without Memory's
    session id); a plain message of the item's role and content for an item that other
    writers appended.

    Raises:
        ValueError: The item's metadata no longer fits its content.
    """
    skeleton = item.metadata.get(MESSAGE_KEY)
    if skeleton is None:
        return ChatMessage(role=item.role if item.role in _ROLES else "user", content=item.content)
    slots = item.metadata.get(SLOTS_KEY, "[]")
    return ChatMessage.model_validate(
        _slots.join(item.content if slots != "[]" else "", skeleton, slots)
    )


def text_of(message: ChatMessage) -> str:
    """The text of a message's text blocks, one per line."""
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock))


def latest_user_text(messages: Sequence[ChatMessage]) -> str | None:
    """The text of the newest user message that has any; None when none has."""
    for message in reversed(messages):
        if message.role.value == "user" and (text := text_of(message)).strip():
            return text
    return None
