"""Re-embeds stale conversations: every item embedded again with the server's model in
batches, stored as it goes (so a stopped run resumes where it stopped), then, atomically
under the conversation's lock, what was appended meanwhile, the other model's vectors dropped,
the conversation marked current and its index rebuilt."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Protocol

from contextwm.conversations.embedding_model import stale_model
from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.domain.errors import FailedPrecondition, NotFound
from contextwm.domain.scope import Scope
from contextwm.ports.conversation_store import ConversationStore
from contextwm.ports.embedder import Embedder, Vectors
from contextwm.ports.exclusive_work import ExclusiveWork
from contextwm.ports.reembed_store import ReembedStore, StaleConversation
from contextwm.ports.vector_index import VectorIndexFiles
from contextwm.ports.vector_store import PendingVector, VectorStore
from contextwm.reembedding.progress import ReembedProgress, Tally
from contextwm.reembedding.runs import RESUMES, Run, Runs

log = logging.getLogger(__name__)

# Every item after seq 0: the whole conversation.
FROM_START = 0


class ReembedderStore(ConversationStore, VectorStore, ReembedStore, ExclusiveWork, Protocol):
    """What a run reads and writes: stale conversations, their items without a vector of the
    model, the new vectors, and the switch to the model; and the run's place among the
    servers sharing the store."""


class Reembedder:
    """Thread-safe; one run at a time (see runs.Runs)."""

    def __init__(
        self,
        engine: ContextEngine,
        embedder: Embedder,
        *,
        batch_size: int,
        index_files_of: Callable[[str], VectorIndexFiles] | None = None,
    ) -> None:
        """Args:
        embedder: embeds the batches: the indexer's (a child process when configured), of
            the engine's model.
        index_files_of: another model's index files, to delete a re-embedded conversation's
            file there (its vectors are dropped); None leaves them.
        """
        self._engine = engine
        self._store: ReembedderStore = engine.store
        self._embedder = embedder
        self._batch_size = batch_size
        self._index_files_of = index_files_of
        self._model = engine.embedder.model_name
        self._runs = Runs()

    def run(self, scope: Scope, cancelled: threading.Event) -> Iterator[ReembedProgress]:
        """Re-embeds the stale conversations of scope, reporting progress: the plan first,
        then after every batch and conversation, and a last report with finished set. Stops
        quietly after the batch in hand once cancelled is set.

        Raises:
            NotFound: the scope names a conversation that does not exist.
            FailedPrecondition: another run is in progress (here or on another server
                sharing the store).
            Unavailable: the server is shutting down (the run stops after its batch).
        """
        run = Run(scope, cancelled)
        with self._runs.running(run), self._store.exclusively("reembed") as mine:
            if not mine:
                raise FailedPrecondition(
                    "a re-embed runs on another server sharing the store; wait for it to"
                    f" finish, or cancel it there: {RESUMES}"
                )
            stale = self._stale(scope)
            tally = run.tally = Tally(self._model, len(stale))
            planned: list[tuple[StaleConversation, ConversationRuntime, int]] = []
            for conversation in stale:
                rt = self._runtime(conversation)
                if rt is None:
                    tally.conversations_total -= 1
                    continue
                counts = self._store.counts(rt.key, self._model)
                tally.plan(counts.pending_vectors, counts.total - counts.pending_vectors)
                planned.append((conversation, rt, counts.pending_vectors))
            if planned:  # else the last report is the first
                yield tally.report()
            for conversation, rt, missing in planned:
                tally.start(conversation.namespace, conversation.conversation_id, missing)
                for embedded in self._walk(rt):
                    tally.embedded(embedded)
                    yield tally.report()
                    if run.should_stop():
                        self._stopped(tally)
                        return
                finished = self._finish(rt, conversation.model)
                if finished is None:
                    tally.dropped()
                else:
                    tally.embedded(finished)
                tally.conversations_done += 1
                yield tally.report()
                if run.should_stop():
                    self._stopped(tally)
                    return
            log.info(
                "re-embedded %s: %d of %d conversations done, %d items embedded with %s",
                scope.describe(),
                tally.conversations_done,
                tally.conversations_total,
                tally.items_done,
                self._model,
            )
            yield tally.report(finished=True)

    @staticmethod
    def _stopped(tally: Tally) -> None:
        log.info(
            "re-embed cancelled after %d of %d items; a new run resumes from there",
            tally.items_done,
            tally.items_total,
        )

    def stop(self) -> None:
        """Shutdown: refuses new runs and waits for the running one to stop after its batch."""
        self._runs.stop()

    def _stale(self, scope: Scope) -> list[StaleConversation]:
        """The conversations of scope whose vectors come from another model.

        Raises:
            NotFound: a named conversation that does not exist.
        """
        if scope.namespace is None or scope.conversation_id is None:
            return self._store.stale_conversations(self._model, scope.namespace)
        rt = self._engine.runtime(scope.namespace, scope.conversation_id)
        old = stale_model(rt, self._model)
        if old is None:
            return []
        return [StaleConversation(rt.key, scope.namespace, scope.conversation_id, old)]

    def _runtime(self, conversation: StaleConversation) -> ConversationRuntime | None:
        """The conversation's runtime, None when it was deleted since it was listed."""
        try:
            rt = self._engine.runtime(conversation.namespace, conversation.conversation_id)
        except NotFound:
            return None
        return rt if rt.key == conversation.key else None

    def _walk(self, rt: ConversationRuntime) -> Iterator[int]:
        """Embeds the conversation's items that lack a vector of the model, a batch at a time,
        without its lock while embedding; yields each batch's size once stored. Items
        appended meanwhile come later in seq order, so the walk reaches them too."""
        store = self._store
        after = FROM_START
        while batch := store.unembedded_items(rt.key, self._model, after, self._batch_size):
            vectors = self._embedder.embed([p.text for p in batch])
            with rt.lock:
                if rt.deleted:
                    return
                self._put(rt, batch, vectors)
            after = batch[-1].seq
            yield len(batch)

    def _finish(self, rt: ConversationRuntime, old_model: str) -> int | None:
        """Under the conversation's lock, as one unit of work: embeds what the walk did not
        reach (appended since), drops the other model's vectors, marks the conversation
        current and rebuilds its index. Returns how many items it embedded; None when the
        conversation was deleted meanwhile."""
        engine = self._engine
        try:
            with engine.work.change(rt) as change:
                missing = self._store.unembedded_items(rt.key, self._model, FROM_START, rt.total)
                for start in range(0, len(missing), self._batch_size):
                    batch = missing[start : start + self._batch_size]
                    self._put(rt, batch, self._embedder.embed([p.text for p in batch]))
                change.commit(lambda _: self._store.finish_reembed(rt.key, self._model))
                record = self._store.conversation_record(rt.key)
                if record is None:
                    raise NotFound(f"conversation {rt.record.conversation_id!r} was deleted")
                engine.runtimes.fill(rt, record)  # window vectors, pending count, model
                engine.ensure_index(rt)
        except NotFound:
            return None
        if self._index_files_of is not None:
            self._index_files_of(old_model).delete(rt.key)  # made of the dropped vectors
        return len(missing)

    def _put(self, rt: ConversationRuntime, batch: list[PendingVector], vectors: Vectors) -> None:
        """Stores a batch's vectors (rt.lock held); they count no longer as pending."""
        with self._engine.runtimes.held(rt):
            stored = self._store.put_vectors(self._model, [(rt.key, p.seq) for p in batch], vectors)
        # Items erased since the batch was read: their vectors reach no index.
        kept = [n for n, p in enumerate(batch) if (rt.key, p.seq) in stored]
        self._engine.vectors.stored(rt, [batch[n].seq for n in kept], vectors[kept])
        rt.pending = max(0, rt.pending - len(kept))
