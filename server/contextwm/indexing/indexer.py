"""The background indexer: embeds appended items in batches and hands the vectors to the engine."""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Protocol

from contextwm.conversations.embedding_model import stale_model
from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.domain import deadlines
from contextwm.indexing.pacing import BUSY_SHARE, next_batch_size, pause_after
from contextwm.indexing.stats import EmbeddingStats
from contextwm.ports.embedder import Embedder, Vectors
from contextwm.ports.event_store import EventStore
from contextwm.ports.store_lifecycle import StoreLifecycle
from contextwm.ports.vector_claims import VectorClaims
from contextwm.ports.vector_store import PendingVector

log = logging.getLogger(__name__)

# How often the store's housekeeping (the WAL checkpoint) runs.
MAINTAIN_SECONDS = 1.0
# How often events older than the engine's retention are dropped.
PRUNE_SECONDS = 60.0
# A pause checks this often whether appends still keep the server busy.
PACE_SLICE_SECONDS = 0.1
# A periodic save skips indexes searched more recently than this; shutdown saves them all.
RESTED_SECONDS = 10.0
# How long a batch stays claimed by this server: far longer than a batch takes (about a
# second), so that a slow one is not taken over while it runs. A server that has not
# written its batch by then is taken to have died, and any server may claim the items.
LEASE_SECONDS = 60.0
# How often an idle indexer looks for pending items from the start rather than its cursor.
RESCAN_SECONDS = 30.0
# How long the indexer may stay behind (finding items to embed at every claim) before its
# batches are urgent: a backlog embedded at low priority beside busy processes would never
# drain. An agent's appends, embedded as they come, leave nothing behind.
BEHIND_SECONDS = 5.0
# A reader waiting for at most this many items embeds them itself, with its query, in one
# forward pass: an agent appends a turn and asks for its context at once, and a query pass
# of up to four texts costs little more than one (the query embedder's own batch).
READER_ITEMS = 3
# How long an idle indexer leaves a new append to a reader before it embeds it itself.
READER_GRACE_SECONDS = 0.05


class IndexerStore(VectorClaims, EventStore, StoreLifecycle, Protocol):
    """What the indexer's thread claims and tends: items awaiting a vector, old events to
    drop, and the store's housekeeping."""


def replica_id() -> str:
    """A name for this server process that no other sharing the store has: host, process
    and a random part (a pid comes back after a restart, or in another container)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Indexer:
    """One thread that turns pending items into vectors, oldest first.

    Appends return before their items are embedded (an embedding costs more than the 5 ms an
    acknowledgement may take); the store remembers which items still lack a vector, so after
    a crash the indexer simply carries on from there. While appends keep the server busy it
    embeds only busy_duty of the time, in batches of batch_size, unless a reader is waiting
    for vectors; a backlog left once they stop is embedded in larger batches
    (see indexing.pacing). Servers sharing a store claim each batch before embedding it, so
    each item is embedded once, and a dead server's claims are taken over after the lease.
    """

    def __init__(
        self,
        engine: ContextEngine,
        *,
        batch_size: int = 32,
        save_interval: float = 30.0,
        embedder: Embedder | None = None,
        urgent_embed: Callable[[Sequence[str]], Vectors] | None = None,
        busy_duty: float = 0.25,
        owner: str | None = None,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        """Args:
        batch_size: items per batch while appends keep the server busy, and of a waiting
            reader's conversation.
        embedder: embeds the batches (the same model as the engine's, perhaps in another
            process); the engine's own embedder when None.
        urgent_embed: embeds a batch as embedder does, ahead of its usual priority: for the
            batches a reader waits for, and once the indexer has been behind for
            BEHIND_SECONDS; embedder's own embed when None.
        busy_duty: the share of time spent embedding while appends keep the server busy
            (1 never holds back).
        owner: whose the claims are, stable across restarts of one replica (the data
            directory's replica name); a name of its own when None.
        lease_seconds: how long a claimed batch is left to this server.
        """
        self._engine = engine
        self._store: IndexerStore = engine.store
        self._embedder = embedder or engine.embedder
        self._urgent_embed = urgent_embed or self._embedder.embed
        self._behind_since: float | None = None  # since when every claim found items
        self._batch_size = batch_size
        self._save_interval = save_interval
        self._busy_duty = busy_duty
        self._owner = owner or replica_id()
        self._lease = lease_seconds
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._reader_waits = threading.Event()
        # Items are embedded in id order, so a cursor spares rescanning embedded rows.
        self._cursor = 0
        self._scanned_at = time.monotonic()  # when the cursor last went back to the start
        # Set by a deletion: SQLite reuses the highest ids once they are free, so items
        # appended after it may lie behind the cursor.
        self._rescan = threading.Event()
        # Items some thread of this server is embedding (by item id): the indexer's and
        # readers' (see embed_for_reader) are never the same, so none is applied twice.
        self._in_flight: set[int] = set()
        self._in_flight_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="contextwm-indexer", daemon=True)
        self.stats = EmbeddingStats()
        engine.appends.on_append = self._wake.set
        engine.vector_waiters.on_wait = self._reader_waits.set
        engine.vectors.embed_for_reader = self.embed_for_reader
        engine.on_delete = self._rescan.set

    def start(self) -> None:
        # Claims of this owner are a dead predecessor's (a server restarted on its data
        # directory): free them now rather than when their lease runs out.
        self._store.release_claims(self._owner)
        self._thread.start()

    def stop(self) -> None:
        """Stops after the batch in hand and saves changed indexes."""
        self._stop.set()
        self._wake.set()
        self._reader_waits.set()
        self._thread.join()
        self._engine.save_indexes()

    def run_once(self, size: int | None = None) -> int:
        """Embeds one batch of pending items, those of conversations that readers wait for
        first; returns how many. Also used by tests.

        Args:
            size: items in a batch of the backlog (batch_size when None); what readers wait
                for goes in batches of batch_size, the sooner to be answered.
        """
        engine = self._engine
        if self._rescan.is_set():
            self._rescan.clear()
            self._cursor = 0
        with self._in_flight_lock:
            pending = self._take(self._waited_for())
        urgent = bool(pending)
        if not pending:
            with self._in_flight_lock:
                claimed = self._store.claim_pending(
                    engine.embedder.model_name,
                    size or self._batch_size,
                    self._cursor,
                    self._owner,
                    self._lease,
                )
                pending = self._take(claimed)
            urgent = self._behind(bool(claimed))
            if not claimed:
                if self._cursor and time.monotonic() - self._scanned_at > RESCAN_SECONDS:
                    # An item's id is given when its append begins, so one committed after a
                    # later-numbered item (another conversation's append, on a store several
                    # servers share) can fall behind the cursor: look from the start again.
                    self._scanned_at = time.monotonic()
                    self._cursor = 0
                return 0
            # A batch may hold only claims that ran out behind the cursor: it stays put.
            # (Items a reader is embedding are passed: their reader stores them.)
            self._cursor = max(self._cursor, claimed[-1].item_id)
            if not pending:
                return 0
        try:
            self._embed(pending, urgent)
        except BaseException:
            self._release(pending)
            raise
        finally:
            self._done(pending)
        return len(pending)

    def embed_for_reader(self, rt: ConversationRuntime, texts: Sequence[str]) -> Vectors | None:
        """The texts' vectors, computed on the caller's thread in one pass with the items of
        rt that are still pending, when there are at most READER_ITEMS of them and this
        server can claim some (the others are in another batch); their vectors are stored
        and placed before it returns. None when it took none: the caller waits for the
        indexer as before. With a query embedder of its own, the texts are its, in a pass
        after the items'.
        """
        engine = self._engine
        model = engine.embedder.model_name
        pending = rt.pending
        if not 0 < pending <= READER_ITEMS or stale_model(rt, model) is not None:
            return None
        deadlines.check("embedding the items appended before the query")
        with self._in_flight_lock:
            # No more than are pending: the store looks from the newest item back until it
            # has found as many as asked for, through the whole conversation if need be.
            claimed = self._take(
                self._store.claim_pending_of(model, rt.key, pending, self._owner, self._lease)
            )
        if not claimed:
            return None
        together = engine.query_embedder is engine.embedder
        try:
            began = time.perf_counter()
            vectors = engine.embedder.embed(
                [*(p.text for p in claimed), *(texts if together else ())]
            )
            self.stats.record(len(claimed), time.perf_counter() - began)
            engine.vectors.apply(rt.key, [p.seq for p in claimed], vectors[: len(claimed)])
        except BaseException:
            self._release(claimed)
            raise
        finally:
            self._done(claimed)
        return vectors[len(claimed) :] if together else engine.query_embedder.embed(texts)

    def _take(self, pending: Sequence[PendingVector]) -> list[PendingVector]:
        """Those of pending that no thread of this server is embedding, marked as the
        caller's (_in_flight_lock held, since before pending was read: an item another
        thread stored meanwhile is no longer pending, or still marked)."""
        taken = [p for p in pending if p.item_id not in self._in_flight]
        self._in_flight.update(p.item_id for p in taken)
        return taken

    def _done(self, pending: Sequence[PendingVector]) -> None:
        """The caller's items are stored, or left pending for the next batch."""
        with self._in_flight_lock:
            self._in_flight.difference_update(p.item_id for p in pending)

    def _behind(self, found: bool) -> bool:
        """Whether pending items have been found at every claim for BEHIND_SECONDS, given
        whether this claim found any."""
        if not found:
            self._behind_since = None
            return False
        now = time.monotonic()
        if self._behind_since is None:
            self._behind_since = now
        return now - self._behind_since >= BEHIND_SECONDS

    def _embed(self, pending: Sequence[PendingVector], urgent: bool) -> None:
        """Embeds a claimed batch and hands its vectors to the engine."""
        engine = self._engine
        began = time.perf_counter()
        embed = self._urgent_embed if urgent else self._embedder.embed
        vectors = embed([p.text for p in pending])
        # Counted before the vectors are applied: once a reader sees its items embedded, the
        # metrics count them too.
        self.stats.record(len(pending), time.perf_counter() - began)
        by_conversation: dict[int, list[int]] = defaultdict(list)
        for row, p in enumerate(pending):
            by_conversation[p.conversation_key].append(row)
        for key, rows in by_conversation.items():
            engine.vectors.apply(key, [pending[r].seq for r in rows], vectors[rows])

    def _release(self, pending: Sequence[PendingVector]) -> None:
        """Releases a batch that failed, for whichever server claims next; those of its
        items already written are no longer claimed, and are left alone."""
        try:
            self._store.release_claims(self._owner, [p.item_id for p in pending])
        except Exception:
            log.warning("releasing a failed batch's claims failed; their lease frees them")

    def _waited_for(self) -> list[PendingVector]:
        """Pending items of the conversations readers wait for, so that a reader waits for its
        own items rather than for a backlog of others' (the cursor skips them later: the
        store knows they have vectors)."""
        engine = self._engine
        out: list[PendingVector] = []
        for key in engine.vector_waiters.conversations():
            left = self._batch_size - len(out)
            if left <= 0:
                break
            out += self._store.claim_pending_of(
                engine.embedder.model_name, key, left, self._owner, self._lease
            )
        return out

    def prune_events(self) -> int:
        """Drops events older than the engine's retention; returns how many."""
        engine = self._engine
        return self._store.prune_events(engine.clock() - engine.event_retention_seconds)

    def _run(self) -> None:
        last_save = last_maintain = last_prune = time.monotonic()
        size = self._batch_size  # small until a batch shows that appends have stopped
        while not self._stop.is_set():
            self._wake.clear()  # before the batch: a wake-up during it is not lost
            started, appends_before = time.monotonic(), self._engine.appends.busy.seconds
            try:
                done = self.run_once(size)
            except Exception:
                # The batch stays pending; start over from the first pending item after a pause.
                log.exception("indexing batch failed; retrying")
                self._cursor = 0
                done = 0
                self._stop.wait(1.0)
            try:
                if time.monotonic() - last_maintain > MAINTAIN_SECONDS:
                    last_maintain = time.monotonic()
                    self._store.maintain()
                    # Here: this thread holds no conversation's lock (see unload_idle).
                    self._engine.runtimes.unload_idle()
                if time.monotonic() - last_prune > PRUNE_SECONDS:
                    last_prune = time.monotonic()
                    self.prune_events()
                if time.monotonic() - last_save > self._save_interval:
                    last_save = last_maintain = last_prune = time.monotonic()
                    self._engine.save_indexes(rested=RESTED_SECONDS)
            except Exception:
                # A full disk, say: embedding goes on, and the chore is tried again later.
                log.exception("indexer housekeeping failed; trying again later")
            if done == 0:
                size = self._batch_size  # the next appends may be the start of a burst
                if self._wake.wait(timeout=MAINTAIN_SECONDS):
                    self._leave_to_reader()
            else:
                batch_seconds = time.monotonic() - started
                append_seconds = self._engine.appends.busy.seconds - appends_before
                size = next_batch_size(self._batch_size, batch_seconds, append_seconds)
                self.pace(batch_seconds, append_seconds)

    def _leave_to_reader(self) -> None:
        """After an append wakes an idle indexer: a short pause, in which an agent's next
        read, which usually follows at once, embeds the turn with its query (see
        embed_for_reader) in the time this thread would take to start on it. Ends early
        when a reader waits for vectors (it found too many to embed itself) or on stop."""
        self._reader_waits.clear()
        if not self._engine.vector_waiters.any:  # checked after clear(): none is missed
            self._reader_waits.wait(READER_GRACE_SECONDS)

    def pace(self, batch_seconds: float, append_seconds: float) -> float:
        """Pauses after a batch as pause_after says, ending early when the appends stop
        keeping the server busy, a reader starts waiting for vectors, or the indexer stops;
        returns the seconds paused."""
        began = time.monotonic()
        deadline = began + pause_after(batch_seconds, append_seconds, self._busy_duty)
        busy, waiters = self._engine.appends.busy, self._engine.vector_waiters
        while not self._stop.is_set():
            self._reader_waits.clear()
            left = deadline - time.monotonic()
            if waiters.any or left <= 0:  # checked after clear(): a new reader is never missed
                break
            before = busy.seconds
            if self._reader_waits.wait(min(left, PACE_SLICE_SECONDS)):
                continue
            if busy.seconds - before < BUSY_SHARE * PACE_SLICE_SECONDS:
                break  # the burst is over
        return time.monotonic() - began
