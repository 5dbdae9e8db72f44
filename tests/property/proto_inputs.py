"""Hypothesis strategies for bad (and some plausible) ContextService requests, built by walking
the proto descriptors: every method of the service, every field of its request message and of
the messages inside it, by type (scalars, enums, nested messages, repeated fields, maps,
oneofs). A method or field added to the proto is fuzzed with no change here; the hints by
field name only make some values plausible, so that calls get past the first check.

Two kinds of input come out, both as wire bytes (a `Call`):
- requests built as messages, then serialised: edge values of each type (huge, empty, NUL and
  control characters, long Unicode, integer and float edges, unknown enum numbers, huge
  repeated fields and maps) mixed with names of things that exist on the server, either
  anywhere or as the one bad (or huge) field of an otherwise plausible request;
- hand-written bytes: invalid UTF-8 inside string fields, truncated serialisations, garbage,
  unknown fields (which a server must ignore), deeply nested unknown fields; and a message
  over the server's size limit (oversize_payload).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from contextwm.settings import ServerSettings
from contextwm_client.v1 import contextwm_pb2 as pb
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import strategies as st

SERVICE = pb.DESCRIPTOR.services_by_name["ContextService"]
T = TypeVar("T")
F = FieldDescriptor

# The vocabularies the proto's comments name (client-supplied strings the server checks).
ROLES = ("user", "assistant", "system", "tool", "file", "error")
FLAGS = ("pinned", "user_starred", "error", "code", "question", "solution")
FILE_KINDS = ("read", "write", "mention")
STRATEGIES = ("none", "last_two", "half", "quarter")
ENCODINGS = ("cl100k_base", "o200k_base")

# Message fields nest at most this deep: the requests themselves are shallow (3 levels), so
# this only stops a recursive message type added later from recursing for ever.
MAX_DEPTH = 5
# The server's default size limits: an item's content (4 MiB), a gRPC message (64 MiB).
ITEM_BYTES_LIMIT = ServerSettings().limits.max_item_bytes
MESSAGE_BYTES_LIMIT = ServerSettings().max_message_bytes


@dataclass(frozen=True, slots=True)
class Rpc:
    """One method of the service, as the descriptors describe it."""

    name: str
    path: str
    descriptor: Descriptor  # of the request
    request: type[Message]
    response: type[Message]
    streaming: bool  # the response is a stream
    client_streaming: bool  # the request is a stream (of one generated message here)


def _rpcs() -> tuple[Rpc, ...]:
    out = []
    for method in SERVICE.methods:
        out.append(
            Rpc(
                method.name,
                f"/{SERVICE.full_name}/{method.name}",
                method.input_type,
                message_factory.GetMessageClass(method.input_type),
                message_factory.GetMessageClass(method.output_type),
                method.server_streaming,
                method.client_streaming,
            )
        )
    return tuple(out)


RPCS = _rpcs()


@dataclass(frozen=True, slots=True)
class World:
    """What exists on the server under test, for requests that name it, and the namespace that
    no generated request may name (the canary the test checks is left alone)."""

    namespaces: tuple[str, ...]
    conversation_ids: tuple[str, ...]
    seqs: tuple[int, ...]
    checkpoints: tuple[str, ...]
    page_tokens: tuple[str, ...]
    files: tuple[str, ...]
    workspace_roots: tuple[str, ...]
    models: tuple[str, ...]
    forbidden_namespace: str


# How a Call's request was made: as a message (any values, plausible ones, plausible but for one
# bad or huge field; see message_calls), or as bytes (see raw_calls).
MESSAGE_KINDS = ("wild", "tame", "one_bad", "one_huge")


@dataclass(frozen=True, slots=True)
class Call:
    """One request as sent: its bytes, how they were made, and what they parse as."""

    rpc: Rpc
    payload: bytes
    kind: str
    message: Message | None  # None: the bytes do not parse as the request type
    plain: bytes | None = None  # unknown fields: the same request without them

    def describe(self, limit: int = 400) -> str:
        """A short, readable form for failure reports (long values cut)."""
        if self.message is not None and self.kind in MESSAGE_KINDS:
            text = describe_message(self.message)
        else:
            head = self.payload[:120]
            text = f"{len(self.payload)} bytes {head!r}{'…' if len(self.payload) > 120 else ''}"
            if self.message is not None:
                text += f" parsing as {describe_message(self.message)}"
        return text if len(text) <= limit else text[:limit] + "…"


def describe_message(msg: Message) -> str:
    """text_format's one-line form, but with long strings and long lists cut."""
    parts = []
    for field, value in msg.ListFields():
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            entries = list(value.items())
            shown = ", ".join(f"{_short(k)}: {_short_value(v)}" for k, v in entries[:3])
            more = f", … ({len(entries)} entries)" if len(entries) > 3 else ""
            parts.append(f"{field.name} {{{shown}{more}}}")
        elif field.is_repeated:
            shown = ", ".join(_short_value(v) for v in value[:3])
            more = f", … ({len(value)} items)" if len(value) > 3 else ""
            parts.append(f"{field.name} [{shown}{more}]")
        else:
            parts.append(f"{field.name}: {_short_value(value)}")
    return "{" + " ".join(parts) + "}"


def _short_value(value: Any) -> str:
    return describe_message(value) if isinstance(value, Message) else _short(value)


def _short(value: Any) -> str:
    if isinstance(value, str | bytes) and len(value) > 40:
        return f"{value[:30]!r}…(len {len(value)})"
    return repr(value)


# ---------------------------------------------------------------- values by type

INT32 = (0, 1, -1, 2**31 - 1, -(2**31), 2**31 - 2)
INT64 = (*INT32, 2**32, 2**53 + 1, 2**63 - 1, -(2**63), 2**63 - 2)
UINT32 = (0, 1, 2**32 - 1, 2**31)
UINT64 = (*UINT32, 2**63, 2**64 - 1)
FLOATS = (
    math.nan,
    math.inf,
    -math.inf,
    -0.0,
    0.0,
    1e308,
    -1e308,
    5e-324,
    2.2250738585072014e-308,
    1.0 + 2**-52,
    -1.0,
    0.5,
    1.0,
)
_INT_RANGES = {
    F.TYPE_INT32: (-(2**31), 2**31 - 1, INT32),
    F.TYPE_SINT32: (-(2**31), 2**31 - 1, INT32),
    F.TYPE_SFIXED32: (-(2**31), 2**31 - 1, INT32),
    F.TYPE_INT64: (-(2**63), 2**63 - 1, INT64),
    F.TYPE_SINT64: (-(2**63), 2**63 - 1, INT64),
    F.TYPE_SFIXED64: (-(2**63), 2**63 - 1, INT64),
    F.TYPE_UINT32: (0, 2**32 - 1, UINT32),
    F.TYPE_FIXED32: (0, 2**32 - 1, UINT32),
    F.TYPE_UINT64: (0, 2**64 - 1, UINT64),
    F.TYPE_FIXED64: (0, 2**64 - 1, UINT64),
}

# Strange text: control characters and NUL, invisible and direction marks, line separators,
# Unicode digits (which str.isdigit accepts and int() may not), combining marks, astral
# characters, a byte order mark.
ODD_TEXT = (
    "\x00",
    "a\x00b",
    "\x01\x02\x1b[31m\x7f",
    "\t\n\r",
    "   ",
    "\u200b\u200d\u2060",
    "\u202eevil\u202c",
    "\u2028\u2029",
    "²",
    "١٢٣",
    "𝟗𝟗",
    "e\u0301\u0301\u0301",
    "🙂👩‍👩‍👧‍👦",
    "\ufeffbom",
    "\U0010ffff",
    "東京" * 50,
    "%s%n{0}${x}",
    "'; DROP TABLE items; --",
    "../" * 20,
    "<|endoftext|>",
)
# Huge text: few, many and very many tokens per character, around the server's limits (1e6
# characters, 200,000 tokens per item, 4 MiB per item); 4 MiB + 1 byte is over the item limit.
HUGE_PATTERNS = ("x", "word ", "🙂", "1234567890", "東京 ")
HUGE_SIZES = (10_000, 70_000, 250_000, 999_999, 1_000_000, 1_200_000, ITEM_BYTES_LIMIT + 1)


def _huge_text(pattern: str, size: int) -> str:
    """About `size` bytes of UTF-8 made of `pattern` (bytes, since the limits count bytes)."""
    per = len(pattern.encode())
    return pattern * (size // per) + "y" * (size % per)


huge_texts = st.builds(_huge_text, st.sampled_from(HUGE_PATTERNS), st.sampled_from(HUGE_SIZES))


def rarely(
    common: st.SearchStrategy[T], rare: st.SearchStrategy[T], one_in: int
) -> st.SearchStrategy[T]:
    """`rare` about once in `one_in` draws (one_of would give every branch the same share)."""

    @st.composite
    def pick(draw: st.DrawFn) -> T:
        # Hypothesis draws the smallest integer (and the largest) far more often than 1/n; a
        # value in the middle comes up about as often as chance says.
        return draw(rare if draw(st.integers(0, one_in - 1)) == one_in // 2 else common)

    return pick()


any_text = st.text(st.characters(codec="utf-8"), max_size=60)
texts: st.SearchStrategy[str] = st.one_of(
    st.just(""),
    any_text,
    st.sampled_from(ODD_TEXT),
    st.tuples(any_text, st.sampled_from(ODD_TEXT), any_text).map("".join),
    st.text(st.characters(max_codepoint=0x1F), min_size=1, max_size=10),
    st.integers(201, 300).map(lambda n: "é" * n),  # just past 200-character limits
)


def _generic(field: FieldDescriptor, huge_one_in: int = 40) -> st.SearchStrategy[Any]:
    """Any value of the field's type, biased to its edges (no hint by name)."""
    t = field.type
    if t == F.TYPE_STRING:
        # Huge texts are costly (tokenised, embedded): rare, but in every long run.
        return rarely(texts, huge_texts, huge_one_in)
    if t == F.TYPE_BYTES:
        return st.one_of(st.binary(max_size=40), st.sampled_from([b"", b"\xff\xfe", b"\0" * 9]))
    if t in _INT_RANGES:
        lo, hi, edges = _INT_RANGES[t]
        return st.one_of(st.sampled_from(edges), st.integers(lo, hi), st.integers(-3, 1200))
    if t == F.TYPE_DOUBLE:
        return st.one_of(st.sampled_from(FLOATS), st.floats(), st.floats(0, 1))
    if t == F.TYPE_FLOAT:
        return st.one_of(st.sampled_from(FLOATS).map(_float32), st.floats(width=32))
    if t == F.TYPE_BOOL:
        return st.booleans()
    if t == F.TYPE_ENUM:
        known = _enum_numbers(field)
        if _closed_enum(field):  # proto2 enums refuse unknown numbers at assignment
            return st.sampled_from(known)
        numbers = (max(known) + 1, 99, -1, 2**31 - 1, -(2**31))
        unknown = st.sampled_from([n for n in numbers if n not in known])
        return st.one_of(st.sampled_from(known), st.sampled_from(known), unknown)
    raise NotImplementedError(f"{field.full_name}: field type {t} has no strategy yet")


def _enum_numbers(field: FieldDescriptor) -> list[int]:
    assert field.enum_type is not None
    return [v.number for v in field.enum_type.values]


def _closed_enum(field: FieldDescriptor) -> bool:
    assert field.enum_type is not None
    return bool(field.enum_type.is_closed)


def _float32(x: float) -> float:
    # Doubles past the float range become infinities in a float field, which FLOATS has.
    return x if math.isnan(x) or abs(x) < 3.4e38 else math.copysign(math.inf, x)


# ---------------------------------------------------------------- hints by field name


PLAUSIBLE_TEXT = (
    "The billing service listens on port 8443.",
    "Deploy failed: ConnectionError on db-3\nTraceback (most recent call last):",
    "what port does billing use?",
    "def f():\n    return 42\n",
    "Fixed: the retry loop now backs off. Solution: raise the pool size.",
    "What did we decide last week about the cache?",
    "yesterday",
)


@dataclass(frozen=True, slots=True)
class Hint:
    """Values for fields of a name and type: valid ones, and near misses (a wrong case, one
    past a limit). The type must match, so a later field of the same name and another type
    falls back to its generic strategy."""

    type: int
    valid: st.SearchStrategy[Any]
    odd: st.SearchStrategy[Any]


def _hint(type_: int, valid: Any, odd: tuple[Any, ...] = ()) -> Hint:
    valid_values = valid if isinstance(valid, st.SearchStrategy) else st.sampled_from(valid)
    return Hint(type_, valid_values, st.sampled_from(odd) if odd else valid_values)


@functools.cache
def _hints(world: World) -> dict[str, Hint]:
    s, i32, i64, d = F.TYPE_STRING, F.TYPE_INT32, F.TYPE_INT64, F.TYPE_DOUBLE
    existing = st.sampled_from(world.conversation_ids)
    fresh = st.integers(0, 30).map(lambda n: f"fresh-{n}")
    share = st.floats(0, 1)
    return {
        "namespace": _hint(s, world.namespaces, ("Default", "fz ", "-fz", "n" * 129, "a/b")),
        # Mostly a conversation that exists, so that calls reach the code behind the lookup.
        "conversation_id": _hint(
            s, st.one_of(existing, existing, existing, fresh), ("", " ", "c" * 201, "alpha\n")
        ),
        "role": _hint(s, ROLES, ("admin", "User", " user", "")),
        "roles": _hint(s, ROLES, ("admin", "")),
        "flags": _hint(s, FLAGS, ("bogus", "PINNED", "")),
        "kind": _hint(s, FILE_KINDS, ("delete", "READ", "")),
        "path": _hint(s, world.files, ("../../etc/passwd", "/etc/passwd", "")),
        "files": _hint(s, world.files, ("../outside.txt", "/etc/hostname", "")),
        "strategy": _hint(s, STRATEGIES, ("all", "HALF", "")),
        "encoding": _hint(s, ENCODINGS, ("gpt2", "o200k")),
        "model": _hint(s, ("", *world.models), ("no-such-model",)),
        "workspace_root": _hint(s, world.workspace_roots, ("/", "/etc", "relative", "/nowhere")),
        "name": _hint(s, (*world.checkpoints, "cp-new"), ("", "n" * 129, "cp\n")),
        "page_token": _hint(
            s,
            ("", *world.page_tokens),
            ("0", "-1", "abc", "²", "9" * 5000, str(2**63), str(2**64)),
        ),
        "idempotency_key": _hint(s, ("", "key-1", "key-2"), ("k" * 257,)),
        "content": _hint(s, PLAUSIBLE_TEXT, ("", "  \n ")),
        "query": _hint(s, PLAUSIBLE_TEXT, ("", "  \n ")),
        "summary": _hint(s, PLAUSIBLE_TEXT, ("", "  \n ")),
        "seq": _hint(i64, world.seqs, (0, -1, 2**63 - 1)),
        "after_event_id": _hint(i64, (0, 1, 3), (-1, 2**63 - 1)),
        "page_size": _hint(i32, (0, 1, 2, 100, 1000), (-1, 1001)),
        "top_k": _hint(i32, (0, 1, 5, 1000), (-1, 1001)),
        "max_tokens": _hint(i32, (30, 200, 1000, 8000), (0, -1, 2_000_001)),
        "max_history_items": _hint(i32, (1, 10, 100), (0, -1)),
        "input_tokens": _hint(i64, (0, 100, 5000, 150_000), (-1, 2**62, 2**63 - 1)),
        "cache_read_input_tokens": _hint(i64, (0, 1000), (-1, 2**63 - 1)),
        "window_max_tokens": _hint(i32, (50, 500, 8000), (0, -1)),
        "window_max_items": _hint(i32, (1, 3, 100), (0, -1)),
        "focus_items": _hint(i32, (1, 3), (0, -1)),
        "context_limit": _hint(i32, (0, 500, 4000, 200_000), (-1,)),
        "reserved_reply_tokens": _hint(i32, (0, 100, 499), (-1, 2**31 - 1)),
        "mask_tool_outputs_after_turns": _hint(i32, (0, 1, 10), (-1,)),
        "recent_min_items": _hint(i32, (0, 2, 1000), (-1, 1001)),
        "recent_share": _hint(d, share, (-0.1, 1.1)),
        "similarity_threshold": _hint(d, share, (-0.1, 1.1)),
        "compaction_threshold": _hint(d, (0.1, 0.85, 1.0), (0.0, 1.5)),
        "recency_half_life_seconds": _hint(d, (60.0, 86400.0), (0.0, -1.0)),
        "recency_half_life_items": _hint(d, (0.0, 50.0), (-1.0,)),
        "share": _hint(d, share, (-0.1, 1.1)),
        "min_share": _hint(d, share, (-0.1, 1.1)),
        "max_share": _hint(d, share, (-0.1, 1.1)),
        "weight": _hint(d, share, (-0.1, 1.1)),
        "recency": _hint(d, share, (-0.1, 1.1)),
        "similarity": _hint(d, share, (-0.1, 1.1)),
    }


# Map keys by the map field's name: the vocabularies the server looks keys up in.
_MAP_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "importance": (FLAGS, ("bogus", "")),
    "role": (ROLES, ("admin", "")),
    "metadata": (("turn", "tool", "k"), ("",)),
}


# ---------------------------------------------------------------- messages from descriptors


# Whole messages that look right, by message type (the generic walk makes the impossible ones).
_MESSAGE_HINTS: dict[str, st.SearchStrategy[Message]] = {
    "google.protobuf.Timestamp": st.builds(
        Timestamp,
        seconds=st.integers(1_600_000_000, 1_800_000_000),
        nanos=st.integers(0, 10**9 - 1),
    ),
}


# How values are chosen. tame: plausible ones only, for requests that get past the first check;
# wild: anything, plausible ones included; bad: near misses and edges only, huge ones often
# (the one bad field of an otherwise tame request; what it holds is wild).
Mode = Literal["tame", "wild", "bad"]
# One in how many strings, repeated fields and maps is huge, by mode.
HUGE_ONE_IN: dict[str, int] = {"wild": 40, "bad": 8}


@functools.cache
def messages(
    descriptor: Descriptor, world: World, mode: Mode = "wild", depth: int = 0
) -> st.SearchStrategy[Message]:
    """Messages of this type with a random subset of fields set, each to a value of its type
    (members of a oneof overwrite each other as set, so each may end up the one set)."""
    if mode == "bad":
        mode = "wild"
    cls = message_factory.GetMessageClass(descriptor)
    # Out of ten: top-level fields mostly set (ids, budgets), deeper ones less, to keep them
    # small; tame ones always set where a hint names them (ids, roles, content).
    fields = [
        (
            f,
            field_values(f, world, mode, depth),
            10 if mode == "tame" and _hint_for(f, world) else 7 if depth == 0 else 4,
        )
        for f in descriptor.fields
    ]
    whole = _MESSAGE_HINTS.get(descriptor.full_name)

    @st.composite
    def build(draw: st.DrawFn) -> Message:
        if whole is not None and (mode == "tame" or draw(st.booleans())):
            return draw(whole)
        msg = cls()
        for f, values, chance in draw(st.permutations(fields)):
            if draw(st.integers(0, 9)) < chance:
                set_field(msg, f, draw(values))
        return msg

    return build()


@functools.cache
def field_values(
    field: FieldDescriptor, world: World, mode: Mode, depth: int
) -> st.SearchStrategy[Any]:
    """Values for one field: a Python value, list or dict, as set_field takes them."""
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        key_f = field.message_type.fields_by_name["key"]
        value_f = field.message_type.fields_by_name["value"]
        keys = _single(key_f, world, mode, depth + 1)
        if key_f.type == F.TYPE_STRING and field.name in _MAP_KEYS:
            valid, odd = (st.sampled_from(k) for k in _MAP_KEYS[field.name])
            keys = {"tame": valid, "wild": st.one_of(valid, valid, odd, keys)}.get(
                mode, st.one_of(odd, keys)
            )
        values = _single(value_f, world, mode, depth + 1)
        small_map = st.dictionaries(keys, values, max_size=4)
        if mode == "tame":
            return small_map
        huge_map = st.builds(
            _huge_map, st.sampled_from((65, 1001, 10_000)), values, st.just(key_f.type)
        )
        return rarely(small_map, huge_map, HUGE_ONE_IN[mode])
    single = _single(field, world, mode, depth)
    if field.is_repeated:
        small_list = st.lists(single, min_size=mode == "bad", max_size=4)
        if mode == "tame":
            return small_list
        huge_list = st.builds(_huge_list, st.sampled_from((1001, 10_000)), single)
        return rarely(small_list, huge_list, HUGE_ONE_IN[mode])
    return single


# Huge repeated fields and maps repeat one value; fewer copies of a big one, to keep memory sane.
HUGE_FIELD_BYTES = 8_000_000


def _copies(n: int, value: Any) -> int:
    size = value.ByteSize() if isinstance(value, Message) else len(str(value))
    return max(1, min(n, HUGE_FIELD_BYTES // max(1, size)))


def _huge_list(n: int, value: Any) -> list[Any]:
    return [value] * _copies(n, value)


def _huge_map(n: int, value: Any, key_type: int) -> dict[Any, Any]:
    count = _copies(n, value)
    if key_type == F.TYPE_STRING:
        return {f"k{i}": value for i in range(count)}
    if key_type == F.TYPE_BOOL:
        return {False: value, True: value}
    return {i: value for i in range(count)}  # an integer key of any width


def _single(field: FieldDescriptor, world: World, mode: Mode, depth: int) -> st.SearchStrategy[Any]:
    if field.message_type is not None:
        if depth >= MAX_DEPTH:
            return st.just(message_factory.GetMessageClass(field.message_type)())
        return messages(field.message_type, world, mode, depth + 1)
    hint = _hint_for(field, world)
    if mode == "tame":
        return hint.valid if hint else _tame(field)
    generic = _generic(field, HUGE_ONE_IN[mode])
    if hint is None:
        return generic
    if mode == "bad":
        return st.one_of(hint.odd, generic)
    return st.one_of(hint.valid, hint.valid, hint.odd, generic)


def _hint_for(field: FieldDescriptor, world: World) -> Hint | None:
    hint = _hints(world).get(field.name)
    return hint if hint is not None and hint.type == field.type else None


def _tame(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    """Ordinary values of a field's type, for fields no hint knows."""
    t = field.type
    if t == F.TYPE_STRING:
        return st.one_of(st.sampled_from(PLAUSIBLE_TEXT), st.text("abcxyz-_.", min_size=1))
    if t in _INT_RANGES:
        return st.integers(0, 100)
    if t in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        return st.floats(0, 1, width=32)
    if t == F.TYPE_ENUM:  # 0 is UNSPECIFIED, which a list of them does not take
        return st.sampled_from([n for n in _enum_numbers(field) if n])
    return _generic(field)


def set_field(msg: Message, field: FieldDescriptor, value: Any) -> None:
    """Sets a field from a Python value (list for repeated, dict for a map)."""
    target = getattr(msg, field.name)
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        if field.message_type.fields_by_name["value"].message_type is not None:
            for k, v in value.items():
                target[k].CopyFrom(v)
        else:
            target.update(value)
    elif field.is_repeated:
        target.extend(value)
    elif field.message_type is not None:
        target.CopyFrom(value)
    else:
        setattr(msg, field.name, value)


# ---------------------------------------------------------------- wire bytes by hand

WIRE_VARINT, WIRE_I64, WIRE_LEN, WIRE_START, WIRE_END, WIRE_I32 = 0, 1, 2, 3, 4, 5


def varint(n: int) -> bytes:
    n &= 2**64 - 1  # negative numbers as two's complement, as protobuf writes them
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def len_field(number: int, body: bytes) -> bytes:
    return tag(number, WIRE_LEN) + varint(len(body)) + body


def _paths(
    descriptor: Descriptor,
    want: Callable[[FieldDescriptor], bool],
    depth: int = 0,
    into_maps: bool = True,
) -> Iterator[tuple[FieldDescriptor, ...]]:
    """Field paths from this message down to fields `want` accepts (through nested messages,
    repeated ones and, into_maps, map entries: on the wire a map is a repeated message)."""
    for f in descriptor.fields:
        if want(f):
            yield (f,)
        if f.message_type is None or depth >= MAX_DEPTH:
            continue
        if into_maps or not f.message_type.GetOptions().map_entry:
            for rest in _paths(f.message_type, want, depth + 1, into_maps):
                yield (f, *rest)


def _present_paths(msg: Message) -> Iterator[tuple[FieldDescriptor, ...]]:
    """Paths to the singular message fields set in a message, at any depth. Bytes for such a
    field merge into it, so unknown fields go there without changing the request's meaning
    (for a repeated field they would add an element, for an unset one make it set)."""
    for f, value in msg.ListFields():
        if f.message_type is not None and not f.is_repeated:
            yield (f,)
            for rest in _present_paths(value):
                yield (f, *rest)


def _nest(path: tuple[FieldDescriptor, ...], body: bytes) -> bytes:
    """`body` as the content of the last message on the path, wrapped in the ones above."""
    for f in reversed(path):
        body = len_field(f.number, body)
    return body


BAD_UTF8 = (
    b"\xff\xfe",
    b"ok\xc3",  # cut in the middle of a character
    b"\xc0\xaf",  # overlong "/"
    b"\xed\xa0\x80",  # a UTF-16 surrogate
    b"\xf4\x90\x80\x80",  # past U+10FFFF
    b"user\x80",
)


def _unknown_numbers(descriptor: Descriptor) -> st.SearchStrategy[int]:
    """Field numbers the message does not define (19000..19999 are protobuf's own)."""
    used = {f.number for f in descriptor.fields}
    return st.one_of(st.integers(1, 200), st.integers(1, 2**29 - 1)).filter(
        lambda n: n not in used and not 19000 <= n <= 19999
    )


@st.composite
def unknown_fields(draw: st.DrawFn, descriptor: Descriptor) -> bytes:
    """One to four well-formed fields of numbers the message does not know, any wire type."""
    out = b""
    for _ in range(draw(st.integers(1, 4))):
        number = draw(_unknown_numbers(descriptor))
        wire = draw(st.sampled_from((WIRE_VARINT, WIRE_I64, WIRE_LEN, WIRE_I32, WIRE_START)))
        if wire == WIRE_VARINT:
            out += tag(number, wire) + varint(draw(st.sampled_from(UINT64)))
        elif wire == WIRE_I64:
            out += tag(number, wire) + draw(st.binary(min_size=8, max_size=8))
        elif wire == WIRE_I32:
            out += tag(number, wire) + draw(st.binary(min_size=4, max_size=4))
        elif wire == WIRE_LEN:
            out += len_field(number, draw(st.binary(max_size=30)))
        else:  # a group holding a varint field
            out += tag(number, WIRE_START) + tag(1, WIRE_VARINT) + b"\x01" + tag(number, WIRE_END)
    return out


def parse(rpc: Rpc, payload: bytes) -> Message | None:
    """The request the bytes make, as the server's protobuf would read them (None: not one)."""
    try:
        return rpc.request.FromString(payload)
    except DecodeError:
        return None


def _call(rpc: Rpc, payload: bytes, kind: str) -> Call:
    return Call(rpc, payload, kind, parse(rpc, payload))


@st.composite
def message_calls(draw: st.DrawFn, world: World) -> Call:
    """A quarter each: any values; plausible ones; plausible but for one bad field, or one huge
    field (string, bytes, repeated or map), at any depth: a single bad value behind valid ids
    reaches code that the first check would otherwise stop it from reaching."""
    rpc = draw(st.sampled_from(RPCS))
    descriptor = rpc.descriptor
    kind = draw(st.sampled_from(MESSAGE_KINDS))
    msg = draw(messages(descriptor, world, "wild" if kind == "wild" else "tame"))
    if kind == "one_bad":
        path = draw(st.sampled_from(list(_paths(descriptor, lambda f: True, into_maps=False))))
        _set_at(msg, path, draw(field_values(path[-1], world, "bad", len(path))))
    elif kind == "one_huge":
        paths = list(_paths(descriptor, _can_be_huge, into_maps=False))
        if paths:  # a request of numbers only has nothing to make huge
            path = draw(st.sampled_from(paths))
            _set_at(msg, path, draw(_huge_values(path[-1], world, len(path))))
    return Call(rpc, msg.SerializeToString(), kind, msg)


def _set_at(msg: Message, path: tuple[FieldDescriptor, ...], value: Any) -> None:
    """Sets the field at the end of the path, making the messages on the way if missing."""
    for f in path[:-1]:
        child: Any = getattr(msg, f.name)
        if f.is_repeated:
            child = child[0] if len(child) else child.add()
        msg = child
    msg.ClearField(path[-1].name)
    set_field(msg, path[-1], value)


def _can_be_huge(field: FieldDescriptor) -> bool:
    return field.is_repeated or field.type in (F.TYPE_STRING, F.TYPE_BYTES)


def _huge_values(field: FieldDescriptor, world: World, depth: int) -> st.SearchStrategy[Any]:
    """A huge value for a field _can_be_huge accepts: its elements or entries are tame."""
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        key_f = field.message_type.fields_by_name["key"]
        values = _single(field.message_type.fields_by_name["value"], world, "tame", depth + 1)
        return st.builds(
            _huge_map, st.sampled_from((65, 1001, 10_000)), values, st.just(key_f.type)
        )
    if field.is_repeated:
        single = _single(field, world, "tame", depth)
        return st.builds(_huge_list, st.sampled_from((1001, 10_000)), single)
    if field.type == F.TYPE_BYTES:
        return st.sampled_from(HUGE_SIZES).map(bytes)
    return huge_texts


@st.composite
def raw_calls(draw: st.DrawFn, world: World) -> Call:
    """Requests written as bytes: a valid message with something wrong (or odd) added."""
    rpc = draw(st.sampled_from(RPCS))
    descriptor = rpc.descriptor
    base_message = draw(messages(descriptor, world, draw(st.sampled_from(("tame", "wild")))))
    base = base_message.SerializeToString()
    kind = draw(
        st.sampled_from(
            ("invalid_utf8", "truncated", "garbage", "unknown_fields", "unknown_fields", "deep")
        )
    )
    if kind == "invalid_utf8":
        paths = list(_paths(descriptor, lambda f: f.type == F.TYPE_STRING))
        if paths:
            path = draw(st.sampled_from(paths))
            return _call(rpc, base + _nest(path, draw(st.sampled_from(BAD_UTF8))), kind)
        kind = "garbage"
    if kind == "truncated" and len(base) >= 2:
        return _call(rpc, base[: draw(st.integers(1, len(base) - 1))], kind)
    if kind == "unknown_fields":
        # At the top, or inside a nested message (which must ignore them just the same).
        path = draw(st.sampled_from([(), *_present_paths(base_message)]))
        holder = path[-1].message_type if path else descriptor
        assert holder is not None  # the paths end at message fields
        payload = base + _nest(path, draw(unknown_fields(holder)))
        return Call(rpc, payload, kind, parse(rpc, payload), base)
    if kind == "deep":
        # Unknown fields nested deep: length-delimited ones are skipped whole; groups are
        # parsed, and past protobuf's recursion limit (100) the message does not parse.
        depth = draw(st.sampled_from((10, 50, 99, 101, 1000)))
        number = next(n for n in itertools.count(99) if n not in descriptor.fields_by_number)
        if draw(st.booleans()):
            body = b""
            for _ in range(depth):
                body = len_field(number, body)
        else:
            body = tag(number, WIRE_START) * depth + tag(number, WIRE_END) * depth
        return _call(rpc, base + body, kind)
    garbage = st.one_of(
        st.binary(min_size=1, max_size=64),
        st.sampled_from(
            (
                b"\xff" * 11,  # a varint longer than ten bytes
                tag(1, WIRE_LEN) + varint(2**31),  # a length past the end
                tag(2, WIRE_LEN) + varint(2**64 - 1),
                b"\x00\x00",  # field number 0
                bytes([0x0E]),  # wire type 6
                bytes([0x0F]),  # wire type 7
                tag(5, WIRE_START),  # a group that never ends
                tag(5, WIRE_END),  # a group end without a start
                tag(3, WIRE_VARINT),  # a tag without its value
            )
        ),
    )
    return _call(rpc, base + draw(garbage), "garbage")


def oversize_payload() -> bytes:
    """A message past the server's gRPC receive limit (64 MiB), made of one unknown field."""
    return len_field(1999, bytes(MESSAGE_BYTES_LIMIT + 1))


@st.composite
def calls(draw: st.DrawFn, world: World) -> Call:
    """The mix the fuzz test sends: about four in five built as messages, the rest as bytes."""
    raw = draw(st.integers(0, 4)) == 2  # not 0: see rarely()
    return draw(raw_calls(world) if raw else message_calls(world))
