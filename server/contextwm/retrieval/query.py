"""Reads a request's query: the time it names, the text to search for, its vector, and its
words looked up."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime

from contextwm.conversations.runtime import ConversationRuntime
from contextwm.domain.errors import NotFound
from contextwm.domain.items import ItemState
from contextwm.ports.embedder import Embedder
from contextwm.retrieval.ranker import CANDIDATES, Ranker
from contextwm.retrieval.timehints import TimeHint, parse_time_hint, strip_time_phrase
from contextwm.window.window import Vector


@dataclass(frozen=True, slots=True)
class Words:
    """A query's words looked up in the store while the query was embedded (no lock held)."""

    scores: dict[int, float]  # BM25 by seq
    states: tuple[ItemState, ...]  # of the items looked in
    event: int  # the conversation's last event then: any change since makes them stale


@dataclass(frozen=True, slots=True)
class Query:
    text: str | None  # as the request gave it, stripped; None: the focus stands in
    hint: TimeHint | None
    search: str  # what is searched for: the query less its time phrase, or the focus text
    vector: Vector | None
    words: Words | None = None  # looked up while the query was embedded

    def lexical(self, states: tuple[ItemState, ...]) -> dict[int, float] | None:
        """The words' BM25 when they were looked up in these states, else None."""
        return self.words.scores if self.words and self.words.states == states else None


class QueryReader:
    """Reads queries; thread-safe."""

    def __init__(self, embedder: Embedder, ranker: Ranker) -> None:
        self.embedder = embedder
        self.ranker = ranker

    def read(
        self,
        rt: ConversationRuntime,
        query: str | None,
        *,
        as_of: float | None,
        time_hints: bool = True,
        look_up: tuple[tuple[ItemState, ...], int] | None = None,
    ) -> Query:
        """The query: its time phrase read against as_of, the rest embedded and, when look_up
        gives (states, limit), its words looked up in items in those states (no lock held:
        the lookup reads the store, and the ranking takes the lock). Returns once what was
        appended before is embedded (see vector).

        Raises:
            DeadlineExceeded: the caller's deadline passed while waiting for vectors.
        """
        text = (query or "").strip() or None
        hint, search = self.timed(rt, text, as_of) if (text and time_hints) else (None, text)
        if not search:
            self.ranker.indexes.wait_indexed(rt)
            return Query(text, hint, "", None)
        vector = self.vector(rt, search)
        words = self._words(rt, search, *look_up) if look_up is not None else None
        return Query(text, hint, search, vector, words)

    def vector(self, rt: ConversationRuntime, text: str) -> Vector:
        """text's vector, once what was appended to rt before is embedded (read-your-writes,
        bounded by the server's wait): a few pending items are embedded in the same pass,
        more are the indexer's while the text is embedded.

        Raises:
            DeadlineExceeded: the caller's deadline passed while waiting for vectors.
        """
        vectors = self.ranker.indexes
        together = vectors.embed_for_reader(rt, [text]) if vectors.embed_for_reader else None
        vector = together[0] if together is not None else self.embed(text)
        vectors.wait_indexed(rt)
        return vector

    def _words(
        self, rt: ConversationRuntime, text: str, states: tuple[ItemState, ...], limit: int
    ) -> Words:
        event = rt.last_event
        return Words(self.ranker.bm25(rt, text, states, None, limit), states, event)

    @staticmethod
    def focused(rt: ConversationRuntime, q: Query) -> Query:
        """q, or the focus standing in when the request has no query (rt.lock held).

        Raises:
            NotFound: the conversation was deleted meanwhile.
        """
        if rt.deleted:
            raise NotFound(f"conversation {rt.record.conversation_id!r} was deleted")
        if q.words is not None and q.words.event != rt.last_event:
            q = dataclasses.replace(q, words=None)  # looked up before a change: look again
        if q.text is not None:
            return q
        n = rt.record.settings.focus_items
        text = "\n".join(e.item.content for e in rt.window.newest(n))
        return dataclasses.replace(q, search=text, vector=rt.window.focus_vector(n))

    def embed(self, text: str) -> Vector:
        vector: Vector = self.embedder.embed([text])[0]
        return vector

    def timed(
        self, rt: ConversationRuntime, text: str, as_of: float | None
    ) -> tuple[TimeHint | None, str]:
        """The time the text names (see hint), and what to search for: the text less its time
        phrase, but with the words of an event that anchors the range ("after the accident"),
        which is also what the question is about."""
        hint, events = self._hint(rt, text, as_of)
        if hint is None:
            return None, text
        kept = [e for e in events if e in hint.phrase]
        return hint, " ".join([strip_time_phrase(text, hint), *kept]).strip()

    def _hint(
        self, rt: ConversationRuntime, query: str, as_of: float | None
    ) -> tuple[TimeHint | None, list[str]]:
        """The time the query names, read against as_of (when it is asked), else against the
        conversation's newest item: never the server's clock, so historic timelines work;
        and the event phrases looked up to place it."""
        events: list[str] = []
        now = as_of if as_of is not None else rt.last_ts
        if now is None:
            return None, events

        def locate(event: str) -> datetime | None:
            """When the event happened: the item that matches its words best (BM25), the
            earliest on a tie (an event is usually named first when it happens)."""
            events.append(event)
            evidence = self.ranker.bm25(
                rt,
                event,
                (ItemState.WINDOW, ItemState.ARCHIVED, ItemState.COMPACTED),
                None,
                CANDIDATES,
            )
            if not evidence:
                return None
            seq = min(evidence, key=lambda s: (-round(evidence[s], 9), s))
            item = self.ranker.items(rt, [seq]).get(seq)
            return datetime.fromtimestamp(item.timestamp, UTC) if item else None

        hint = parse_time_hint(
            query,
            datetime.fromtimestamp(now, UTC),
            locate_event=locate,
            first=datetime.fromtimestamp(rt.first_ts, UTC) if rt.first_ts is not None else None,
        )
        return hint, events
