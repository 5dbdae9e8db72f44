"""Tests for the default embedder, MiniLM on ONNX Runtime: its vectors are PyTorch's (so
nothing needs re-embedding), in input order, alone or batched, from any thread; the export
is made once and shared."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from contextwm.adapters import embedder_onnx
from contextwm.adapters.embedder_onnx import OnnxEmbedder
from contextwm.adapters.embedder_st import SentenceTransformerEmbedder, bundled_model_path
from contextwm.adapters.onnx_export import exported_model

TOPICS = ["billing", "the boiler", "kestrel_sync.py", "Grafana alerts", "my sister's move"]
VERBS = ["failed after", "was fixed by", "depends on", "is unrelated to", "came up during"]
# A fixed set: short and long, code, unicode, empty, and past the 256-piece window.
FIXED = [
    "",
    "hi",
    "<|endoftext|> é 🙂 中文",
    "def f(x):\n    return {'a': [x, None]}  # noqa",
    " ".join(f"token{n} alpha-beta/gamma" for n in range(400)),
    "Traceback (most recent call last):\n" + "  File 'x.py', line 1, in f\n" * 200,
] + [
    f"{a} {v} {b}, said turn {n}"
    for n, (a, v, b) in enumerate(
        (a, v, b) for a in TOPICS for v in VERBS for b in TOPICS if a != b
    )
]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1))


def test_vectors_are_the_torch_models(
    embedder: OnnxEmbedder, torch_embedder: SentenceTransformerEmbedder
) -> None:
    assert len(FIXED) > 100
    onnx = embedder.embed(FIXED)
    reference = torch_embedder.reference_embed(FIXED)
    assert onnx.shape == reference.shape == (len(FIXED), 384) and onnx.dtype == np.float32
    assert float(cosines(onnx, reference).min()) >= 0.99999
    np.testing.assert_allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    assert (embedder.model_name, embedder.dimension) == (
        torch_embedder.model_name,
        torch_embedder.dimension,
    )


def test_rows_come_back_in_input_order_alone_or_batched(
    embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [FIXED[5], FIXED[1], FIXED[40], FIXED[4], FIXED[2]]  # unsorted lengths
    together = embedder.embed(texts)
    monkeypatch.setattr(embedder_onnx, "PASS_TEXTS", 2)
    for n, text in enumerate(texts):
        alone = embedder.embed([text])[0]
        assert float(alone @ together[n]) >= 0.99999, n
    np.testing.assert_allclose(embedder.embed(texts), together, atol=1e-5)


def test_empty_input(embedder: OnnxEmbedder) -> None:
    assert embedder.embed([]).shape == (0, 384)


def test_concurrent_queries_from_worker_threads_share_passes(embedder: OnnxEmbedder) -> None:
    texts = [f"question number {n} about the deployment" for n in range(24)]
    calls: list[int] = []
    real = embedder._encode_query

    def counting(batch: Sequence[str]) -> np.ndarray:
        calls.append(len(batch))
        return real(batch)

    embedder._encode_query = counting  # type: ignore[method-assign,assignment]
    results: dict[int, np.ndarray] = {}
    start = threading.Barrier(len(texts))

    def ask(n: int) -> None:
        start.wait()
        results[n] = embedder.embed([texts[n]])[0]

    try:
        threads = [threading.Thread(target=ask, args=(n,)) for n in range(len(texts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        del embedder._encode_query
    assert sum(calls) == len(texts)
    assert len(calls) < len(texts)
    expected = embedder.embed(texts)
    for n in range(len(texts)):
        assert float(results[n] @ expected[n]) >= 0.99999


def test_int8_is_its_own_model_close_to_full_precision(
    embedder: OnnxEmbedder, tmp_path: Path
) -> None:
    int8 = OnnxEmbedder(quantized=True, cache=tmp_path)
    assert int8.model_name == "all-MiniLM-L6-v2-int8" != embedder.model_name
    near = cosines(int8.embed(FIXED), embedder.embed(FIXED))
    # Close, not equal: hence the model name of its own and a separate index.
    assert 0.97 < float(near.mean()) < 0.99999


def test_one_export_is_shared_by_concurrent_starts(tmp_path: Path) -> None:
    model = bundled_model_path()
    paths: list[Path] = []
    start = threading.Barrier(2)

    def export() -> None:
        start.wait()
        paths.append(exported_model(model, cache=tmp_path))

    threads = [threading.Thread(target=export) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(paths) == 2 and paths[0] == paths[1]
    files = sorted(p.name for p in (tmp_path / "onnx").iterdir() if p.suffix == ".onnx")
    assert files == [paths[0].name]  # exported once, no leftovers
    stamp = paths[0].stat().st_mtime_ns
    assert exported_model(model, cache=tmp_path) == paths[0]
    assert paths[0].stat().st_mtime_ns == stamp  # found, not exported again
