"""Reading timelines to import: JSON Lines of items, OpenAI chat records (a JSON file or JSON
Lines), fields renamed by a mapping, plain or gzip-compressed, from a file or standard input
(chat exports: chat_exports.py). Each item gets an idempotency key derived from its place and
text in the input, so that re-reading the same input names the same items."""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal, cast

from contextwm_client import FileKind, FileRef, Flag, ImportItem, NewItem, Role

from contextwm.cli.render import not_json

Format = Literal["auto", "items", "openai", "export", "chatgpt", "claude"]
FORMATS: tuple[Format, ...] = ("auto", "items", "openai", "export", "chatgpt", "claude")
# The exports people download from their chat accounts (read by chat_exports.py).
ChatFormat = Literal["chatgpt", "claude"]
CHAT_FORMATS: tuple[ChatFormat, ...] = ("chatgpt", "claude")

# The item fields a mapping may rename (ours = theirs).
FIELDS = (
    "namespace",
    "conversation_id",
    "role",
    "content",
    "timestamp",
    "flags",
    "metadata",
    "file",
    "idempotency_key",
)
# OpenAI roles that contextwm names otherwise.
_OPENAI_ROLES = {"developer": "system", "function": "tool"}
# A field that tells a chat of an export from an OpenAI record, to say which --format fits.
_EXPORT_KEYS = (("chatgpt", "mapping"), ("claude", "chat_messages"))
# Where an OpenAI record may carry its conversation id, in this order.
_OPENAI_ID_FIELDS = ("conversation_id", "id")


class BadLine(ValueError):
    """A line that cannot be imported; the message says why."""


@dataclass(frozen=True, slots=True)
class Record:
    """The items of one input line (or of one record of a JSON file), or why it was skipped.

    Attributes:
        line: The line's number from 1 (the record's, in a JSON file).
        end: The input's byte position after the line: where a resumed import seeks to.
        items: The line's items (OpenAI records have one per message).
        error: Why the line was skipped, when it was.
        other_branches: Of a ChatGPT chat, messages on branches other than the one it
            shows: not imported, only counted.
    """

    line: int
    end: int
    items: tuple[ImportItem, ...] = ()
    error: str | None = None
    other_branches: int = 0


class Input:
    """One input: a path, "-" for standard input, a .gz file (read directly), or for chat
    exports the .zip archive they come in."""

    def __init__(self, path: str, stdin: IO[bytes] | None = None) -> None:
        """Args:
        path: The file, or "-".
        stdin: What "-" reads (the process's standard input when None).
        """
        self.path = path
        self.name = "<stdin>" if path == "-" else path
        self._stdin = stdin
        self.gzipped = path.endswith(".gz")
        self.zipped = path.endswith(".zip")
        self.seekable = path != "-" and not self.gzipped and not self.zipped

    def size(self) -> int | None:
        """The file's size on disk (compressed for .gz), None for standard input."""
        return None if self.path == "-" else Path(self.path).stat().st_size

    def open(self, member: str | None = None) -> tuple[IO[bytes], IO[bytes]]:
        """Opens it: (the uncompressed bytes, the raw file whose position shows progress).

        Args:
            member: Of a .zip archive, the file to read (at its top or in a folder).

        Raises:
            OSError: It cannot be read.
            BadLine: A .zip archive without the member, or one that is not a zip archive.
        """
        if self.path == "-":
            raw: IO[bytes] = self._stdin or sys.stdin.buffer
        else:
            raw = open(self.path, "rb")  # noqa: SIM115 - the caller closes both
        if self.zipped:
            try:
                return self._member(raw, member), raw
            except BaseException:
                raw.close()
                raise
        data = cast(IO[bytes], gzip.GzipFile(fileobj=raw)) if self.gzipped else raw
        return data, raw

    def _member(self, raw: IO[bytes], member: str | None) -> IO[bytes]:
        """The member of a .zip archive, read as it is inflated (never extracted whole)."""
        if member is None:
            raise BadLine(f"{self.name}: .zip archives are read for --format chatgpt or claude")
        try:
            archive = zipfile.ZipFile(raw)
        except zipfile.BadZipFile as e:
            raise BadLine(f"{self.name}: not a zip archive ({e})") from e
        names = [n for n in archive.namelist() if n == member or n.endswith("/" + member)]
        if not names:
            raise BadLine(f"{self.name}: the archive has no {member}")
        # The shallowest one: the export's own, not a copy in a folder of it.
        return archive.open(min(names, key=lambda n: n.count("/")))

    def identity(self) -> dict[str, Any] | None:
        """What tells this input from another at resume time (None for standard input)."""
        if self.path == "-":
            return None
        stat = Path(self.path).stat()
        with open(self.path, "rb") as f:
            head = hashlib.sha256(f.read(65536)).hexdigest()
        return {
            "path": str(Path(self.path).resolve()),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "head": head,
        }


class Reader:
    """Turns an input's lines into Records, in order."""

    def __init__(
        self,
        fmt: Format = "auto",
        mapping: Mapping[str, str] | None = None,
        conversation_field: str | None = None,
    ) -> None:
        """Args:
        fmt: items (one item a line), openai (chat records), or auto (a .json file holds
            chat records; a line with "messages" is one, any other line an item).
        mapping: Our field name to the input's (dotted for nested: content=message.text).
        conversation_field: For OpenAI records, the field with the conversation id (tried
            by default: conversation_id, id; else one is derived from the record).

        Raises:
            ValueError: A mapping names a field that is not an item field.
        """
        unknown = sorted(set(mapping or {}) - set(FIELDS))
        if unknown:
            raise ValueError(f"--map of unknown field(s) {unknown}; the fields are {FIELDS}")
        self.fmt = fmt
        self.mapping = dict(mapping or {})
        self.conversation_field = conversation_field

    def records(self, source: Input, skip_lines: int = 0, start: int = 0) -> Iterator[Record]:
        """The input's records from line skip_lines + 1 on.

        Args:
            skip_lines: Lines already imported (a resume point).
            start: Their end, a byte position where a seekable input resumes directly.

        Raises:
            OSError: The input cannot be read.
            BadLine: A JSON file (not lines) does not parse (nothing of it is read).
        """
        data, raw = source.open()
        try:
            if self.fmt != "items" and source.path.removesuffix(".gz").endswith(".json"):
                yield from self._json_file(source, data, skip_lines)
                return
            line, position = 0, 0
            if skip_lines and start and source.seekable:
                data.seek(start)
                line, position = skip_lines, start
            for text in data:
                line += 1
                position += len(text)
                if line <= skip_lines:
                    continue
                if not text.strip():
                    yield Record(line, position)
                    continue
                yield self._line(source, line, position, text)
        finally:
            data.close()
            if raw is not data:
                raw.close()

    def _line(self, source: Input, line: int, end: int, text: bytes) -> Record:
        try:
            value = json.loads(text)
            if not isinstance(value, dict):
                raise BadLine(f"expected a JSON object, found {type(value).__name__}")
            # In auto, each line by its shape: a chat record has messages, an item has not.
            if self.fmt == "openai" or (self.fmt == "auto" and "messages" in value):
                items = self._openai(source.name, line, value, text)
            else:
                items = (self._item(source.name, line, value, text),)
        except ValueError as e:  # BadLine and JSON errors alike
            return Record(line, end, error=_reason(e))
        return Record(line, end, items)

    def _json_file(self, source: Input, data: IO[bytes], skip: int) -> Iterator[Record]:
        try:
            value = json.load(data)
        except ValueError as e:
            raise BadLine(f"{source.name}: not a JSON file of chat records: {_reason(e)}") from e
        records = value if isinstance(value, list) else [value]
        for n, record in enumerate(records, start=1):
            if n <= skip:
                continue
            raw = json.dumps(record, sort_keys=True).encode()
            try:
                if not isinstance(record, dict):
                    raise BadLine(f"record {n} is not a JSON object")
                yield Record(n, 0, self._openai(f"{source.name}#", n, record, raw))
            except ValueError as e:
                yield Record(n, 0, error=_reason(e))

    def _item(self, name: str, line: int, value: dict[str, Any], raw: bytes) -> ImportItem:
        """One item of an items line."""
        field = self._field
        conversation = field(value, "conversation_id")
        content = field(value, "content")
        if not isinstance(conversation, str) or not conversation:
            raise BadLine(f"no conversation id (field {self._name('conversation_id')!r})")
        if not isinstance(content, str):
            raise BadLine(f"no text content (field {self._name('content')!r})")
        return self._import_item(
            f"{name}:{line}",
            conversation,
            _namespace(field(value, "namespace")),
            NewItem(
                content=content,
                role=cast(Role, _text(field(value, "role"), "role") or "user"),
                timestamp=_timestamp(field(value, "timestamp")),
                flags=cast(tuple[Flag, ...], _flags(field(value, "flags"))),
                metadata=_metadata(field(value, "metadata")),
                file=_file(field(value, "file")),
                idempotency_key=_text(field(value, "idempotency_key"), "idempotency_key"),
            ),
            raw,
            line,
        )

    def _openai(
        self, name: str, line: int, record: dict[str, Any], raw: bytes
    ) -> tuple[ImportItem, ...]:
        """The items of an OpenAI chat record, one per message with text."""
        messages = record.get("messages")
        if not isinstance(messages, list):
            hint = next(
                (f" (a {f} export? --format {f})" for f, k in _EXPORT_KEYS if k in record), ""
            )
            raise BadLine(f'an OpenAI record needs a "messages" list{hint}')
        fields = [self.conversation_field] if self.conversation_field else _OPENAI_ID_FIELDS
        conversation = next((record[f] for f in fields if record.get(f)), None)
        if conversation is None:
            if self.conversation_field:
                raise BadLine(f"no conversation id (field {self.conversation_field!r})")
            # Derived from the messages: the same record always lands in the same place.
            digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
            conversation = f"openai-{digest[:16]}"
        namespace = _namespace(record.get("namespace"))
        items = []
        for m, message in enumerate(messages):
            if not isinstance(message, dict):
                raise BadLine(f"message {m} is not a JSON object")
            content = _openai_content(message)
            if not content:
                continue
            role = _text(message.get("role"), "role") or "user"
            stamp = next((message[k] for k in ("timestamp", "created_at") if k in message), None)
            items.append(
                self._import_item(
                    f"{name}:{line}" + (f" message {m}" if len(messages) > 1 else ""),
                    str(conversation),
                    namespace,
                    NewItem(
                        content=content,
                        role=cast(Role, _OPENAI_ROLES.get(role, role)),
                        timestamp=_timestamp(stamp),
                        idempotency_key=None,
                    ),
                    raw + f"#{m}".encode(),
                    line,
                )
            )
        return tuple(items)

    @staticmethod
    def _import_item(
        source: str, conversation: str, namespace: str | None, item: NewItem, raw: bytes, line: int
    ) -> ImportItem:
        """The item with its idempotency key: its own, or one derived from its line number and
        bytes, so that the same input names the same items (a key is only compared within
        its conversation)."""
        if not item.idempotency_key:
            digest = hashlib.sha256(f"{line}\0".encode() + raw).hexdigest()[:32]
            item = NewItem(
                content=item.content,
                role=item.role,
                timestamp=item.timestamp,
                flags=item.flags,
                metadata=item.metadata,
                file=item.file,
                idempotency_key=f"import:{digest}",
            )
        return ImportItem(conversation, item, namespace=namespace, source=source)

    def _name(self, ours: str) -> str:
        return self.mapping.get(ours, ours)

    def _field(self, value: Mapping[str, Any], ours: str) -> Any:
        """The input's value for one of our fields, following a dotted mapping."""
        found: Any = value
        for part in self._name(ours).split("."):
            if not isinstance(found, Mapping) or part not in found:
                return None
            found = found[part]
        return found


def _reason(e: ValueError) -> str:
    if isinstance(e, json.JSONDecodeError):
        return not_json(e)
    return str(e)


def _text(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise BadLine(f"{what} must be a string, not {type(value).__name__}")


def _namespace(value: Any) -> str | None:
    return _text(value, "namespace") or None


def _timestamp(value: Any) -> datetime | None:
    """Seconds (or milliseconds) since the epoch, or an ISO 8601 time (UTC unless it says)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise BadLine(f"timestamp {value!r} is not a time")
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            raise BadLine(f"timestamp {value!r} is out of range") from None
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise BadLine(f"timestamp {value!r} is not an ISO 8601 time") from None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    raise BadLine(f"timestamp must be a number or a string, not {type(value).__name__}")


def _flags(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(f for f in value.replace(",", " ").split() if f)
    if isinstance(value, list) and all(isinstance(f, str) for f in value):
        return tuple(value)
    raise BadLine("flags must be a list of names")


def _metadata(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadLine("metadata must be an object")
    # Values are strings on the wire; numbers and the like keep their JSON spelling.
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}


def _file(value: Any) -> FileRef | None:
    if value is None:
        return None
    if isinstance(value, str):
        return FileRef(path=value, kind="mention")
    if isinstance(value, dict) and isinstance(value.get("path"), str):
        return FileRef(path=value["path"], kind=cast(FileKind, str(value.get("kind", "mention"))))
    raise BadLine('file must be a path or an object with a "path"')


def _openai_content(message: Mapping[str, Any]) -> str:
    """A message's text: its content (a string or text parts) and its tool calls."""
    content = message.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
    elif content is not None:
        raise BadLine("message content must be a string or a list of parts")
    for call in message.get("tool_calls") or ():
        function = call.get("function", {}) if isinstance(call, dict) else {}
        parts.append(f"tool call: {function.get('name', '?')}({function.get('arguments', '')})")
    return "\n".join(p for p in parts if p)


def parse_mapping(pairs: Sequence[str]) -> dict[str, str]:
    """`--map ours=theirs` arguments as a dict.

    Raises:
        ValueError: A pair without "=", or a field that is not an item field.
    """
    mapping: dict[str, str] = {}
    for pair in pairs:
        ours, sep, theirs = pair.partition("=")
        if not sep or not ours or not theirs:
            raise ValueError(f"--map {pair!r}: use FIELD=INPUT_FIELD, e.g. content=msg.text")
        mapping[ours] = theirs
    unknown = sorted(set(mapping) - set(FIELDS))
    if unknown:
        raise ValueError(f"--map of unknown field(s) {unknown}; the fields are {FIELDS}")
    return mapping
