"""What each page of the inspector shows, gathered from read calls: the namespaces a key may
see, a namespace's conversations, a stretch of a conversation's timeline with its marks, and
its usage over time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.conversations.validation import DEFAULT_NAMESPACE
from contextwm.domain.access import ApiKey
from contextwm.inspector.plain import plain
from contextwm.inspector.reads import ReadFailed, Reads
from contextwm.inspector.replay import Rules, usage_points
from contextwm.ports.tokens import TokenCounter

# Conversations per page of a namespace's list (each costs a usage read).
CONVERSATIONS_PER_PAGE = 25
# Items per stretch of the timeline: what one screen moves, however long the conversation.
TIMELINE_ITEMS = 200
# Points of the usage chart at most; a longer life is thinned, keeping every drop.
USAGE_POINTS = 1500
# Pages of the active context read to mark the masked tool outputs of one stretch.
ACTIVE_PAGES = 4
# Items a filtered timeline looks through for one screen (each 1,000 a read).
FILTER_SCAN = 20_000
# Rows of the active context per screen of "what the model is sent".
ACTIVE_ROWS = 200
# Characters of a left-out window item shown to name it.
NAMED_CHARS = 200
# Reads of the whole active context tried when it changes between its pages.
ACTIVE_READS = 3
# The section of the active context each row is in, by its treatment (or kind).
_SECTIONS = {
    "compaction": "compaction summary",
    "as_is": "messages",
    "masked": "masked tool outputs",
    "duplicate_read": "replaced reads",
    "truncation_notice": "truncation notices",
}

# The conversations of a namespace (None: of all) as (namespace, conversation id, when it was
# last appended to, in Unix seconds), read from the store.
ActivityOf = Callable[[str | None], list[tuple[str, str, float]]]


_STATES = {
    "window": pb.ITEM_STATE_WINDOW,
    "archived": pb.ITEM_STATE_ARCHIVED,
    "compacted": pb.ITEM_STATE_COMPACTED,
    "reverted": pb.ITEM_STATE_REVERTED,
}
STATE_NAMES = tuple(_STATES)


@dataclass(frozen=True)
class ItemFilter:
    """Which items a timeline shows: any of these roles, states (names of STATE_NAMES) and
    flags; an empty set lets every one through."""

    roles: frozenset[str] = frozenset()
    states: frozenset[str] = frozenset()
    flags: frozenset[str] = frozenset()

    def lets(self, item: pb.Item) -> bool:
        """Whether item passes the roles and flags (the store filters the states)."""
        if self.roles and item.role not in self.roles:
            return False
        return not self.flags or bool(self.flags.intersection(item.flags))


@dataclass
class Caller:
    """Who a page is for: their token (None: no key) and its key (None: keys are off and
    none was given)."""

    token: str | None
    key: ApiKey | None


class Pages:
    """The data of each page, read with the caller's key."""

    def __init__(
        self, reads: Reads, activity: ActivityOf, counters: Callable[[str], TokenCounter]
    ) -> None:
        """Args:
        reads: calls to the server.
        activity: the conversations and when each was last active.
        counters: the server's token counter of each encoding, to replay usage with.
        """
        self._reads = reads
        self._activity = activity
        self._counters = counters

    def namespaces(self, caller: Caller) -> list[dict[str, Any]]:
        """The namespaces the caller's key covers (every one without a key), with their
        conversation count and last activity, most recently active first."""
        seen: dict[str, list[float]] = {}
        for namespace, _, last_active in self._activity(None):
            if caller.key is None or caller.key.covers(namespace):
                seen.setdefault(namespace, []).append(last_active)
        rows = [
            {"namespace": ns, "conversations": len(times), "last_active": max(times)}
            for ns, times in seen.items()
        ]
        return sorted(rows, key=lambda r: -r["last_active"])

    def conversations(
        self, caller: Caller, namespace: str, match: str, page: int
    ) -> dict[str, Any]:
        """A namespace's conversations whose id contains match (any case), most recently
        active first, one page of them with items by state, window fill and usage."""
        namespace = namespace or DEFAULT_NAMESPACE
        # One snapshot of the store for every conversation (and the guard's check of the
        # namespace); the window and usage, which load a conversation, for the page only.
        stats = {
            s.conversation_id: s.stats
            for s in self._all(caller, "GetStats", "conversations", namespace=namespace)
        }
        active_at = {cid: at for _, cid, at in self._activity(namespace)}
        needle = match.casefold()
        chosen = [cid for cid in stats if needle in cid.casefold()]
        chosen.sort(key=lambda cid: (-active_at.get(cid, 0.0), cid))
        pages = max(1, -(-len(chosen) // CONVERSATIONS_PER_PAGE))
        page = min(max(page, 1), pages)
        rows = []
        for cid in chosen[(page - 1) * CONVERSATIONS_PER_PAGE : page * CONVERSATIONS_PER_PAGE]:
            ids = {"namespace": namespace, "conversation_id": cid}
            found = self._call(caller, "GetConversation", pb.GetConversationRequest(**ids))
            active = self._call(
                caller, "GetActiveContext", pb.GetActiveContextRequest(**ids, page_size=1)
            )
            row = plain(found)
            row["last_activity"] = active_at.get(cid)
            row["usage"] = plain(active.usage)
            row["stats"] = plain(stats[cid])
            rows.append(row)
        return {"conversations": rows, "total": len(chosen), "page": page, "pages": pages}

    def conversation(self, caller: Caller, namespace: str, conversation_id: str) -> dict[str, Any]:
        """A conversation's settings, window, usage and checkpoints."""
        found = self._call(
            caller,
            "GetConversation",
            pb.GetConversationRequest(namespace=namespace, conversation_id=conversation_id),
        )
        active = self._call(
            caller,
            "GetActiveContext",
            pb.GetActiveContextRequest(
                namespace=namespace, conversation_id=conversation_id, page_size=1
            ),
        )
        checkpoints = self._call(
            caller,
            "ListCheckpoints",
            pb.ListCheckpointsRequest(namespace=namespace, conversation_id=conversation_id),
        )
        return {
            "conversation": plain(found),
            "usage": plain(active.usage),
            "checkpoints": [plain(c) for c in checkpoints.checkpoints],
        }

    def timeline(
        self,
        caller: Caller,
        namespace: str,
        conversation_id: str,
        after: int,
        limit: int,
        only: ItemFilter | None = None,
    ) -> dict[str, Any]:
        """The items after seq `after` (at most limit, up to TIMELINE_ITEMS; with a filter,
        those it lets through among the next FILTER_SCAN items), with what happened to each:
        its state, whether it was masked, replaced by a later read or truncated, and the
        checkpoints and truncations between them."""
        limit = min(max(limit, 1), TIMELINE_ITEMS)
        ids: dict[str, Any] = {"namespace": namespace, "conversation_id": conversation_id}
        listed, next_after = self._stretch(caller, ids, after, limit, only or ItemFilter())
        items = [plain(i) for i in listed]
        found = self._call(caller, "GetConversation", pb.GetConversationRequest(**ids))
        edits = self._all(caller, "ListContextEdits", "edits", **ids)
        checkpoints = self._call(caller, "ListCheckpoints", pb.ListCheckpointsRequest(**ids))
        marks: dict[int, list[str]] = {}
        events: list[dict[str, Any]] = []
        for edit in edits:
            undone = edit.HasField("undone_at")
            if edit.kind == "duplicate_read":
                for seq in edit.seqs:
                    marks.setdefault(seq, []).append(
                        f"duplicate read: superseded by #{edit.related_seq}"
                        + (" (undone)" if undone else "")
                    )
            elif edit.kind == "truncation":
                for seq in edit.seqs:
                    marks.setdefault(seq, []).append("truncated" + (" (undone)" if undone else ""))
                if edit.seqs:
                    events.append(
                        {
                            "kind": "truncation",
                            "after_seq": max(edit.seqs),
                            "items": len(edit.seqs),
                            "tokens": edit.tokens_saved,
                            "time": plain(edit)["created_at"],
                            "undone": undone,
                        }
                    )
        for checkpoint in checkpoints.checkpoints:
            events.append(
                {"kind": "checkpoint", "after_seq": checkpoint.last_seq, **plain(checkpoint)}
            )
        if items:
            low, high = items[0]["seq"], items[-1]["seq"]
            notices = sum(
                1 for e in edits if e.kind == "truncation" and not e.HasField("undone_at")
            )
            for seq in self._masked(caller, ids, found.last_seq, notices, low, high):
                marks.setdefault(seq, []).append("masked: output replaced by a placeholder")
            events = [e for e in events if low <= e["after_seq"] <= high]
        for item in items:
            item["marks"] = marks.get(item["seq"], [])
        return {
            "items": items,
            "events": events,
            "last_seq": found.last_seq,
            "total_items": found.total_items,
            "next_after": next_after,
        }

    def _stretch(
        self, caller: Caller, ids: dict[str, Any], after: int, limit: int, only: ItemFilter
    ) -> tuple[list[pb.Item], int | None]:
        """Up to limit items after seq `after` that only lets through, and the seq to go on
        after (None: the conversation's end). The store filters states; roles and flags are
        filtered here, scanning at most FILTER_SCAN items."""
        states = [_STATES[s] for s in sorted(only.states)]
        if not (only.roles or only.flags):
            listed = self._call(
                caller,
                "ListItems",
                pb.ListItemsRequest(
                    **ids, page_size=limit, page_token=str(after) if after else "", states=states
                ),
            )
            # An item page token is the seq it resumes after.
            return list(listed.items), int(
                listed.next_page_token
            ) if listed.next_page_token else None
        found: list[pb.Item] = []
        scanned = 0
        cursor = after
        while True:
            listed = self._call(
                caller,
                "ListItems",
                pb.ListItemsRequest(
                    **ids, page_size=1000, page_token=str(cursor) if cursor else "", states=states
                ),
            )
            for item in listed.items:
                cursor = item.seq
                scanned += 1
                if only.lets(item):
                    found.append(item)
                    if len(found) == limit:
                        return found, cursor
            if not listed.next_page_token:
                return found, None
            if scanned >= FILTER_SCAN:
                return found, cursor

    def usage(self, caller: Caller, namespace: str, conversation_id: str) -> dict[str, Any]:
        """The usage now, and the active context's tokens after each item over the
        conversation's life, as GetUsage counted them: compactions, truncations, replaced
        reads and masked tool outputs are drops."""
        ids: dict[str, Any] = {"namespace": namespace, "conversation_id": conversation_id}
        found = self._call(caller, "GetConversation", pb.GetConversationRequest(**ids))
        active = self._call(
            caller, "GetActiveContext", pb.GetActiveContextRequest(**ids, page_size=1)
        )
        items = self._all(caller, "ListItems", "items", **ids)
        edits = [
            e
            for e in self._all(caller, "ListContextEdits", "edits", **ids)
            if not e.HasField("undone_at")
        ]
        settings = found.settings
        rules = Rules(settings.mask_tool_outputs_after_turns, settings.replace_duplicate_reads)
        points = usage_points(items, edits, rules, self._counters(settings.encoding))
        return {"usage": plain(active.usage), "points": thinned(points, USAGE_POINTS)}

    def active(
        self, caller: Caller, namespace: str, conversation_id: str, start: int
    ) -> dict[str, Any]:
        """What the agent sends its model now: the active context's rows from `start` (one
        screen), and the tokens of the whole of it by section and by role.

        Sections: the compaction summary that opens it, messages sent as they are, masked
        tool outputs (their placeholders), replaced reads (their notices) and truncation
        notices. The whole active context is read to count them (a read per 1,000 rows).
        """
        ids: dict[str, Any] = {"namespace": namespace, "conversation_id": conversation_id}
        for _ in range(ACTIVE_READS):
            entries, whole = self._active_entries(caller, ids)
            if entries is not None:
                break
        else:
            raise ReadFailed(
                409, "ABORTED", "the conversation kept changing while its context was read"
            )
        sections: dict[str, dict[str, int]] = {
            name: {"entries": 0, "tokens": 0, "stored_tokens": 0} for name in _SECTIONS.values()
        }
        roles: dict[str, dict[str, int]] = {}
        for entry in entries:
            what = "compaction" if entry.kind == "compaction" else entry.treatment
            name = _SECTIONS.get(what, what)
            sections.setdefault(name, {"entries": 0, "tokens": 0, "stored_tokens": 0})
            for tally in (
                sections[name],
                roles.setdefault(entry.role, {"entries": 0, "tokens": 0}),
            ):
                tally["entries"] += 1
                tally["tokens"] += entry.token_count
            sections[name]["stored_tokens"] += entry.original_tokens
        start = min(max(start, 0), max(0, len(entries) - 1))
        return {
            "entries": [plain(e) for e in entries[start : start + ACTIVE_ROWS]],
            "start": start,
            "total_entries": whole.total_entries,
            "total_tokens": whole.total_tokens,
            "sections": [{"section": n, **t} for n, t in sections.items()],
            "roles": [{"role": r, **t} for r, t in sorted(roles.items())],
            "usage": plain(whole.usage),
        }

    def _active_entries(
        self, caller: Caller, ids: dict[str, Any]
    ) -> tuple[list[pb.ActiveEntry] | None, pb.ActiveContext]:
        """Every row of the active context, or None when it changed between pages (its
        page tokens are row offsets), with its first page."""
        entries: list[pb.ActiveEntry] = []
        first: pb.ActiveContext | None = None
        token = ""
        while True:
            page = self._call(
                caller,
                "GetActiveContext",
                pb.GetActiveContextRequest(**ids, page_size=1000, page_token=token),
            )
            first = first or page
            if (page.total_entries, page.total_tokens) != (first.total_entries, first.total_tokens):
                return None, first
            entries.extend(page.entries)
            token = page.next_page_token
            if not token:
                return entries, first

    def context(self, caller: Caller, request: pb.GetContextRequest) -> dict[str, Any]:
        """What GetContext returns for the request, and the window items it left out (see
        `left_out`)."""
        answer = self._call(caller, "GetContext", request)
        found = plain(answer)
        found["left_out"] = []
        if answer.tokens.recent_omitted:
            found["left_out"] = self._left_out(caller, request, answer)
        return found

    def _left_out(
        self, caller: Caller, request: pb.GetContextRequest, answer: pb.EnhancedContext
    ) -> list[dict[str, Any]]:
        """The window items the answer does not hold, read just after it: GetContext counts
        them (tokens.recent_omitted) without naming them."""
        chosen = {s.item.seq for s in [*answer.recent, *answer.history]}
        window = self._all(
            caller,
            "ListItems",
            "items",
            namespace=request.namespace,
            conversation_id=request.conversation_id,
            states=[pb.ITEM_STATE_WINDOW],
        )
        return [
            {
                "seq": i.seq,
                "role": i.role,
                "token_count": i.token_count,
                "content": i.content[:NAMED_CHARS],
                "clipped": len(i.content) > NAMED_CHARS,
            }
            for i in window
            if i.seq not in chosen
        ]

    def search(self, caller: Caller, request: pb.SearchRequest) -> dict[str, Any]:
        """Exactly what Search returns for the request."""
        return plain(self._call(caller, "Search", request))

    def _masked(
        self, caller: Caller, ids: dict[str, Any], last_seq: int, notices: int, low: int, high: int
    ) -> set[int]:
        """The items among low..high whose output the active context masks."""
        first = self._call(
            caller, "GetActiveContext", pb.GetActiveContextRequest(**ids, page_size=1)
        )
        total = first.total_entries
        if not total or high < _first_seq(first):
            return set()
        # Rows are in seq order: one per item still in the active context, plus a notice per
        # truncation. So at most this many rows hold a seq of low or more.
        start = max(0, total - (last_seq - low + 1) - notices)
        out: set[int] = set()
        token = str(start)
        for _ in range(ACTIVE_PAGES):
            page = self._call(
                caller,
                "GetActiveContext",
                pb.GetActiveContextRequest(
                    **ids,
                    page_size=min(max(high - low + 1 + notices, 500), 1000),
                    page_token=token,
                ),
            )
            out.update(
                e.seq for e in page.entries if low <= e.seq <= high and e.treatment == "masked"
            )
            if max((e.seq for e in page.entries), default=high) >= high or not page.next_page_token:
                return out
            token = page.next_page_token
        return out

    def _call(self, caller: Caller, method: str, request: Any) -> Any:
        return self._reads.call(method, request, caller.token)

    def _all(self, caller: Caller, method: str, field: str, **fields: Any) -> list[Any]:
        """Every page of a paged read, in order."""
        out: list[Any] = []
        token = ""
        request_type = getattr(pb, f"{method}Request")
        while True:
            page = self._call(
                caller, method, request_type(**fields, page_size=1000, page_token=token)
            )
            out.extend(getattr(page, field))
            token = page.next_page_token
            if not token:
                return out


def _first_seq(active: pb.ActiveContext) -> int:
    return active.entries[0].seq if active.entries else 0


def thinned(points: list[dict[str, Any]], most: int) -> list[dict[str, Any]]:
    """At most about `most` points, evenly spaced, keeping every point with an event and the
    one before it (so a drop stays a drop)."""
    if len(points) <= most:
        return points
    step = len(points) / most
    keep = {round(k * step) for k in range(most)} | {len(points) - 1}
    for index, point in enumerate(points):
        if point["event"]:
            keep.update((index - 1, index))
    return [points[i] for i in sorted(keep) if 0 <= i < len(points)]
