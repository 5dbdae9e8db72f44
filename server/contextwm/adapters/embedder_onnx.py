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
from contextwm.adapters.query_coalescing import QUERY_BATCH, QueryCoalescer
from contextwm.ports.embedder import Vectors

# Threads per forward pass. Two nearly halve a query's time on a quiet machine, and unlike an
# OpenMP team they do not stall when the other core is busy: they do not spin, so a waiting
# thread gives its core back.
THREADS = 2


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
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        quantized: bool = False,
        batch_size: int = 64,
        threads: int = THREADS,
        cache: Path | None = None,
    ) -> None:
        """Loads (exporting first, if needed) the model.

        Args:
            model_path: a sentence-transformers model directory; the bundled MiniLM by default.
            quantized: int8 matrix multiplies: faster, close to but not the same vectors.
            batch_size: texts per forward pass when embedding many.
            threads: threads per forward pass (at most the machine's cores are used).
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
        # Queries and batches have a session (and threads) each, so that a query never
        # queues behind a batch's pass; the batch one is loaded once a batch comes, which
        # in a server whose indexer embeds in a child process is never.
        self._query_session = self._session()
        self._batch_session: Any = None
        tokenizer: Any = Tokenizer.from_file(str(path / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=max_length)
        tokenizer.no_padding()  # each pass is padded to its own longest text
        self._tokenizer = tokenizer
        self._batch_size = batch_size
        self._dim = int(pooling["word_embedding_dimension"])
        base = "all-MiniLM-L6-v2" if model_path is None else path.name
        self._name = f"{base}-int8" if quantized else base
        self._batch_lock = threading.Lock()
        self._queries = QueryCoalescer()

    def _session(self) -> Any:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        # A spinning thread holds its core while it waits: a busy neighbour's, too.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return onnxruntime.InferenceSession(
            str(self._file), options, providers=["CPUExecutionProvider"]
        )

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        if len(texts) <= QUERY_BATCH:
            return self._queries.embed(texts, self._encode_query)
        with self._batch_lock:
            return self._encode_many(texts)

    def _encode_query(self, texts: Sequence[str]) -> Vectors:
        return self._encode(texts, self._query_session)

    def _encode_many(self, texts: Sequence[str]) -> Vectors:
        if self._batch_session is None:
            self._batch_session = self._session()
        return self._encode(texts, self._batch_session)

    def _encode(self, texts: Sequence[str], session: Any) -> Vectors:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for p in self.passes(texts, self._batch_size):
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

    def run(self, p: Pass, session: Any = None) -> Vectors:
        """One pass's unit vectors, in the order of p.rows; on the query session unless
        another is given (a session may run passes on several threads at once)."""
        feeds = dict(zip(INPUTS, (p.ids, p.mask, p.types), strict=True))
        hidden = (session or self._query_session).run(None, feeds)[0]
        weights = p.mask[..., None].astype(np.float32)
        pooled: Vectors = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled
