"""Tests for the indexer's child-process embedder: same vectors as in-process, survives a kill,
ends with a killed server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np
import pytest
from contextwm.adapters import embedder_process, embedders
from contextwm.adapters.embedder_onnx import THREADS
from contextwm.adapters.embedder_process import ProcessEmbedder
from contextwm.ports.embedder import Embedder

TEXTS = [f"note {n}: the billing service listens on port {8000 + n}" for n in range(40)]


@pytest.fixture(scope="module")
def child() -> Iterator[ProcessEmbedder]:
    embedder = ProcessEmbedder()
    yield embedder
    embedder.close()


def test_same_model_and_vectors_as_in_process(child: ProcessEmbedder, embedder: Embedder) -> None:
    assert (child.model_name, child.dimension) == (embedder.model_name, embedder.dimension)
    vectors = child.embed(TEXTS)
    assert vectors.shape == (40, embedder.dimension) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, embedder.embed(TEXTS), atol=1e-5)


def test_urgent_batches_get_the_same_vectors(child: ProcessEmbedder, embedder: Embedder) -> None:
    np.testing.assert_allclose(child.embed(TEXTS, urgent=True), embedder.embed(TEXTS), atol=1e-5)


def test_embeds_on_low_priority_threads_beside_one_at_the_server_s(child: ProcessEmbedder) -> None:
    child.embed(TEXTS[:1])  # started and ready
    pid = child._process.pid
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    tasks = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    nice = sorted(os.getpriority(os.PRIO_PROCESS, t) for t in tasks)
    low = ours + embedder_process.NICENESS
    assert nice.count(low) == THREADS, nice
    assert set(nice) == {ours, low}, nice


def test_a_killed_child_fails_one_call_and_is_started_again(child: ProcessEmbedder) -> None:
    old = child._process.pid
    os.kill(old, signal.SIGKILL)
    child._process.join(10)
    first = None
    try:
        first = child.embed(TEXTS[:2])
    except RuntimeError as exc:
        assert "embedding process" in str(exc)
    vectors = child.embed(TEXTS[:2]) if first is None else first
    assert vectors.shape == (2, child.dimension)
    assert child._process.pid != old


def _server_with_child(code: str) -> subprocess.Popen[str]:
    """A stand-in server process that starts a ProcessEmbedder, then runs `code`."""
    script = (
        "import time\n"
        "from contextwm.adapters.embedder_process import ProcessEmbedder\n"
        "child = ProcessEmbedder()\n" + code + "time.sleep(600)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def _kill_and_collect(server: subprocess.Popen[str]) -> str:
    """SIGKILLs the stand-in server and returns its stderr, read to the end: the end comes
    only once the child, which shares it, has exited too."""
    server.kill()
    server.wait(30)
    _, err = server.communicate(timeout=60)
    return err


def test_a_child_loading_the_model_ends_with_a_killed_server() -> None:
    # A kill -9 runs no shutdown code: the child notices on its own and stops loading.
    server = _server_with_child("print('spawned', flush=True)\n")
    assert server.stdout is not None and server.stdout.readline() == "spawned\n"
    err = _kill_and_collect(server)
    assert "Traceback" not in err and "Loading weights" not in err, err


def test_a_child_embedding_a_batch_ends_with_a_killed_server() -> None:
    server = _server_with_child(
        f"child.ready()\nprint('embedding', flush=True)\nchild.embed({TEXTS!r} * 200)\n"
    )
    assert server.stdout is not None and server.stdout.readline() == "embedding\n"
    time.sleep(0.5)  # the batch (8000 texts) is under way in the child
    err = _kill_and_collect(server)
    assert "Traceback" not in err, err


class _GonePipe:
    """A pipe whose server end is gone once the first request was read."""

    def __init__(self) -> None:
        self.sent: list[object] = []

    def send(self, obj: object) -> None:
        if self.sent:
            raise BrokenPipeError(32, "Broken pipe")
        self.sent.append(obj)

    def recv(self) -> object:
        return ["a text"], False


def test_a_reply_to_a_gone_server_ends_the_child_with_one_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # In-process: no parent to watch here, so the broken pipe is what the child meets.
    class Stub:
        model_name, dimension = "stub", 2

        def embed(self, texts: list[str]) -> np.ndarray:
            return np.zeros((len(texts), 2), dtype=np.float32)

    monkeypatch.setattr(embedders, "make_embedder", lambda kind: Stub())
    conn = _GonePipe()
    embedder_process._serve(conn, "hashing", 0)  # type: ignore[arg-type]
    assert conn.sent == [("ready", "stub", 2)]
    assert [r.getMessage() for r in caplog.records] == [
        "embedding process: the server is gone; exiting"
    ]
