"""Tests for folding concurrent small embedding calls into one pass."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest
from contextwm.adapters.query_coalescing import QueryCoalescer


def _start_together(count: int, call: object) -> list[threading.Thread]:
    threads = [threading.Thread(target=call, args=(n,)) for n in range(count)]  # type: ignore[arg-type]
    for t in threads:
        t.start()
    return threads


def test_waiting_calls_share_a_pass_and_get_their_own_rows() -> None:
    coalescer = QueryCoalescer()
    passes: list[list[str]] = []
    first_entered, release = threading.Event(), threading.Event()

    def encode(texts: Sequence[str]) -> np.ndarray:
        passes.append(list(texts))
        if len(passes) == 1:  # hold the first pass until the others are queued behind it
            first_entered.set()
            release.wait(10)
        return np.array([[float(t.split()[1])] for t in texts], dtype=np.float32)

    got: dict[int, np.ndarray] = {}
    holder = threading.Thread(target=lambda: got.update({0: coalescer.embed(["text 0"], encode)}))
    holder.start()
    assert first_entered.wait(10)
    others = _start_together(
        5, lambda n: got.update({n + 1: coalescer.embed([f"text {n + 1}"], encode)})
    )
    while len(coalescer._waiting) < 5:  # every other call is queued
        threading.Event().wait(0.01)
    release.set()
    for t in [holder, *others]:
        t.join(10)
    assert len(passes) == 2 and sorted(passes[1]) == [f"text {n}" for n in range(1, 6)]
    assert {n: float(v[0, 0]) for n, v in got.items()} == {n: float(n) for n in range(6)}


def test_a_failed_pass_fails_every_call_it_carried() -> None:
    coalescer = QueryCoalescer()
    first_entered, release = threading.Event(), threading.Event()
    calls = 0

    def encode(texts: Sequence[str]) -> np.ndarray:
        nonlocal calls
        calls += 1
        if calls == 1:
            first_entered.set()
            release.wait(10)
            return np.zeros((len(texts), 1), dtype=np.float32)
        raise RuntimeError("the model failed")

    errors: list[BaseException] = []

    def ask(n: int) -> None:
        try:
            coalescer.embed([f"q{n}"], encode)
        except RuntimeError as exc:
            errors.append(exc)

    holder = threading.Thread(target=ask, args=(0,))
    holder.start()
    assert first_entered.wait(10)
    others = _start_together(3, lambda n: ask(n + 1))
    while len(coalescer._waiting) < 3:
        threading.Event().wait(0.01)
    release.set()
    for t in [holder, *others]:
        t.join(10)
    assert calls == 2 and len(errors) == 3  # one failed pass, each of its callers told
    with pytest.raises(RuntimeError):
        coalescer.embed(["again"], encode)
