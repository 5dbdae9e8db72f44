"""Concurrent small embedding calls folded into one forward pass."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from contextwm.ports.embedder import Vectors

# Calls with at most this many texts are queries: coalesced, and never behind a batch.
QUERY_BATCH = 4


class _Waiting:
    """A small embed call waiting to be coalesced; vectors is set by whoever embeds it."""

    __slots__ = ("error", "texts", "vectors")

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = texts
        self.vectors: Vectors | None = None
        self.error: BaseException | None = None


class QueryCoalescer:
    """Whoever gets the lock embeds every call waiting at that moment in one batch; the
    others find their vectors ready. Under concurrent GetContext calls one pass of a few
    queries costs little more than one query."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[_Waiting] = []
        self._waiting_lock = threading.Lock()

    def embed(self, texts: Sequence[str], encode: Callable[[Sequence[str]], Vectors]) -> Vectors:
        """texts' vectors, computed by encode alone or together with other waiting calls."""
        waiting = _Waiting(texts)
        with self._waiting_lock:
            self._waiting.append(waiting)
        with self._lock:
            if waiting.vectors is None and waiting.error is None:
                with self._waiting_lock:
                    batch, self._waiting = self._waiting, []
                try:
                    vectors = encode([t for w in batch for t in w.texts])
                except BaseException as exc:  # every caller in the batch sees the failure
                    for w in batch:
                        w.error = exc
                    raise
                start = 0
                for w in batch:
                    w.vectors = vectors[start : start + len(w.texts)]
                    start += len(w.texts)
        if waiting.error is not None:
            raise waiting.error
        assert waiting.vectors is not None
        return waiting.vectors
