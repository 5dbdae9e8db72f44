"""The wire's vocabularies as `Literal` types: the names a client may send and will read back.

They stay plain strings at run time, as on the wire; the types let mypy and editors check and
complete them. The server validates what it receives, so a name outside a vocabulary is still
refused there (or before the call, for the proto enums). The types describe this version's
vocabularies: a word that a newer server adds comes through as sent in the string fields,
and an enum value this client does not know reads as "unspecified" (`Unspecified`, which the
enum fields of results declare). Keys of mappings (scoring and contributor weights) stay `str`:
a Mapping is invariant in its key type, so a Literal key would turn away every `dict[str, ...]`.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

Role: TypeAlias = Literal["user", "assistant", "system", "tool", "file", "error"]
"""Who an item is from."""

Flag: TypeAlias = Literal["pinned", "user_starred", "error", "code", "question", "solution"]
"""Importance flags; "user_starred" is accepted as an alias and read back as "pinned"."""

FileKind: TypeAlias = Literal["read", "write", "mention"]
"""How an item refers to a file."""

ItemKind: TypeAlias = Literal["message", "compaction"]
"""An ordinary item, or the marker a compaction adds."""

ItemState: TypeAlias = Literal["window", "archived", "compacted", "reverted"]
"""Where an item is (proto enum ItemState)."""

ConversationState: TypeAlias = Literal["general", "coding", "debugging", "research"]
"""What a conversation is about, as the server detects it (proto enum ConversationState)."""

RetrievalMode: TypeAlias = Literal["hybrid", "dense", "lexical"]
"""How candidates are found (proto enum RetrievalMode)."""

Category: TypeAlias = Literal["system", "context", "dialog", "system_output"]
"""A category of the budget (proto enum Category)."""

ContributorType: TypeAlias = Literal["working_files", "retrieval", "codebase_map", "project_docs"]
"""A contributor of the context category (proto enum ContributorType)."""

Unspecified: TypeAlias = Literal["unspecified"]
"""A proto enum value this client does not know (sent by a newer server)."""

TruncationStrategy: TypeAlias = Literal["none", "last_two", "half", "quarter"]
"""What a truncation keeps after the first user/assistant pair."""

Treatment: TypeAlias = Literal["as_is", "masked", "duplicate_read", "truncation_notice"]
"""How an entry of the active context shows its item."""

UsageSource: TypeAlias = Literal["server", "reported"]
"""Which count `Usage.used_tokens` is."""

FactKind: TypeAlias = Literal["instruction", "file_read", "file_write", "command", "error"]
"""What a fact of the compaction ledger records."""

EditKind: TypeAlias = Literal["compaction", "truncation", "duplicate_read"]
"""What a context edit did."""

EventKind: TypeAlias = Literal[
    "usage",
    "eviction",
    "compaction",
    "truncation",
    "duplicate_read",
    "checkpoint_created",
    "checkpoint_restored",
    "erasure",
    "gap",
]
"""What a watch event reports."""

ChunkStrategy: TypeAlias = Literal["lines", "functions", "semantic"]
"""How a workspace file is cut into chunks (proto enum ChunkStrategy)."""

ScrollDirection: TypeAlias = Literal["next", "previous"]
"""Which way a scroll moves through the file a conversation views."""

CaseMode: TypeAlias = Literal["smart", "sensitive", "insensitive"]
"""How a file search treats case; smart: insensitive unless the pattern has an upper-case
letter (proto enum CaseMode)."""
