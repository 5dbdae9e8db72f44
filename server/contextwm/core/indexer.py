"""The background indexer: embeds appended items in batches and hands the vectors to the engine."""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict

from contextwm.core.engine import ContextEngine
from contextwm.ports.embedder import Embedder

log = logging.getLogger(__name__)

# How often the store's housekeeping (the WAL checkpoint) runs.
MAINTAIN_SECONDS = 1.0
# How often events older than the engine's retention are dropped.
PRUNE_SECONDS = 60.0
# A periodic save skips indexes searched more recently than this; shutdown saves them all.
RESTED_SECONDS = 10.0


class Indexer:
    """One thread that turns pending items into vectors, oldest first.

    Appends return before their items are embedded (an embedding costs more than the 5 ms an
    acknowledgement may take); the store remembers which items still lack a vector, so after
    a crash the indexer simply carries on from there.
    """

    def __init__(
        self,
        engine: ContextEngine,
        *,
        batch_size: int = 32,
        save_interval: float = 30.0,
        embedder: Embedder | None = None,
    ) -> None:
        """Args:
        embedder: embeds the batches (the same model as the engine's, perhaps in another
            process); the engine's own embedder when None.
        """
        self._engine = engine
        self._embedder = embedder or engine.embedder
        self._batch_size = batch_size
        self._save_interval = save_interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        # Items are embedded in id order, so a cursor spares rescanning embedded rows.
        self._cursor = 0
        self._thread = threading.Thread(target=self._run, name="contextwm-indexer", daemon=True)
        engine.on_append = self._wake.set

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stops after the batch in hand and saves changed indexes."""
        self._stop.set()
        self._wake.set()
        self._thread.join()
        self._engine.save_indexes()

    def run_once(self) -> int:
        """Embeds one batch of pending items; returns how many. Also used by tests."""
        engine = self._engine
        pending = engine.store.pending_vectors(
            engine.embedder.model_name, self._batch_size, self._cursor
        )
        if not pending:
            return 0
        self._cursor = pending[-1].item_id
        vectors = self._embedder.embed([p.text for p in pending])
        by_conversation: dict[int, list[int]] = defaultdict(list)
        for row, p in enumerate(pending):
            by_conversation[p.conversation_key].append(row)
        for key, rows in by_conversation.items():
            engine.apply_vectors(key, [pending[r].seq for r in rows], vectors[rows])
        return len(pending)

    def prune_events(self) -> int:
        """Drops events older than the engine's retention; returns how many."""
        engine = self._engine
        return engine.store.prune_events(engine.clock() - engine.event_retention_seconds)

    def _run(self) -> None:
        last_save = last_maintain = last_prune = time.monotonic()
        while not self._stop.is_set():
            self._wake.clear()  # before the batch: a wake-up during it is not lost
            try:
                done = self.run_once()
            except Exception:
                # The batch stays pending; start over from the first pending item after a pause.
                log.exception("indexing batch failed; retrying")
                self._cursor = 0
                done = 0
                self._stop.wait(1.0)
            if time.monotonic() - last_maintain > MAINTAIN_SECONDS:
                self._engine.store.maintain()
                last_maintain = time.monotonic()
            if time.monotonic() - last_prune > PRUNE_SECONDS:
                self.prune_events()
                last_prune = time.monotonic()
            if time.monotonic() - last_save > self._save_interval:
                self._engine.save_indexes(rested=RESTED_SECONDS)
                last_save = last_maintain = last_prune = time.monotonic()
            if done == 0:
                self._wake.wait(timeout=MAINTAIN_SECONDS)
