"""A deterministic embedder for fast unit tests of pure logic: hashed bag of words."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from contextwm.ports.embedder import Vectors

_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Texts sharing words get similar vectors; no model, no randomness."""

    def __init__(self, dimension: int = 64) -> None:
        self._dim = dimension

    @property
    def model_name(self) -> str:
        return f"hashing-{self._dim}"

    @property
    def dimension(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                out[row, int.from_bytes(digest, "little") % self._dim] += 1.0
            norm = float(np.linalg.norm(out[row]))
            if norm == 0.0:
                out[row, 0] = 1.0
            else:
                out[row] /= norm
        return out
