"""A data directory written by a server with another embedding model (the hashing one), for
the re-embedding tests: conversations with archived items whose vectors are all hashing ones."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import psycopg
from conftest import StartService
from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.datadir.layout import DataDir
from contextwm.domain.conversations import ConversationSettings
from contextwm.ports.embedder import Embedder
from contextwm_client import Client, NewItem

OLD_MODEL = HashingEmbedder().model_name
# By (namespace, conversation), in the order a re-embed of every namespace goes through them.
STALE = (("default", "a"), ("default", "b"), ("default", "c"), ("ops", "d"))
ITEMS = 24  # per conversation; a window of 5 archives the rest
WINDOW = 5
TOPICS = (
    "feeding the sourdough starter twice a day with rye flour",
    "the kayak rudder cable snapped on the fjord crossing",
    "rust borrow checker rejects two mutable references",
    "filing the tax return before the April deadline",
    "tomato blight spreading in the greenhouse after rain",
    "jazz piano voicings with rootless left hand chords",
    "the postgres replica lags behind the primary by minutes",
    "training for a marathon with long slow runs on Sundays",
    "the cat refuses the new brand of dry food",
    "repainting the bathroom ceiling after the leak",
    "choosing a mechanical keyboard with quiet switches",
    "booking night trains from Vienna to Venice",
)
QUERY = "how do I keep my bread starter alive and bubbly"


def content(namespace: str, conversation_id: str, n: int) -> str:
    return f"{TOPICS[n % len(TOPICS)]} (note {n} in {namespace}/{conversation_id})"


def write_stale_data(start_service: StartService, data_dir: Path) -> str:
    """Fills data_dir (and the test's PostgreSQL database, when its servers use one) through a
    server embedding with the hashing model, then stops it (which saves its index files):
    every item of STALE has a hashing vector. Returns the server's store setting."""
    service = start_service(
        model=HashingEmbedder(),
        data_dir=data_dir,
        conversation=ConversationSettings(window_max_items=WINDOW),
    )
    with Client(f"127.0.0.1:{service.port}") as client:
        for namespace, cid in STALE:
            client.append_batch(
                cid,
                [NewItem(content(namespace, cid, n)) for n in range(ITEMS)],
                namespace=namespace,
            )
            # Dense search waits for the conversation's vectors.
            client.search(QUERY, conversation_id=cid, mode="dense", namespace=namespace)
            assert client.get_conversation(cid, namespace=namespace).pending_embeddings == 0
    service.stop(grace=0)
    assert vector_models(data_dir, service.settings.store) == {OLD_MODEL: len(STALE) * ITEMS}
    return service.settings.store


def vector_models(data_dir: Path, store: str, namespace: str | None = None) -> dict[str, int]:
    """Stored vectors by model (of one namespace's conversations, or all), read from the store
    (store: the servers' setting; empty for the data directory's SQLite file)."""
    where = "WHERE c.namespace = ?" if namespace else ""
    params = (namespace,) if namespace else ()
    sql = (
        "SELECT v.model, count(*) FROM vectors v JOIN items i ON i.id = v.item"
        f" JOIN conversations c ON c.id = i.conv {where} GROUP BY v.model"
    )
    if store:
        with psycopg.connect(store) as pg:
            return dict(pg.execute(sql.replace("?", "%s"), params).fetchall())
    with sqlite3.connect(DataDir(data_dir).store) as db:
        return dict(db.execute(sql, params).fetchall())


class WatchedEmbedder:
    """The shared model, telling when it is asked to embed a text holding marker: only a
    re-embed embeds the items of a stale conversation, so the marker "in default/b)" tells
    that a re-embed has a batch of b in hand."""

    def __init__(self, inner: Embedder, marker: str) -> None:
        self._inner = inner
        self._marker = marker
        self.seen = threading.Event()

    @property
    def model_name(self) -> str:
        return self._inner.model_name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if any(self._marker in t for t in texts):
            self.seen.set()
        return self._inner.embed(texts)
