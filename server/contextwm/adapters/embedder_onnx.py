"""all-MiniLM-L6-v2 on ONNX Runtime: the bundled weights, exported once (see onnx_export)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from contextwm.adapters.embedder_st import bundled_model_path
from contextwm.adapters.onnx_export import INPUTS, exported_model
from contextwm.adapters.priority_pool import PriorityPool
from contextwm.adapters.query_coalescing import QUERY_BATCH, QueryCoalescer
from contextwm.ports.embedder import Vectors

# Threads per query's forward pass, and batch threads. Two nearly halve a query's time on a
# quiet machine, and unlike an OpenMP team they do not stall when the other core is busy:
# they do not spin, so a waiting thread gives its core back.
THREADS = 2
# Texts per forward pass of a batch (see OnnxEmbedder).
PASS_TEXTS = 2


@dataclass(frozen=True, slots=True)
class Pass:
    """One forward pass's inputs: rows are the positions of its texts in the call."""

    rows: list[int]
    ids: npt.NDArray[np.int64]
    types: npt.NDArray[np.int64]
    mask: npt.NDArray[np.int64]


class OnnxEmbedder:
    """An Embedder running the bundled MiniLM on ONNX Runtime; never touches the network.

    The vectors are those of sentence-transformers' encode (tested); the int8 variant's are
    not, so it has a model name of its own and a separate index.

    A query (up to QUERY_BATCH texts) runs on its own session, on THREADS threads. A batch
    runs in passes of PASS_TEXTS texts, each on a session of one thread, taken by THREADS
    threads of a PriorityPool as they free up: without the wake-ups of a non-spinning team
    at every operator, with little padding (texts go by length), and with no thread waiting
    for another that a busy core holds back. Measured quiet, batches of 32 and 128: 188 and
    195 LoCoMo turns/s in passes of 2 (171-191 in 4, 138-182 in 8, 97-158 in 16) against 96
    and 117 on one session of two threads; 68 and 73 against 36 and 52 with half of them
    LongMemEval turns (four times as long).
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        quantized: bool = False,
        threads: int = THREADS,
        niceness: int = 0,
        cache: Path | None = None,
    ) -> None:
        """Loads (exporting first, if needed) the model.

        Args:
            model_path: a sentence-transformers model directory; the bundled MiniLM by default.
            quantized: int8 matrix multiplies: faster, close to but not the same vectors.
            threads: threads per query, and batch threads (at most the machine's cores).
            niceness: how much lower than the process's the batch threads' priority is (an
                urgent batch also runs on a thread at the process's own; see embed_batch).
            cache: where the exported file is kept; see onnx_export.cache_dir.
        """
        from tokenizers import Tokenizer

        path = model_path or bundled_model_path()
        pooling = json.loads((path / "1_Pooling" / "config.json").read_text())
        if not pooling.get("pooling_mode_mean_tokens"):
            raise RuntimeError(f"model at {path} is not mean-pooled: {pooling}")
        max_length = int(
            json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"]
        )
        self._file = exported_model(path, quantized=quantized, cache=cache)
        self._threads = max(1, min(threads, os.cpu_count() or 1))
        self._niceness = niceness
        # Queries and batches have sessions (and threads) of their own, so that a query never
        # queues behind a batch's pass. Each is loaded when first needed: a server whose
        # indexer embeds in a child process embeds no batch, and the child no query.
        self._sessions: dict[int, Any] = {}
        self._pool: PriorityPool | None = None
        self._loading = threading.Lock()
        tokenizer: Any = Tokenizer.from_file(str(path / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=max_length)
        tokenizer.no_padding()  # each pass is padded to its own longest text
        self._tokenizer = tokenizer
        self._dim = int(pooling["word_embedding_dimension"])
        base = "all-MiniLM-L6-v2" if model_path is None else path.name
        self._name = f"{base}-int8" if quantized else base
        self._queries = QueryCoalescer()

    def _session(self, threads: int) -> Any:
        """The session whose passes run on `threads` threads, loaded at first use."""
        with self._loading:
            session = self._sessions.get(threads)
            if session is None:
                import onnxruntime

                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                # A spinning thread holds its core while it waits: a busy neighbour's, too.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                session = onnxruntime.InferenceSession(
                    str(self._file), options, providers=["CPUExecutionProvider"]
                )
                self._sessions[threads] = session
            return session

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        if len(texts) <= QUERY_BATCH:
            return self._queries.embed(texts, self._encode_query)
        return self.embed_batch(texts)

    def embed_batch(self, texts: Sequence[str], *, urgent: bool = False) -> Vectors:
        """Embeds texts as a batch: on the pool's low-priority threads, and on its thread at
        full priority too when urgent."""
        with self._loading:
            if self._pool is None:
                self._pool = PriorityPool(
                    threads=self._threads, niceness=self._niceness, name="contextwm-embed"
                )
            pool = self._pool
        session = self._session(1)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        passes = self.passes(texts, PASS_TEXTS)
        for p, vectors in zip(
            passes, pool.map(lambda p: self.run(p, session), passes, urgent=urgent), strict=True
        ):
            out[p.rows] = vectors
        return out

    def _encode_query(self, texts: Sequence[str]) -> Vectors:
        session = self._session(self._threads)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for p in self.passes(texts, QUERY_BATCH):
            out[p.rows] = self.run(p, session)
        return out

    def passes(self, texts: Sequence[str], size: int) -> list[Pass]:
        """The forward passes that embed texts, of up to size texts each: sorted by length,
        so that each pass pads little (padding is wasted compute)."""
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encodings]
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        out: list[Pass] = []
        for start in range(0, len(order), size):
            rows = order[start : start + size]
            width = lengths[rows[-1]]
            ids = np.zeros((len(rows), width), dtype=np.int64)
            types = np.zeros_like(ids)
            mask = np.zeros_like(ids)
            for row, index in enumerate(rows):
                encoding, length = encodings[index], lengths[index]
                ids[row, :length] = encoding.ids
                types[row, :length] = encoding.type_ids
                mask[row, :length] = 1
            out.append(Pass(rows, ids, types, mask))
        return out

    @staticmethod
    def run(p: Pass, session: Any) -> Vectors:
        """One pass's unit vectors, in the order of p.rows (a session may run passes on
        several threads at once)."""
        feeds = dict(zip(INPUTS, (p.ids, p.mask, p.types), strict=True))
        hidden = session.run(None, feeds)[0]
        weights = p.mask[..., None].astype(np.float32)
        pooled: Vectors = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled
