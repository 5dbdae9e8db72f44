"""The Store port: durable conversations, items, vectors, and the term postings BM25 is
computed from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.facts import Fact
from contextwm.domain.history import CompactionRecord, ContextEdit, Event
from contextwm.domain.items import Flag, Item, ItemFilter, ItemState
from contextwm.domain.scope import Scope
from contextwm.domain.stats import ScopeStats
from contextwm.domain.usage import Reported
from contextwm.domain.workspace_files import SessionState
from contextwm.ports.embedder import Vectors
from contextwm.ports.history_store import HistoryStore
from contextwm.ports.namespace_store import NamespaceStore


@dataclass(frozen=True, slots=True)
class ItemVectors:
    """Vectors of some of one conversation's items, and the model that made them."""

    model: str
    seqs: Sequence[int]
    vectors: Sequence[npt.NDArray[np.float32]]


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """A stored conversation; key is the store's own id, used by every other call."""

    key: int
    namespace: str
    conversation_id: str
    settings: ConversationSettings
    created_at: float
    last_seq: int
    token_limit: int | None
    state: str
    # The agent loop: where the active context starts (the last compaction marker, or 0),
    # the provider's last reported count, and the last event number.
    active_start: int = 0
    reported: Reported | None = None
    last_event: int = 0
    # The embedding model its stored vectors come from; None until it has any.
    embed_model: str | None = None


@dataclass(frozen=True, slots=True)
class ItemCounts:
    total: int
    archived: int  # archived or compacted: in the index
    pending_vectors: int
    reverted: int = 0
    tokens: int = 0  # summed token counts of every item


@dataclass(frozen=True, slots=True)
class TermPostings:
    """A conversation's items that contain one term: how many, and the first of them."""

    count: int  # every item of the conversation containing the term, in any state
    rows: tuple[int, ...]  # the store's row ids of up to the limit asked, oldest first


@dataclass(frozen=True, slots=True)
class PendingVector:
    """An item that has no vector for the current model yet."""

    item_id: int
    conversation_key: int
    seq: int
    text: str


@dataclass(frozen=True, slots=True)
class ConversationActivity:
    """A conversation and when it was last appended to (its creation, before any append)."""

    record: ConversationRecord
    last_active: float


@dataclass(frozen=True, slots=True)
class ArchivedRow:
    """An archived or compacted item, as retention judges it."""

    seq: int
    timestamp: float
    pinned: bool
    embedded: bool  # has a vector of the current model: the index holds it


@dataclass(frozen=True, slots=True)
class RemovedRows:
    count: int
    tokens: int


@dataclass(frozen=True, slots=True)
class StaleConversation:
    """A conversation whose stored vectors come from another model than the server's."""

    key: int
    namespace: str
    conversation_id: str
    model: str  # the model its vectors come from


class Store(HistoryStore, NamespaceStore, Protocol):
    """Everything here is durable once the call returns. Safe to call from several threads."""

    def close(self) -> None: ...

    def session(self, key: int) -> SessionState:
        """The conversation's session; the empty one when it never had one."""
        ...

    def put_session(self, key: int, session: SessionState, events: Sequence[Event]) -> None:
        """Replaces the conversation's session, with the events of the change."""
        ...

    def maintain(self) -> None:
        """Housekeeping that must not run on a request (SQLite: the WAL checkpoint)."""
        ...

    def create_conversation(
        self, namespace: str, conversation_id: str, settings: ConversationSettings, now: float
    ) -> ConversationRecord: ...

    def get_conversation(
        self, namespace: str, conversation_id: str
    ) -> ConversationRecord | None: ...

    def conversation_record(self, key: int) -> ConversationRecord | None: ...

    def list_conversations(
        self, namespace: str, after: str, limit: int
    ) -> list[ConversationRecord]: ...

    def conversation_keys(self, namespace: str) -> list[tuple[int, str]]: ...

    def update_settings(
        self, key: int, settings: ConversationSettings, token_limit: int
    ) -> None: ...

    def delete_conversation(self, key: int) -> int: ...

    def counts(self, key: int, model: str) -> ItemCounts: ...

    def stats(self, scope: Scope, model: str, after: tuple[str, str], limit: int) -> ScopeStats:
        """From one snapshot of the store: up to limit conversations of the scope after
        `after` (namespace, conversation id; ("", "") for the first), in that order, with
        their figures, the whole scope's figures, and the keys of all its conversations.
        Vectors are counted for model; index bytes are left at 0."""
        ...

    def clock_bounds(self, key: int) -> tuple[float | None, float | None]:
        """Timestamps of the conversation's oldest and newest items."""
        ...

    def find_idempotent(self, key: int, idempotency_keys: Sequence[str]) -> dict[str, Item]: ...

    def commit_append(
        self,
        key: int,
        items: Sequence[Item],
        idempotency_keys: Sequence[str | None],
        evicted: Sequence[int],
        token_limit: int,
        state: str,
        *,
        facts: Sequence[Fact] = (),
        edits: Sequence[ContextEdit] = (),
        events: Sequence[Event] = (),
        vectors: ItemVectors | None = None,
        appended_at: float | None = None,
    ) -> None:
        """Inserts items, archives the evicted seqs and records the items' facts, context
        edits, events and (when given) vectors, in one transaction; appended_at (None: not an
        append) is when the conversation was last appended to, which retention's inactivity
        is measured from."""
        ...

    def commit_compaction(
        self,
        key: int,
        marker: Item,
        record: CompactionRecord,
        edit: ContextEdit,
        evicted: Sequence[int],
        events: Sequence[Event],
    ) -> None:
        """Adds the marker, moves earlier window and archived items behind the compaction
        and starts the active context at the marker, in one transaction."""
        ...

    def set_flags(self, key: int, seq: int, flags: Flag) -> None: ...

    def get_items(self, key: int, seqs: Sequence[int]) -> dict[int, Item]: ...

    def file_paths(self, key: int, limit: int) -> list[str]:
        """Distinct file paths the conversation's items refer to (reverted ones aside), the
        most recently referenced first."""
        ...

    def list_items(
        self, key: int, after_seq: int, limit: int, states: Sequence[ItemState]
    ) -> list[Item]: ...

    def window_items(
        self, key: int, model: str
    ) -> list[tuple[Item, npt.NDArray[np.float32] | None]]:
        """Items in the window, in seq order, with their vectors where written."""
        ...

    def pending_vectors(self, model: str, limit: int, after_id: int = 0) -> list[PendingVector]:
        """Items without a vector for model, in id order, with ids above after_id."""
        ...

    def pending_vectors_of(self, model: str, key: int, limit: int) -> list[PendingVector]:
        """One conversation's items without a vector for model, newest first."""
        ...

    def put_vectors(self, model: str, rows: Sequence[tuple[int, int]], vectors: Vectors) -> None:
        """Stores one vector per (conversation key, seq); rows of deleted items are skipped."""
        ...

    def archived_vectors(self, key: int, model: str) -> tuple[npt.NDArray[np.int64], Vectors]: ...

    def archived_ids(self, key: int, model: str) -> npt.NDArray[np.int64]:
        """Seqs of archived items that have a vector: what the conversation's index must hold."""
        ...

    def vectors_for(
        self, key: int, seqs: Sequence[int], model: str
    ) -> dict[int, npt.NDArray[np.float32]]: ...

    def filtered_seqs(
        self, key: int, flt: ItemFilter, states: Sequence[ItemState], limit: int
    ) -> npt.NDArray[np.int64]:
        """Seqs of the newest items (up to limit) in these states that match the filter."""
        ...

    def term_postings(
        self, key: int, terms: Sequence[str], limit: int, counts: Mapping[str, int] | None = None
    ) -> dict[str, TermPostings]:
        """For each term, the conversation's items that contain it: how many (counts gives
        those the caller knows already), and the row ids of the first limit of them."""
        ...

    def conversation_activity(self, namespace: str | None) -> list[ConversationActivity]:
        """The conversations of a namespace (None: of all), by namespace and id, with when
        each was last appended to."""
        ...

    def last_active(self, key: int) -> float | None:
        """When the conversation was last appended to (None: no such conversation)."""
        ...

    def archived_rows(
        self, key: int, model: str, seqs: Sequence[int] | None = None
    ) -> list[ArchivedRow]:
        """The archived and compacted items (among seqs, when given), in seq order."""
        ...

    def remove_items(self, key: int, seqs: Sequence[int]) -> RemovedRows:
        """Deletes those of these items that are archived or compacted, with their full-text
        rows, vectors and facts, and counts them on the conversation (its seqs then have
        gaps), in one transaction."""
        ...

    def row_items(
        self,
        key: int,
        rows: Sequence[int],
        states: Sequence[ItemState],
        flt: ItemFilter | None = None,
    ) -> dict[int, tuple[int, int]]:
        """Of these rows (from term_postings), those in these states matching flt: their
        (seq, token count) by row id."""
        ...

    # ---- re-embedding after a change of model

    def stale_conversations(self, model: str, namespace: str | None) -> list[StaleConversation]:
        """Conversations whose vectors come from another model than model, of one namespace
        (None: every namespace), by namespace and id."""
        ...

    def unembedded_items(
        self, key: int, model: str, after_seq: int, limit: int
    ) -> list[PendingVector]:
        """One conversation's items after after_seq without a vector of model, in seq order,
        whatever model its other vectors come from."""
        ...

    def finish_reembed(self, key: int, model: str) -> int:
        """Drops the conversation's vectors of other models and records that its vectors come
        from model, in one transaction; returns how many vectors were dropped."""
        ...
