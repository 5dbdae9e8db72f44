"""An embedder for tests that wraps a real one and records every batch it is asked to embed."""

from __future__ import annotations

from collections.abc import Sequence

from contextwm.ports.embedder import Embedder, Vectors


class RecordingEmbedder:
    """The real model, recording every batch it embeds: its size, and its texts."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.batches: list[int] = []
        self.calls: list[list[str]] = []

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def texts(self) -> int:
        """Texts embedded so far."""
        return sum(self.batches)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(len(texts))
        self.calls.append(list(texts))
        return self.inner.embed(texts)
