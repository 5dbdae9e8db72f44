"""Two replicas on one PostgreSQL database: a replica that loads a conversation while the other
appends to it holds the store's truth, and its next append takes the next seq (the crash
test's replicas hit this as one of them came back from a kill)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.adapters.faiss_index import FaissIndexFiles
from contextwm.adapters.postgres.store import PostgresStore
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.conversations.engine import ContextEngine
from contextwm.domain.conversations import SettingsPatch
from contextwm.domain.items import NewItem
from contextwm.ports.conversation_store import ConversationRecord

NS, CID = "default", "c"


class CommitsAfterRecordRead(PostgresStore):
    """A replica's store that runs `meanwhile` (once) just after it read a conversation's
    record: another replica's commit lands between that read and the next."""

    def __init__(self, dsn: str) -> None:
        super().__init__(dsn)
        self.meanwhile: Callable[[], object] | None = None

    def get_conversation(self, namespace: str, conversation_id: str) -> ConversationRecord | None:
        record = super().get_conversation(namespace, conversation_id)
        then, self.meanwhile = self.meanwhile, None
        if then is not None:
            then()
        return record


def engine_on(store: PostgresStore, files: Path) -> ContextEngine:
    return ContextEngine(store, HashingEmbedder(32), FaissIndexFiles(files, 32), token_counter)


@pytest.fixture
def stores(pg_dsn: str) -> Iterator[tuple[CommitsAfterRecordRead, PostgresStore]]:
    first, second = CommitsAfterRecordRead(pg_dsn), PostgresStore(pg_dsn)
    yield first, second
    second.close()
    first.close()


def note(n: int) -> list[NewItem]:
    return [NewItem(role="user", content=f"note {n} about the lighthouse")]


def test_a_conversation_loaded_while_another_replica_appends_takes_the_next_seq(
    stores: tuple[CommitsAfterRecordRead, PostgresStore], tmp_path: Path
) -> None:
    loading, other = engine_on(stores[0], tmp_path / "a"), engine_on(stores[1], tmp_path / "b")
    other.create_conversation(NS, CID, SettingsPatch())
    assert [r.seq for r in other.append(NS, CID, note(1)).results] == [1]
    # The first replica loads the conversation for its append; the other appends seq 2 just
    # after the first read the conversation's record (last seq 1).
    stores[0].meanwhile = lambda: other.append(NS, CID, note(2))
    assert [r.seq for r in loading.append(NS, CID, note(3)).results] == [3]
    assert [r.seq for r in other.append(NS, CID, note(4)).results] == [4]
    for engine in (loading, other):
        rt = engine.runtime(NS, CID)
        assert rt.last_seq == 4
        assert rt.active.item_seqs() == [1, 2, 3, 4]
