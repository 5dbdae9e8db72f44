"""Chat exports people download from their accounts: ChatGPT's and Claude's conversations.json
(plain, .gz, or inside the export's .zip), read one chat at a time so that an export of
hundreds of megabytes is never held whole; each chat becomes one conversation's items."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import IO, Any, cast

import ijson
from contextwm_client import FileRef, ImportItem, NewItem, Role

from contextwm.cli.importing.sources import BadLine, ChatFormat, Input, Record

# What each export calls itself in messages, and the field a chat of it always has.
_LABELS: dict[ChatFormat, str] = {"chatgpt": "ChatGPT", "claude": "Claude"}
_SHAPES: dict[ChatFormat, str] = {"chatgpt": "mapping", "claude": "chat_messages"}
_CHATGPT_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "tool": "tool",
}
_CLAUDE_SENDERS: dict[str, Role] = {"human": "user", "assistant": "assistant"}
# The model's reasoning, which the chat shows folded away, is not part of the dialog.
_REASONING = frozenset({"thoughts", "reasoning_recap"})
# Non-text parts of a ChatGPT message, shown as a placeholder (their bytes are not exported).
_PLACEHOLDERS = {
    "image_asset_pointer": "[image]",
    "audio_asset_pointer": "[audio]",
    "real_time_user_audio_video_asset_pointer": "[audio/video]",
    "video_container_asset_pointer": "[video]",
}
# Bytes read ahead to tell an array of chats (or one chat) from anything else.
_PEEK = 64
# Claude's parent of a chat's first message: no message.
_CLAUDE_ROOT = "00000000-0000-4000-8000-000000000000"


class ChatReader:
    """Turns a chat export into Records, one a chat, in the export's order."""

    def __init__(self, fmt: ChatFormat) -> None:
        """Args:
        fmt: chatgpt or claude.
        """
        self.fmt = fmt

    def records(self, source: Input, skip_lines: int = 0, start: int = 0) -> Iterator[Record]:
        """The export's chats from chat skip_lines + 1 on (the chats before are parsed and
        passed over: a JSON array cannot be entered in the middle).

        Args:
            skip_lines: Chats already imported (a resume point).
            start: Unused: a resumed export is read from its start.

        Raises:
            OSError: The input cannot be read.
            BadLine: It is not an export of this format, or its JSON breaks off (after the
                chats read so far).
        """
        del start  # positions of an export are only for progress
        data, raw = source.open(member="conversations.json")
        label = _LABELS[self.fmt]
        try:
            number = 0
            for number, chat in enumerate(_chats(data, source.name, label), start=1):
                if number == 1:
                    _check_shape(source.name, self.fmt, chat)
                if number <= skip_lines:
                    continue
                end = _position(raw)
                try:
                    if not isinstance(chat, dict):
                        raise BadLine(f"chat {number} is not a JSON object")
                    if self.fmt == "chatgpt":
                        items, others = chatgpt_items(source.name, number, chat)
                    else:
                        items, others = claude_items(source.name, number, chat), 0
                except ValueError as e:  # BadLine, and bad values found converting
                    yield Record(number, end, error=f"{_which(chat)}{e}")
                    continue
                except (TypeError, AttributeError, KeyError) as e:
                    # A field of another type than exports have: this chat only is skipped.
                    reason = f"{_which(chat)}not shaped as a {label} chat ({e!r})"
                    yield Record(number, end, error=reason)
                    continue
                yield Record(number, end, tuple(items), other_branches=others)
        finally:
            data.close()
            if raw is not data:
                raw.close()


def _chats(data: IO[bytes], name: str, label: str) -> Iterator[Any]:
    """The chats of an export (a JSON array of them, or one chat), each parsed on its own.

    Raises:
        BadLine: Not JSON, or neither an array nor an object; JSON that breaks off.
    """
    # A byte order mark is not JSON: the parser gets what follows it.
    head = _peek(data).removeprefix(b"\xef\xbb\xbf")
    first = head.lstrip()[:1]
    if first not in (b"[", b"{"):
        found = "an empty file" if not first else "not a JSON array of chats"
        raise BadLine(f"{name}: not a {label} export ({found})")
    read = 0
    try:
        # A chat's own conversation file (some exports add one a chat) is a single object.
        prefix = "item" if first == b"[" else ""
        for chat in ijson.items(_Peeked(data, head), prefix, use_float=True):
            read += 1
            yield chat
    except ijson.JSONError as e:
        after = f"after chat {read}" if read else "at its start"
        raise BadLine(f"{name}: not valid JSON {after}: {e}") from e


def _check_shape(name: str, fmt: ChatFormat, chat: Any) -> None:
    """Refuses an input whose first chat is not one of this export: the wrong file or the
    wrong --format, said at once rather than once a chat."""
    key = _SHAPES[fmt]
    if isinstance(chat, dict) and key in chat:
        return
    hint = ""
    if isinstance(chat, dict):
        other = next((f for f, k in _SHAPES.items() if f != fmt and k in chat), None)
        if other is not None:
            hint = f"; it looks like a {_LABELS[other]} export: --format {other}"
        elif "messages" in chat:
            hint = "; it looks like OpenAI chat records: --format openai"
    raise BadLine(f'{name}: not a {_LABELS[fmt]} export (its first chat has no "{key}"{hint})')


def chatgpt_items(name: str, number: int, chat: Mapping[str, Any]) -> tuple[list[ImportItem], int]:
    """The items of a ChatGPT chat: the messages of its current branch, oldest first.

    Args:
        name: The input's name, for the items' sources.
        number: The chat's position in the export, from 1.
        chat: The chat as exported.

    Returns:
        The items, and how many messages with text sit on other branches (not imported).

    Raises:
        BadLine: The chat has no message tree, or a message an unknown role.
    """
    mapping = chat.get("mapping")
    if not isinstance(mapping, dict):
        raise BadLine('no "mapping" of messages')
    branch = _current_branch(mapping, chat.get("current_node"))
    chat_id = _string(chat.get("conversation_id")) or _string(chat.get("id"))
    # Without an id, the root's: it stays the same however the chat goes on.
    conversation = f"chatgpt-{chat_id or (branch[0] if branch else number)}"
    metadata = _chat_metadata(
        "chatgpt", chat.get("title"), _seconds(chat.get("create_time")), chat.get("update_time")
    )
    items: list[ImportItem] = []
    moment = _seconds(chat.get("create_time"))
    on_branch = set(branch)
    for node_id in branch:
        message = _message(mapping[node_id])
        if message is None:
            continue
        text = chatgpt_text(message)
        if not text:
            continue
        author = _object(message.get("author"))
        role = _string(author.get("role")) or ""
        if role not in _CHATGPT_ROLES:
            raise BadLine(f"message {node_id}: unknown author role {role!r}")
        moment = _seconds(message.get("create_time")) or moment
        message_id = _string(message.get("id")) or node_id
        extra = {"message_id": message_id}
        if author_name := _string(author.get("name")):
            extra["author_name"] = author_name
        if model := _string(_object(message.get("metadata")).get("model_slug")):
            extra["model"] = model
        content_type = _string(_object(message.get("content")).get("content_type"))
        if content_type and content_type != "text":
            extra["content_type"] = content_type
        items.append(
            ImportItem(
                conversation,
                NewItem(
                    content=text,
                    role=_CHATGPT_ROLES[role],
                    timestamp=moment,
                    metadata={**metadata, **extra},
                    idempotency_key=f"chatgpt:{message_id}",
                ),
                source=f"{name}:{number} message {message_id}",
            )
        )
    others = sum(
        1
        for node_id, node in mapping.items()
        if node_id not in on_branch and (m := _message(node)) is not None and chatgpt_text(m)
    )
    return items, others


def _current_branch(mapping: Mapping[str, Any], current: Any) -> list[str]:
    """The node ids from the root to the current node: the branch the chat shows (a
    regenerated answer or an edited question starts another branch at its parent)."""
    if not isinstance(current, str) or current not in mapping:
        raise BadLine(f"its current_node {current!r} is not in its mapping")
    branch: list[str] = []
    node_id: Any = current
    while isinstance(node_id, str) and node_id in mapping:
        if node_id in branch:
            raise BadLine(f"its message tree has a cycle at {node_id!r}")
        branch.append(node_id)
        node = mapping[node_id]
        node_id = node.get("parent") if isinstance(node, dict) else None
    branch.reverse()
    return branch


def _message(node: Any) -> dict[str, Any] | None:
    """A node's message, unless it has none or the chat hides it (the custom instructions
    and the like, sent to the model but never shown)."""
    message = node.get("message") if isinstance(node, dict) else None
    if not isinstance(message, dict):
        return None
    if _object(message.get("metadata")).get("is_visually_hidden_from_conversation"):
        return None
    return message


def chatgpt_text(message: Mapping[str, Any]) -> str:
    """A ChatGPT message's text: its text parts joined; other parts as their text or a short
    placeholder; an assistant's message to a tool as `tool call: tool(text)`; its reasoning,
    none.

    Args:
        message: The message as exported.

    Returns:
        The text, "" when there is none to import.
    """
    content = message.get("content")
    if not isinstance(content, dict):
        return ""
    kind = content.get("content_type")
    if kind in _REASONING:
        return ""
    given = content.get("parts")
    parts: list[str] = []
    for part in given if isinstance(given, list) else ():
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict):
            parts.append(_part_text(part))
    if not given:
        parts.append(_part_text(content))
    text = "\n".join(p for p in parts if p).strip()
    recipient = message.get("recipient")
    role = _object(message.get("author")).get("role")
    if text and role == "assistant" and _string(recipient) and recipient != "all":
        return f"tool call: {recipient}({text})"
    return text


def _part_text(part: Mapping[str, Any]) -> str:
    """The text of a non-text part (code, a tool's output, a quote), or its placeholder."""
    kind = part.get("content_type")
    if isinstance(kind, str) and kind in _PLACEHOLDERS:
        return _PLACEHOLDERS[kind]
    if kind == "tether_quote":
        title, url, text = (_string(part.get(k)) or "" for k in ("title", "url", "text"))
        where = " ".join(w for w in (title, f"({url})" if url else "") if w)
        return f"{where}: {text}" if where else text
    for key in ("text", "result"):
        if _string(part.get(key)):
            return cast(str, part[key])
    if kind == "user_editable_context":  # custom instructions shown in the chat
        fields = (_string(part.get(k)) for k in ("user_profile", "user_instructions"))
        return "\n".join(f for f in fields if f)
    return f"[{kind}]" if _string(kind) and kind != "text" else ""


def claude_items(name: str, number: int, chat: Mapping[str, Any]) -> list[ImportItem]:
    """The items of a Claude chat: its messages in order (one branch: see _claude_branch),
    each attachment an item of its own (role file) before the message it came with.

    Args:
        name: The input's name, for the items' sources.
        number: The chat's position in the export, from 1.
        chat: The chat as exported.

    Returns:
        The items.

    Raises:
        BadLine: The chat has no uuid or messages, or a message an unknown sender.
    """
    chat_id = _string(chat.get("uuid"))
    if not chat_id:
        raise BadLine('no "uuid"')
    messages = chat.get("chat_messages")
    if not isinstance(messages, list):
        raise BadLine('no "chat_messages" list')
    conversation = f"claude-{chat_id}"
    metadata = _chat_metadata(
        "claude", chat.get("name"), _iso(chat.get("created_at")), chat.get("updated_at")
    )
    items: list[ImportItem] = []
    moment = _iso(chat.get("created_at"))
    for index, message in _claude_branch(messages):
        sender = _string(message.get("sender")) or ""
        if sender not in _CLAUDE_SENDERS:
            raise BadLine(f"message {index}: unknown sender {message.get('sender')!r}")
        moment = _iso(message.get("created_at")) or moment
        message_id = _string(message.get("uuid")) or f"{chat_id}#{index}"
        where = f"{name}:{number} message {message_id}"
        base = {**metadata, "message_id": message_id}
        for n, attachment in enumerate(message.get("attachments") or ()):
            if not isinstance(attachment, dict):
                continue
            file_name = _string(attachment.get("file_name")) or ""
            body = _string(attachment.get("extracted_content")) or ""
            head = f"[attachment: {file_name}]" if file_name else "[attachment]"
            extra = {k: str(attachment[k]) for k in ("file_type", "file_size") if k in attachment}
            items.append(
                ImportItem(
                    conversation,
                    NewItem(
                        content=f"{head}\n{body}" if body else head,
                        role="file",
                        timestamp=moment,
                        metadata={**base, **extra},
                        file=FileRef(path=file_name, kind="mention") if file_name else None,
                        idempotency_key=f"claude:{message_id}:attachment:{n}",
                    ),
                    source=f"{where} attachment {n}",
                )
            )
        text = claude_text(message)
        if text:
            items.append(
                ImportItem(
                    conversation,
                    NewItem(
                        content=text,
                        role=_CLAUDE_SENDERS[sender],
                        timestamp=moment,
                        metadata=base,
                        idempotency_key=f"claude:{message_id}",
                    ),
                    source=where,
                )
            )
    return items


def _claude_branch(messages: list[Any]) -> list[tuple[int, dict[str, Any]]]:
    """The messages to import, with their positions: all of them in order, or, when every
    message names its parent (an edited message starts another branch), the branch that
    ends at the last one."""
    found = [(i, m) for i, m in enumerate(messages) if isinstance(m, dict)]
    linked = all(_string(m.get("uuid")) and _string(m.get("parent_message_uuid")) for _, m in found)
    if not found or not linked:
        return found
    parents = {m["uuid"]: m["parent_message_uuid"] for _, m in found}
    by_id = {m.get("uuid"): (i, m) for i, m in found}
    branch: list[tuple[int, dict[str, Any]]] = []
    node: Any = found[-1][1].get("uuid")
    while node in by_id and node != _CLAUDE_ROOT and len(branch) < len(found):
        branch.append(by_id[node])
        node = parents[node]
    branch.reverse()
    return branch


def claude_text(message: Mapping[str, Any]) -> str:
    """A Claude message's text: its content blocks (text; a tool's use as `tool call:
    name(input)` and its result as `tool result: name: text`; thinking left out), else its
    `text`; files it came with (their contents are not exported) as `[file: name]`.

    Args:
        message: The message as exported.

    Returns:
        The text, "" when there is none to import.
    """
    parts: list[str] = []
    for block in message.get("content") or ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and _string(block.get("text")):
            parts.append(block["text"])
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input"), ensure_ascii=False)
            parts.append(f"tool call: {block.get('name', '?')}({arguments})")
        elif kind == "tool_result":
            result = _nested_text(block.get("content"))
            parts.append(f"tool result: {block.get('name', '?')}: {result}".rstrip(": "))
    if not parts and _string(message.get("text")):
        parts.append(message["text"])
    for file in message.get("files") or ():
        if isinstance(file, dict) and _string(file.get("file_name")):
            parts.append(f"[file: {file['file_name']}]")
    return "\n".join(p for p in parts if p).strip()


def _nested_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (b.get("text") for b in content if isinstance(b, dict))
        return "\n".join(t for t in texts if isinstance(t, str) and t)
    return ""


def _chat_metadata(
    export: str, title: Any, created: datetime | None, updated: Any
) -> dict[str, str]:
    """What every item of a chat carries about it: a conversation has no metadata of its
    own, and a search hit shows its item's."""
    metadata = {"chat_export": export}
    if _string(title):
        metadata["chat_title"] = title
    if created is not None:
        metadata["chat_created_at"] = created.isoformat()
    moment = _seconds(updated) if export == "chatgpt" else _iso(updated)
    if moment is not None:
        metadata["chat_updated_at"] = moment.isoformat()
    return metadata


def _which(chat: Any) -> str:
    """How an error names a chat: its title, if it has one."""
    title = chat.get("title", chat.get("name")) if isinstance(chat, dict) else None
    return f"chat {title!r}: " if _string(title) else ""


def _object(value: Any) -> Mapping[str, Any]:
    """A JSON object, or an empty one for anything else (a field left null)."""
    return value if isinstance(value, dict) else {}


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _seconds(value: Any) -> datetime | None:
    """A ChatGPT time: seconds since the epoch (None when missing)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadLine(f"time {value!r} is not seconds since the epoch")
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        raise BadLine(f"time {value!r} is out of range") from None


def _iso(value: Any) -> datetime | None:
    """A Claude time: ISO 8601 (UTC unless it says; None when missing)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadLine(f"time {value!r} is not an ISO 8601 time")
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadLine(f"time {value!r} is not an ISO 8601 time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _position(raw: IO[bytes]) -> int:
    """How far the raw input has been read (0 where it cannot tell: a pipe)."""
    try:
        return raw.tell()
    except (OSError, ValueError):
        return 0


def _peek(data: IO[bytes]) -> bytes:
    """The first bytes, read until one is not white space (or the input ends)."""
    head = b""
    while not head.lstrip(b"\xef\xbb\xbf \t\r\n"):
        more = data.read(_PEEK)
        if not more:
            break
        head += more
    return head


class _Peeked:
    """A byte stream whose first bytes were read already, handed to the JSON parser whole."""

    def __init__(self, stream: IO[bytes], head: bytes) -> None:
        self._stream = stream
        self._head = head

    def read(self, size: int = -1) -> bytes:
        if not self._head:
            return self._stream.read(size)
        if size < 0:
            out, self._head = self._head + self._stream.read(), b""
        else:
            out, self._head = self._head[:size], self._head[size:]
        return out
