"""The OpenAI Agents SDK's input items as contextwm items and back, and the compact list.

An input item (a Responses API input item: a message, a function call, its output, a
reasoning item, ...) is stored as one contextwm item: its texts are the content, under a role
read from its type; the rest of it, the skeleton, is in the metadata with the places its texts
go back to, so it is given back equal to what was added. Items that other writers appended
(no skeleton) come back as plain messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import Any

from contextwm_client import EnhancedContext, Item, NewItem, Role, ScoredItem
from contextwm_client.integrations import _slots

ITEM_KEY = "openai_agents.item"
"""Metadata: the item without its texts, as JSON."""
SLOTS_KEY = "openai_agents.slots"
"""Metadata: where each text of the content goes back in the item, as JSON."""
ID_KEY = "openai_agents.id"
"""Metadata: the id the session gave the item, by which it erases it."""
TYPE_KEY = "openai_agents.type"
"""Metadata: the item's type ("message", "function_call", ...), to filter searches by."""
CALL_ID_KEY = "openai_agents.call_id"
"""Metadata: a tool call's call_id, on the call and on its output."""

# Where an input item keeps its text: message content and its parts, tool names, arguments
# and outputs, reasoning summaries; in this order within one object, so that a call reads
# "name" then "arguments". Strings under other keys (ids, image URLs, encrypted reasoning)
# stay in the skeleton.
TEXT_KEYS = ("name", "arguments", "content", "text", "output", "refusal")

_MESSAGE_ROLES: Mapping[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}
# Roles a plain message of the Responses API can have: other contextwm roles (tool, file,
# error) come back as text, since such an item names no call to answer.
_PLAIN_ROLES = frozenset({"user", "assistant", "system"})
# Items that stand alone only inside the response that made them: sent back on their own
# (an encrypted reasoning item without the message it led to), the API refuses them.
_RESPONSE_BOUND_TYPES = frozenset({"reasoning"})


def item_type(item: Mapping[str, Any]) -> str:
    """The item's type; an easy input message ({"role", "content"}) has none and is a
    "message"."""
    return str(item.get("type") or "message")


def role_of(item: Mapping[str, Any]) -> Role:
    """The contextwm role of an input item.

    Messages keep their role (a developer message is "system"); a tool's output is "tool";
    an answer to an approval request is the user's; every other item (tool calls, reasoning)
    is the assistant's doing.
    """
    kind = item_type(item)
    if kind == "message":
        return _MESSAGE_ROLES.get(str(item.get("role")), "user")
    if kind.endswith("_output"):
        return "tool"
    if kind == "mcp_approval_response":
        return "user"
    return "assistant"


def to_new_item(item: Mapping[str, Any], item_id: str) -> NewItem:
    """An input item as the contextwm item that stores it.

    Args:
        item: The input item (a JSON-like dict, as the SDK hands it to a session).
        item_id: The id the session gives it, unique in the conversation.

    Returns:
        The item to append: its texts as content (or "[TYPE item]" when it has none), its
        role, and the metadata that gives it back.

    Raises:
        TypeError: The item holds something JSON cannot carry.
        ValueError: The item holds a NaN or an infinity.
    """
    parts = _slots.split(item, TEXT_KEYS)
    kind = item_type(item)
    metadata = {ID_KEY: item_id, TYPE_KEY: kind, ITEM_KEY: parts.skeleton, SLOTS_KEY: parts.slots}
    call_id = item.get("call_id")
    if isinstance(call_id, str) and call_id:
        metadata[CALL_ID_KEY] = call_id
    return NewItem(content=parts.text or f"[{kind} item]", role=role_of(item), metadata=metadata)


def from_item(item: Item) -> dict[str, Any]:
    """The input item a contextwm item stores: equal to the one added, for an item a session
    added; a plain message ({"role", "content"}) for any other.

    Raises:
        ValueError: The item's metadata was changed and no longer fits its content.
    """
    skeleton = item.metadata.get(ITEM_KEY)
    if skeleton is None:
        if item.role in _PLAIN_ROLES:
            return {"role": item.role, "content": item.content}
        return {"role": "system", "content": f"{item.role}: {item.content}"}
    slots = item.metadata.get(SLOTS_KEY, "[]")
    value = _slots.join(item.content if slots != "[]" else "", skeleton, slots)
    if not isinstance(value, dict):
        raise ValueError(f"item {item.seq}: {ITEM_KEY} is not an object")
    return value


def compact_items(context: EnhancedContext) -> list[dict[str, Any]]:
    """The enhanced context as input items: the history it chose as one system message, then
    the recent items as they were added.

    A recent item that cannot be sent on its own goes into the system message as text: a
    tool call without its output or an output without its call (the API refuses an unpaired
    one), a reasoning item, an item of another writer whose role no message has.

    Args:
        context: What GetContext returned for the conversation.

    Returns:
        The items, in time order after the system message (which is left out when empty).
    """
    recent = sorted(context.recent, key=lambda s: s.item.seq)
    decoded = [(s, from_item(s.item)) for s in recent]
    paired = _complete_calls([value for _, value in decoded])
    as_text: list[ScoredItem] = list(context.history)
    as_items: list[dict[str, Any]] = []
    for scored, value in decoded:
        call_id = value.get("call_id")
        alone = ITEM_KEY in scored.item.metadata or scored.item.role in _PLAIN_ROLES
        bound = item_type(value) in _RESPONSE_BOUND_TYPES
        unpaired = isinstance(call_id, str) and call_id not in paired
        if alone and not bound and not unpaired:
            as_items.append(value)
        else:
            as_text.append(scored)
    if not as_text:
        return as_items
    return [{"role": "system", "content": render(as_text)}, *as_items]


def render(items: Sequence[ScoredItem]) -> str:
    """Items as the enhanced context renders its history: "role: content" in time order,
    under one heading per day (UTC) that names its year when it is the first or the year
    changed."""
    parts = ["# Relevant Historical Context"]
    day = ""
    year = 0
    for scored in sorted(items, key=lambda s: (s.item.timestamp, s.item.seq)):
        at = scored.item.timestamp.astimezone(UTC)
        heading = f"## {at:%a} {at.day} {at:%b}"
        if heading != day:
            day = heading
            if at.year != year:
                year = at.year
                heading = f"{heading} {year}"
            parts.append(heading)
        parts.append(f"{scored.item.role}: {scored.item.content}")
    return "\n\n".join(parts)


def _complete_calls(values: Sequence[Mapping[str, Any]]) -> set[str]:
    """The call_ids that have both a call and its output among the values."""
    calls: set[str] = set()
    outputs: set[str] = set()
    for value in values:
        call_id = value.get("call_id")
        if isinstance(call_id, str):
            (outputs if item_type(value).endswith("_output") else calls).add(call_id)
    return calls & outputs
