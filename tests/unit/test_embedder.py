"""Tests for the PyTorch embedder and the hashing fake: the fast MiniLM path equals
sentence-transformers' encode; the fake is deterministic. Uses the real model."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.adapters.embedder_st import SentenceTransformerEmbedder
from contextwm.adapters.main_thread import MainThread
from main_thread_serving import serve_while

SHORT = ["hi", "The cache was rebuilt after the model changed.", "kestrel_sync.py failed"]
# Far more than 256 word pieces: both paths must truncate the same way.
LONG = [
    " ".join(f"token{n} alpha-beta/gamma" for n in range(400)),
    "Traceback (most recent call last):\n" + "  File 'x.py', line 1, in f\n" * 200,
]


def check_same(torch_embedder: SentenceTransformerEmbedder, texts: list[str]) -> np.ndarray:
    fast = torch_embedder.embed(texts)
    ref = torch_embedder.reference_embed(texts)
    assert fast.shape == ref.shape == (len(texts), torch_embedder.dimension)
    assert fast.dtype == np.float32
    assert float(np.max(np.abs(fast - ref))) < 1e-5
    np.testing.assert_allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)
    return fast


def test_long_texts_exceed_the_model_window(torch_embedder: SentenceTransformerEmbedder) -> None:
    tokenizer = torch_embedder._tokenizer  # the premise of the LONG cases
    assert all(len(tokenizer(t)["input_ids"]) > 256 for t in LONG)


def test_fast_path_equals_reference_short(torch_embedder: SentenceTransformerEmbedder) -> None:
    check_same(torch_embedder, SHORT)


def test_fast_path_equals_reference_long(torch_embedder: SentenceTransformerEmbedder) -> None:
    check_same(torch_embedder, LONG)


def test_fast_path_equals_reference_mixed_batch_in_input_order(
    torch_embedder: SentenceTransformerEmbedder,
) -> None:
    # Lengths deliberately unsorted: embed() sorts by length internally and must put the
    # rows back where they came from (encode() returns rows in input order).
    texts = [SHORT[0], LONG[1], "<|endoftext|> é 🙂", SHORT[1], SHORT[2]]
    fast = check_same(torch_embedder, texts)
    # Padding inside a mixed batch changes nothing: a row equals the text embedded alone.
    alone = torch_embedder.embed([SHORT[1]])[0]
    assert float(np.max(np.abs(alone - fast[3]))) < 1e-5


def test_batches_larger_than_batch_size(
    torch_embedder: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch_embedder, "_batch_size", 4)
    texts = [f"note {n}: " + "word " * (n % 7) for n in range(11)]
    check_same(torch_embedder, texts)


def test_empty_input(torch_embedder: SentenceTransformerEmbedder) -> None:
    assert torch_embedder.embed([]).shape == (0, torch_embedder.dimension)


def test_model_identity(torch_embedder: SentenceTransformerEmbedder) -> None:
    assert torch_embedder.model_name == "all-MiniLM-L6-v2"
    assert torch_embedder.dimension == 384


def test_similar_texts_are_closer(torch_embedder: SentenceTransformerEmbedder) -> None:
    a, b, c = torch_embedder.embed(
        ["How do I reset my password?", "I forgot my login password", "Bananas are yellow"]
    )
    assert float(a @ b) > float(a @ c) + 0.2


# ---------------------------------------------------------------- hashing fake


def test_hashing_embedder_is_deterministic() -> None:
    texts = ["alpha beta", "Alpha BETA", "gamma", "", "!!!"]
    one, two = HashingEmbedder(32).embed(texts), HashingEmbedder(32).embed(texts)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one[0], one[1])  # case-insensitive bag of words
    np.testing.assert_allclose(np.linalg.norm(one, axis=1), 1.0, atol=1e-6)
    assert one.shape == (5, 32) and one.dtype == np.float32
    assert HashingEmbedder(32).model_name == "hashing-32"


@pytest.mark.parametrize("dim", [8, 64])
def test_hashing_embedder_shared_words_are_similar(dim: int) -> None:
    e = HashingEmbedder(dim)
    a, b, c = e.embed(["the kestrel sync failed", "kestrel sync failed again", "zebra"])
    assert float(a @ b) > float(a @ c)
    assert e.dimension == dim


def test_concurrent_small_calls_are_coalesced(torch_embedder: SentenceTransformerEmbedder) -> None:
    """Queries arriving while one is being embedded are embedded together, in one batch."""
    import threading

    calls: list[int] = []
    real = torch_embedder._encode

    def counting(texts, tokenizer):  # type: ignore[no-untyped-def]
        calls.append(len(texts))
        return real(texts, tokenizer)

    torch_embedder._encode = counting  # type: ignore[method-assign]
    try:
        texts = [f"question number {n} about the deployment" for n in range(24)]
        results: dict[int, np.ndarray] = {}
        start = threading.Barrier(len(texts))

        def ask(n: int) -> None:
            start.wait()
            results[n] = torch_embedder.embed([texts[n]])[0]

        threads = [threading.Thread(target=ask, args=(n,)) for n in range(len(texts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        del torch_embedder._encode
    assert sum(calls) == len(texts)
    assert len(calls) < len(texts)  # some calls shared a batch
    reference = torch_embedder.reference_embed(texts)
    for n in range(len(texts)):
        assert np.allclose(results[n], reference[n], atol=1e-5)


def test_a_query_from_another_thread_gives_the_same_vector_and_leaves_main_alone(
    torch_embedder: SentenceTransformerEmbedder,
) -> None:
    before = torch.get_num_threads()
    text = "which port does the billing service listen on?"
    on_main = torch_embedder.embed([text])
    got: list[np.ndarray] = []
    worker = threading.Thread(target=lambda: got.append(torch_embedder.embed([text])))
    worker.start()
    worker.join()
    np.testing.assert_allclose(got[0], on_main, atol=1e-5)
    assert torch.get_num_threads() == before  # the worker's one thread is its own setting


def test_a_query_is_embedded_on_the_serving_main_thread_with_every_core(
    torch_embedder: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "which port does the billing service listen on?"
    alone = torch_embedder.embed([text])
    main = MainThread()
    monkeypatch.setattr(torch_embedder, "_main_thread", main)
    seen: list[tuple[threading.Thread, int]] = []
    real = torch_embedder._encode

    def recording(texts, tokenizer):  # type: ignore[no-untyped-def]
        seen.append((threading.current_thread(), torch.get_num_threads()))
        return real(texts, tokenizer)

    monkeypatch.setattr(torch_embedder, "_encode", recording)
    got: list[np.ndarray] = []
    serve_while(main, lambda: got.append(torch_embedder.embed([text])))
    assert seen == [(threading.main_thread(), torch_embedder._threads)]
    np.testing.assert_allclose(got[0], alone, atol=1e-5)
