"""A LangGraph long-term memory store over contextwm: one conversation per LangGraph
namespace, one item per stored value, and contextwm's hybrid search behind `search`."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)
from langgraph.store.base import Item as StoreItem
from langgraph.store.base.embed import get_text_at_path

from contextwm_client import Client, Item, ItemState, NewItem, NotFoundError

# Item metadata of a stored value. The labels are there so that a search's metadata filter
# can keep it to a namespace prefix, on the server, before top_k is cut.
KEY_KEY = "langgraph.key"
VALUE_KEY = "langgraph.value"
CREATED_KEY = "langgraph.created_at"
VERSION_KEY = "langgraph.version"
INDEXED_KEY = "langgraph.indexed"
LABEL_KEY = "langgraph.ns.{}"
# A value the query search does not see still needs content: the server refuses a blank one.
NOT_INDEXED = "(not indexed)"
# Reverted items were undone by a checkpoint restore; every other state is stored data.
LIVE_STATES: tuple[ItemState, ...] = ("window", "archived", "compacted")
# The server's default limits.max_top_k: a query search that filters on the value fetches
# this many hits, since the filter runs here, after the server cut its top_k.
MAX_CANDIDATES = 1000

_Versions = dict[str, list["_Stored"]]


def conversation_id(namespace: tuple[str, ...]) -> str:
    """The conversation that holds a LangGraph namespace: its labels joined by "." (which
    LangGraph forbids inside a label, so the id reads back unambiguously)."""
    return ".".join(namespace)


def store_namespace(conversation: str) -> tuple[str, ...]:
    """The LangGraph namespace a conversation holds."""
    return tuple(conversation.split("."))


@dataclass(frozen=True, slots=True)
class _Stored:
    """One version of a stored value, read from its item."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    seq: int
    version: str
    created_at: datetime
    updated_at: datetime

    def as_item(self) -> StoreItem:
        return StoreItem(
            value=self.value,
            key=self.key,
            namespace=self.namespace,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )

    def as_search_item(self, score: float | None) -> SearchItem:
        return SearchItem(
            self.namespace, self.key, self.value, self.created_at, self.updated_at, score
        )


class ContextWMStore(BaseStore):
    """LangGraph's `BaseStore` (put, get, search, delete, list_namespaces) on contextwm.

    Mapping: the store owns a contextwm namespace; each LangGraph namespace is the
    conversation whose id is its labels joined by "." (("users", "alice") is "users.alice");
    each value is one item (role "user") whose metadata holds its key (`langgraph.key`), the
    value as JSON (`langgraph.value`), when it was first put (`langgraph.created_at`; the
    item's timestamp is when it was last put), the namespace's labels (`langgraph.ns.0`, ...)
    and whether it is indexed; the item's content is the value's text, which contextwm embeds
    and indexes.

    A put appends the new version, then erases the older ones (`Client.forget` on their
    version's metadata); a delete erases every version of the key. Reads take the newest
    version, so a put cut off between its two calls leaves the new value in force.

    Search with a query is contextwm's hybrid search (BM25 and dense similarity) over the
    namespace, kept to the prefix by the label metadata on the server, with time words left
    unread (an item's time is when it was put, not what it tells); a SearchItem's score is
    contextwm's, and only what it finds relevant comes back. Without a query, search lists
    the values under the prefix, the most recently put first. Filters on the value (exact
    values, nested dicts, `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`) are applied here.

    Args:
        client: The client to call.
        namespace: The contextwm namespace the store keeps its conversations in; give it one
            of its own, since every conversation of it is listed as a LangGraph namespace.
        fields: What of a value is its text when a put does not say (`index`): "$" for the
            whole value (one "field: value" line per top-level field), or LangGraph paths
            ("memory", "facts[*].text", ...).
        max_candidates: Hits a query search with a filter fetches before filtering: at most
            the server's limits.max_top_k (1,000 by default).
    """

    supports_ttl = False

    def __init__(
        self,
        client: Client,
        *,
        namespace: str,
        fields: Sequence[str] = ("$",),
        max_candidates: int = MAX_CANDIDATES,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.fields = tuple(fields)
        self.max_candidates = max_candidates

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs the operations in order: a get after a put of the same batch sees the put.

        Consecutive puts are written together, one AppendBatch call per LangGraph namespace;
        two puts of one key in a run keep the last.

        Returns:
            One result per operation: an Item or None for a get, SearchItems for a search,
            namespaces for a listing, None for a put.

        Raises:
            InvalidNamespaceError: A namespace is empty, starts with "langgraph" (puts), or
                has a label that is empty or holds a "." (before any call).
            NotImplementedError: A put with a TTL: contextwm's retention policies expire
                items instead.
            ValueError: A filter names an unknown operator.
            ContextWMError: A call failed; puts before it are stored.
        """
        ops = list(ops)
        for op in ops:
            _check(op)
        results: list[Result] = []
        scans: dict[str, _Versions] = {}  # this batch's reads of each conversation
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                puts.pop((op.namespace, op.key), None)
                puts[(op.namespace, op.key)] = op
                results.append(None)
                continue
            self._write(list(puts.values()), scans)
            puts = {}
            results.append(self._read(op, scans))
        self._write(list(puts.values()), scans)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` in a worker thread (the store calls a blocking `Client`)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # ------------------------------------------------------------ reads

    def _read(self, op: Op, scans: dict[str, _Versions]) -> Result:
        if isinstance(op, GetOp):
            versions = self._versions(conversation_id(op.namespace), scans).get(op.key)
            return versions[-1].as_item() if versions else None
        if isinstance(op, SearchOp):
            if op.query:
                return self._search(op)
            return self._listing(op, scans)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise TypeError(f"unknown store operation {type(op).__name__}")

    def _versions(self, conversation: str, scans: dict[str, _Versions]) -> _Versions:
        """Each key's versions in a conversation, oldest first (one call per page of 1,000
        items, once per batch); none for a conversation not created yet."""
        if conversation not in scans:
            by_key: _Versions = {}
            with suppress(NotFoundError):
                for item in self.client.iter_items(
                    conversation, states=LIVE_STATES, namespace=self.namespace
                ):
                    stored = _decode(item)
                    if stored is not None:
                        by_key.setdefault(stored.key, []).append(stored)
            scans[conversation] = by_key
        return scans[conversation]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        wanted = op.offset + op.limit
        top_k = self.max_candidates if op.filter else min(self.max_candidates, wanted)
        if op.limit <= 0 or top_k <= 0:
            return []
        labels = {LABEL_KEY.format(i): label for i, label in enumerate(op.namespace_prefix)}
        result = self.client.search(
            op.query or "",
            top_k=top_k,
            include_window=True,
            metadata={**labels, INDEXED_KEY: "true"},
            time_hints=False,
            namespace=self.namespace,
        )
        found: list[SearchItem] = []
        seen: set[tuple[tuple[str, ...], str]] = set()
        for hit in result.hits:
            stored = _decode(hit.item)
            if stored is None or (stored.namespace, stored.key) in seen:
                continue
            seen.add((stored.namespace, stored.key))
            if matches(stored.value, op.filter):
                found.append(stored.as_search_item(hit.score))
        return found[op.offset : wanted]

    def _listing(self, op: SearchOp, scans: dict[str, _Versions]) -> list[SearchItem]:
        prefix = conversation_id(op.namespace_prefix)
        current = [
            versions[-1]
            for conversation in self.client.iter_conversations(namespace=self.namespace)
            if conversation.total_items and _under(conversation.conversation_id, prefix)
            for versions in self._versions(conversation.conversation_id, scans).values()
        ]
        kept = [s for s in current if matches(s.value, op.filter)]
        kept.sort(key=lambda s: (-s.updated_at.timestamp(), -s.seq, s.namespace, s.key))
        return [s.as_search_item(None) for s in kept[op.offset : op.offset + op.limit]]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        names = {
            store_namespace(c.conversation_id)
            for c in self.client.iter_conversations(namespace=self.namespace)
            if c.total_items  # a namespace whose values were all deleted is gone
        }
        kept = [n for n in names if all(_matches(c, n) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            kept = list({n[: op.max_depth] for n in kept})
        return sorted(kept)[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------ writes

    def _write(self, puts: Sequence[PutOp], scans: dict[str, _Versions]) -> None:
        """Appends the new versions, one call per conversation, then erases the older ones."""
        by_conversation: dict[str, list[PutOp]] = {}
        for op in puts:
            by_conversation.setdefault(conversation_id(op.namespace), []).append(op)
        for conversation, ops in by_conversation.items():
            versions = self._versions(conversation, scans)
            items = [
                self._new_item(op, versions.get(op.key, ())) for op in ops if op.value is not None
            ]
            if items:
                self.client.append_batch(conversation, items, namespace=self.namespace)
            for op in ops:
                old = versions.get(op.key, [])
                if op.value is None and old:
                    self.client.forget(
                        conversation, metadata={KEY_KEY: op.key}, namespace=self.namespace
                    )
                elif op.value is not None:
                    for stored in old:
                        self.client.forget(
                            conversation,
                            metadata={KEY_KEY: op.key, VERSION_KEY: stored.version},
                            namespace=self.namespace,
                        )
            scans.pop(conversation, None)

    def _new_item(self, op: PutOp, old: Sequence[_Stored]) -> NewItem:
        value = dict(op.value or {})
        text = self._text(value, op.index)
        metadata = {
            KEY_KEY: op.key,
            VALUE_KEY: _json(value),
            VERSION_KEY: uuid.uuid4().hex,
            INDEXED_KEY: "true" if text else "false",
            **{LABEL_KEY.format(i): label for i, label in enumerate(op.namespace)},
        }
        if old:  # an update: the value was created when its first version was put
            metadata[CREATED_KEY] = old[0].created_at.isoformat()
        content = text or (op.key if op.key.strip() else NOT_INDEXED)
        return NewItem(content=content, role="user", metadata=metadata)

    def _text(self, value: Mapping[str, Any], index: Literal[False] | list[str] | None) -> str:
        """The value's text to index: the store's fields, or the put's own; "" for none."""
        if index is False:
            return ""
        paths: Sequence[str] = self.fields if index is None else index
        texts: list[str] = []
        for path in paths:
            if path == "$":
                texts += [f"{k}: {v if isinstance(v, str) else _json(v)}" for k, v in value.items()]
            else:
                texts += get_text_at_path(value, path)
        return "\n".join(t for t in texts if t.strip())


def matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Whether a value passes a LangGraph filter: every field equal to the filter's value
    (nested dicts field by field), or passing its operators ($eq, $ne, $gt, $gte, $lt, $lte).

    Raises:
        ValueError: An unknown operator.
    """
    return all(_compare(value.get(field), wanted) for field, wanted in (flt or {}).items())


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, dict) and all(
            _compare(actual.get(k), v) for k, v in wanted.items()
        )
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"unknown filter operator {op!r}; use $eq, $ne, $gt, $gte, $lt or $lte")
    # A missing or incomparable field fails an ordering, as in a database's JSON comparison.
    try:
        if op == "$gt":
            return bool(actual > operand)
        if op == "$gte":
            return bool(actual >= operand)
        if op == "$lt":
            return bool(actual < operand)
        return bool(actual <= operand)
    except TypeError:
        return False


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether a namespace matches a prefix or suffix condition ("*" matches any label)."""
    path = condition.path
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p in ("*", label) for p, label in zip(path, part, strict=True))


def _under(conversation: str, prefix: str) -> bool:
    """Whether a conversation holds the namespace prefix or one below it."""
    return not prefix or conversation == prefix or conversation.startswith(prefix + ".")


def _check(op: Op) -> None:
    validate_op_namespace(op)
    if isinstance(op, GetOp | PutOp) and not op.namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    if isinstance(op, PutOp):
        if op.namespace[0] == "langgraph":
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "langgraph". Got: {op.namespace}'
            )
        if op.ttl is not None:
            raise NotImplementedError(
                "ContextWMStore does not expire items by TTL; set a retention policy on the"
                " namespace or its conversations instead (docs/retention.md)"
            )


def _decode(item: Item) -> _Stored | None:
    """The stored value an item holds; None for an item that is not one."""
    meta = item.metadata
    if KEY_KEY not in meta or VALUE_KEY not in meta:
        return None
    created = meta.get(CREATED_KEY)
    return _Stored(
        namespace=store_namespace(item.conversation_id),
        key=meta[KEY_KEY],
        value=json.loads(meta[VALUE_KEY]),
        seq=item.seq,
        version=meta.get(VERSION_KEY, ""),
        created_at=datetime.fromisoformat(created) if created else item.timestamp,
        updated_at=item.timestamp,
    )


def _json(value: object) -> str:
    # Compact: metadata is limited in bytes. The value's own key order is kept.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
