"""The embedder the `embedder` setting names (settings.EMBEDDERS)."""

from __future__ import annotations

from contextwm.adapters.main_thread import MainThread
from contextwm.ports.embedder import Embedder


def make_embedder(kind: str, main_thread: MainThread | None = None) -> Embedder:
    """The bundled MiniLM on ONNX Runtime ("minilm"), the same in int8 ("minilm-int8") or on
    PyTorch ("minilm-torch", embedding queries on main_thread, when given), or a hashing
    stand-in for tests ("hashing"). Loaded here, so that the indexer's child process imports
    no more than its model needs."""
    if kind == "hashing":
        from contextwm.adapters.embedder_fake import HashingEmbedder

        return HashingEmbedder()
    if kind == "minilm-torch":
        from contextwm.adapters.embedder_st import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(main_thread=main_thread)
    from contextwm.adapters.embedder_onnx import OnnxEmbedder

    return OnnxEmbedder(quantized=kind == "minilm-int8")
