"""Request limits and the checks that turn bad input into errors a person can act on."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from contextwm.domain.checks import INT64_MAX, check_range
from contextwm.domain.errors import InvalidArgument, ResourceExhausted
from contextwm.domain.items import FILE_KINDS, ROLES, NewItem
from contextwm.domain.scope import Scope

DEFAULT_NAMESPACE = "default"
# "/" only between names ("team-a/agent-1"), so that an API key's scope "team-a/" is a
# prefix of the namespaces under it and of nothing else.
_NAMESPACE = re.compile(r"^(?=.{1,128}$)[A-Za-z0-9](?:[A-Za-z0-9._:-]|/(?=[A-Za-z0-9]))*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_PAGE_TOKEN = re.compile(r"[0-9]{1,19}")
# Timestamps outside these years are almost always a unit mistake (ms for s).
_MIN_TS, _MAX_TS = 0.0, 253402300799.0  # 1970-01-01 .. 9999-12-31


@dataclass(frozen=True, slots=True)
class Limits:
    """Server-wide request limits; every error message names the setting to change."""

    max_item_tokens: int = 200_000
    max_item_bytes: int = 4 * 1024 * 1024
    max_batch_items: int = 1000
    max_batch_bytes: int = 32 * 1024 * 1024
    max_metadata_entries: int = 64
    max_metadata_bytes: int = 16 * 1024
    max_budget_tokens: int = 2_000_000
    max_page_size: int = 1000
    max_top_k: int = 1000
    # Items one namespace may hold, every state counted; 0: any number.
    max_items_per_namespace: int = 0
    # Each Watch stream holds a server worker thread: keep some free for other calls.
    max_watchers: int = 8


def namespace_of(namespace: str) -> str:
    """The namespace a request means ("" is the default one).

    Raises:
        InvalidArgument: for a name other than 1..128 of letters, digits and . _ : -.
    """
    if not namespace:
        return DEFAULT_NAMESPACE
    if not _NAMESPACE.match(namespace):
        raise InvalidArgument(
            f"invalid namespace {namespace!r}: use 1..128 letters, digits, '.', '_', ':' or '-',"
            " starting with a letter or digit, and '/' between names ('team-a/agent-1')"
        )
    return namespace


def check_conversation_id(conversation_id: str) -> str:
    """Raises InvalidArgument unless the id has 1..200 characters and no control characters."""
    if not conversation_id:
        raise InvalidArgument("conversation_id is required")
    if len(conversation_id) > 200 or _CONTROL.search(conversation_id):
        raise InvalidArgument(
            "conversation_id must have 1..200 characters and no control characters"
        )
    return conversation_id


def check_new_conversation_id(conversation_id: str) -> str:
    """check_conversation_id, and no whitespace at either end: an id that differs from
    another only by a space is a mistake a person cannot see in a listing.

    Raises:
        InvalidArgument: as check_conversation_id, or for an id with leading or trailing
            whitespace (a blank id included).
    """
    check_conversation_id(conversation_id)
    if conversation_id != conversation_id.strip():
        raise InvalidArgument(
            f"conversation_id {conversation_id!r} starts or ends with whitespace: remove it"
            " (existing conversations keep their ids; new ones may not)"
        )
    return conversation_id


def check_timestamp(where: str, value: float) -> None:
    """Raises InvalidArgument unless value is a time (seconds) between 1970 and 9999."""
    if not (math.isfinite(value) and _MIN_TS <= value <= _MAX_TS):
        raise InvalidArgument(f"{where}: timestamp {value!r} is not between 1970 and 9999")


def check_item(item: NewItem, limits: Limits, index: int | None = None) -> None:
    """Everything about an item that can be checked before its tokens are counted.

    Raises:
        InvalidArgument: unknown role or file kind, empty content, bad timestamp or key.
        ResourceExhausted: content or metadata over its limit.
    """
    where = "item" if index is None else f"items[{index}]"
    if item.role not in ROLES:
        raise InvalidArgument(
            f"{where}: unknown role {item.role!r}; roles are: {', '.join(sorted(ROLES))}"
        )
    if not item.content.strip():
        raise InvalidArgument(f"{where}: content is empty")
    size = len(item.content.encode("utf-8", errors="surrogatepass"))
    if size > limits.max_item_bytes:
        raise ResourceExhausted(
            f"{where}: content is {size} bytes, over the limit of {limits.max_item_bytes}"
            " (setting limits.max_item_bytes)"
        )
    if item.timestamp is not None:
        check_timestamp(where, item.timestamp)
    check_metadata_size(where, item.metadata, limits)
    if any(not k for k in item.metadata):
        raise InvalidArgument(f"{where}: metadata keys must not be empty")
    if item.file is not None:
        if item.file.kind not in FILE_KINDS:
            raise InvalidArgument(
                f"{where}: unknown file kind {item.file.kind!r}; kinds are:"
                f" {', '.join(sorted(FILE_KINDS))}"
            )
        if not item.file.path:
            raise InvalidArgument(f"{where}: file reference has an empty path")
    if item.idempotency_key is not None and len(item.idempotency_key) > 256:
        raise InvalidArgument(f"{where}: idempotency_key is longer than 256 characters")


def check_metadata_size(where: str, metadata: Mapping[str, str], limits: Limits) -> None:
    """Raises ResourceExhausted for more metadata entries or bytes than an item may carry."""
    if len(metadata) > limits.max_metadata_entries:
        raise ResourceExhausted(
            f"{where}: {len(metadata)} metadata entries, over the limit of"
            f" {limits.max_metadata_entries} (setting limits.max_metadata_entries)"
        )
    size = sum(len(k.encode()) + len(v.encode()) for k, v in metadata.items())
    if size > limits.max_metadata_bytes:
        raise ResourceExhausted(
            f"{where}: metadata is {size} bytes, over the limit of"
            f" {limits.max_metadata_bytes} (setting limits.max_metadata_bytes)"
        )


def check_item_tokens(tokens: int, limits: Limits, index: int | None = None) -> None:
    if tokens > limits.max_item_tokens:
        where = "item" if index is None else f"items[{index}]"
        raise ResourceExhausted(
            f"{where}: content is {tokens} tokens, over the limit of {limits.max_item_tokens}"
            " (setting limits.max_item_tokens)"
        )


def check_batch(items_count: int, total_bytes: int, limits: Limits) -> None:
    if items_count == 0:
        raise InvalidArgument("items is empty: a batch needs at least one item")
    if items_count > limits.max_batch_items:
        raise ResourceExhausted(
            f"batch has {items_count} items, over the limit of {limits.max_batch_items}"
            f" (setting limits.max_batch_items); split it into batches of at most"
            f" {limits.max_batch_items} items (the Python client's append_batch does, with"
            f" batch_size={limits.max_batch_items}; each batch is all or nothing on its own)"
        )
    if total_bytes > limits.max_batch_bytes:
        raise ResourceExhausted(
            f"batch content is {total_bytes} bytes, over the limit of {limits.max_batch_bytes}"
            " (setting limits.max_batch_bytes); split it"
        )


def page_size_of(page_size: int, limits: Limits, default: int = 100) -> int:
    if page_size == 0:
        return default
    check_range("page_size", page_size, 1, limits.max_page_size)
    return page_size


def page_token_seq(token: str) -> int:
    """Item pages resume after a seq; the token is that seq in ASCII decimal, within int64."""
    if not token:
        return 0
    # str.isdigit() would accept "²" and other Unicode digits that int() rejects.
    if not _PAGE_TOKEN.fullmatch(token) or int(token) > INT64_MAX:
        raise _bad_page_token(token)
    return int(token)


def conversation_page_token(namespace: str, conversation_id: str) -> str:
    """The token of a listing across namespaces that resumes after this conversation."""
    return f"{namespace} {conversation_id}"


def page_token_conversation(token: str) -> tuple[str, str]:
    """The (namespace, conversation id) a conversation_page_token resumes after; ("", "")
    for the first page. A namespace has no space, so the first one ends it.

    Raises:
        InvalidArgument: for a token no listing returned.
    """
    if not token:
        return "", ""
    namespace, space, conversation_id = token.partition(" ")
    valid = (
        space
        and _NAMESPACE.match(namespace)  # as namespace_of checks it: every stored one passes
        and 0 < len(conversation_id) <= 200
        and not _CONTROL.search(conversation_id)
    )
    if not valid:
        raise _bad_page_token(token)
    return namespace, conversation_id


def _bad_page_token(token: str) -> InvalidArgument:
    shown = token if len(token) <= 40 else f"{token[:40]}... ({len(token)} characters)"
    return InvalidArgument(f"invalid page_token {shown!r}: pass next_page_token unchanged")


def scope_of(namespace: str, conversation_id: str, all_namespaces: bool) -> Scope:
    """The scope a request names ("" namespace: the default one).

    Raises:
        InvalidArgument: all_namespaces with a namespace or a conversation, or a bad name.
    """
    if all_namespaces:
        if namespace:
            raise InvalidArgument(
                "all_namespaces covers every namespace: leave namespace empty, or leave"
                " all_namespaces unset for one namespace"
            )
        if conversation_id:
            raise InvalidArgument(
                "all_namespaces covers every conversation: leave conversation_id empty, or"
                " name its namespace instead of all_namespaces"
            )
        return Scope()
    ns = namespace_of(namespace)
    if not conversation_id:
        return Scope(ns)
    return Scope(ns, check_conversation_id(conversation_id))
