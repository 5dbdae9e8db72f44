"""Batch embedding in a child process at lower CPU priority, for the background indexer.

In the server's own process every transformer layer call takes the interpreter lock, so a
running indexing batch delays acknowledgements; at a lower priority the operating system
also hands the CPU to request threads first. The child only ever embeds; queries stay in the
server's process, where their latency is lowest.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

import numpy as np

from contextwm.ports.embedder import Embedder, Vectors

log = logging.getLogger(__name__)

# How much lower the child's priority is than the server's (os.nice increment).
NICENESS = 10
# How long start() waits for the child to load the model.
START_SECONDS = 300.0


def _serve(conn: Connection, kind: str, niceness: int) -> None:
    """The child: load the model, then answer (texts, urgent) with vectors until told to
    stop or the server is gone."""
    _exit_with_parent()
    embed, embedder = _load(kind, niceness)
    reply: tuple[Any, ...] = ("ready", embedder.model_name, embedder.dimension)
    while True:
        try:
            conn.send(reply)
            asked = conn.recv()
        except (EOFError, OSError):  # the server went away (a broken pipe is an OSError)
            log.warning("embedding process: the server is gone; exiting")
            return
        if asked is None:
            return
        texts, urgent = asked
        try:
            reply = ("ok", embed(texts, urgent))
        except Exception as exc:  # reported to the caller, who logs and retries
            reply = ("error", f"{type(exc).__name__}: {exc}")


def _load(kind: str, niceness: int) -> tuple[Callable[[list[str], bool], Vectors], Embedder]:
    """The model, and how a batch is embedded: on the ONNX engine's low-priority threads
    (and, when urgent, one at full priority) where threads have priorities of their own;
    else with the whole process at the lower priority, urgent or not."""
    from contextwm.adapters import priority_pool
    from contextwm.adapters.embedders import make_embedder

    if kind in ("minilm", "minilm-int8") and priority_pool.SUPPORTED:
        from contextwm.adapters.embedder_onnx import OnnxEmbedder

        onnx = OnnxEmbedder(quantized=kind == "minilm-int8", niceness=niceness)
        onnx.embed_batch(["warm-up"])  # loads what loads at first use before "ready"
        return (lambda texts, urgent: onnx.embed_batch(texts, urgent=urgent)), onnx
    os.nice(niceness)
    if kind == "minilm-torch":
        from transformers.utils import logging as transformers_logging

        # The server loads the same model beside this child, with the same progress bar on
        # the same console: one bar is enough.
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    embedder = make_embedder(kind)
    return (lambda texts, urgent: embedder.embed(texts)), embedder


def _exit_with_parent() -> None:
    """Ends the child as soon as the server's process is gone. A killed server runs no
    shutdown code, and a child left alone would go on loading the model or embedding its
    batch, taking CPU from the restarted server, only to find the pipe closed."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    sentinel = parent.sentinel  # readable once the parent is gone

    def watch() -> None:
        wait([sentinel])
        os._exit(0)  # nothing to save here: the server re-embeds what stayed pending

    threading.Thread(target=watch, name="contextwm-parent-watch", daemon=True).start()


class ProcessEmbedder:
    """An Embedder whose work runs in a child process; one call at a time (the indexer's).

    A child that dies is started again on the next call, so a crash of the model (or an
    out-of-memory kill) costs one failed batch, which the indexer retries.
    """

    def __init__(self, kind: str = "minilm", *, niceness: int = NICENESS) -> None:
        """kind names the model as the embedder setting does (see adapters.embedders)."""
        self._kind = kind
        self._niceness = niceness
        self._lock = threading.Lock()
        self._process: Any = None
        self._conn: Connection | None = None  # set once the child is ready
        self._pending: Connection | None = None
        self._name = ""
        self._dimension = 0
        self._spawn()

    def _spawn(self) -> None:
        """Starts the child; it loads the model while the caller goes on (see ready())."""
        ctx = multiprocessing.get_context("spawn")  # fork would copy the server's threads
        parent, child = ctx.Pipe()
        process = ctx.Process(
            target=_serve,
            args=(child, self._kind, self._niceness),
            name="contextwm-embedder",
            daemon=True,
        )
        process.start()
        child.close()
        self._process, self._pending = process, parent

    def ready(self) -> None:
        """Waits until the child has loaded the model (the server loads its own meanwhile).

        Raises:
            RuntimeError: the child did not start or exited.
        """
        if self._conn is not None:
            return
        process, parent = self._process, self._pending
        assert parent is not None
        if not parent.poll(START_SECONDS):
            process.kill()
            raise RuntimeError(f"the embedding process did not start in {START_SECONDS:.0f} s")
        try:
            status, name, dimension = parent.recv()
        except EOFError:
            raise RuntimeError("the embedding process exited while loading the model") from None
        assert status == "ready"
        self._conn = parent
        self._name, self._dimension = name, dimension

    @property
    def model_name(self) -> str:
        with self._lock:
            self.ready()
        return self._name

    @property
    def dimension(self) -> int:
        with self._lock:
            self.ready()
        return self._dimension

    def embed(self, texts: Sequence[str], *, urgent: bool = False) -> Vectors:
        """Raises RuntimeError when the child fails (it is restarted for the next call).

        urgent: also on a thread at the server's priority (where the child has one), for a
        batch that a reader waits for or a backlog that has waited long.
        """
        with self._lock:
            if self._conn is not None and not self._process.is_alive():
                log.warning("embedding process is gone; starting a new one")
                self._conn = None
                self._spawn()
            self.ready()
            assert self._conn is not None
            try:
                self._conn.send((list(texts), urgent))
                status, payload = self._conn.recv()
            except (EOFError, OSError, BrokenPipeError) as exc:
                self._conn = None
                self._spawn()  # the next call gets a fresh child
                raise RuntimeError(f"the embedding process failed: {exc}") from exc
        if status != "ok":
            raise RuntimeError(f"the embedding process failed: {payload}")
        vectors: Vectors = np.asarray(payload, dtype=np.float32)
        return vectors

    def close(self) -> None:
        """Stops the child (waits briefly, then kills it)."""
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(OSError):  # the child may be gone already
                    self._conn.send(None)
                self._conn.close()
                self._conn = None
            if self._process is not None:
                self._process.join(5.0)
                if self._process.is_alive():
                    self._process.kill()
                self._process = None
