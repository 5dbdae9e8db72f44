"""Re-embedding in `contextwm serve` processes as deployed: the batches go through the
indexer's embedding child process, and SIGTERM during a run ends it with UNAVAILABLE after
the batch in hand, the server exits 0, and after a restart the run resumes and finishes."""

from __future__ import annotations

from pathlib import Path

import pytest
from contextwm_client import Client, ConversationSettings, NewItem, UnavailableError
from server_process import ServerProcess
from stale_conversations import QUERY, content

pytestmark = pytest.mark.slow

STALE = ("a", "b", "c")
# 300 items in batches of 2: the run outlasts the half second SIGTERM may take to act several
# times over, on a fast machine too (180 items in batches of 8 did not, at times).
ITEMS = 100


def test_reembed_through_the_embedding_process_survives_a_sigterm(tmp_path: Path) -> None:
    old = ServerProcess(tmp_path, "--embedder", "hashing")
    try:
        with Client(old.target) as client:
            for cid in STALE:
                client.create_conversation(cid, settings=ConversationSettings(window_max_items=5))
                client.append_batch(
                    cid, [NewItem(content("default", cid, n)) for n in range(ITEMS)]
                )
                client.search(QUERY, conversation_id=cid, include_window=True)  # waits
    finally:
        assert old.terminate() == 0

    # The bundled model, embedding in a child process (the default), 2 items a batch.
    env = {"CONTEXTWM_INDEXER_BATCH_SIZE": "2"}
    server = ServerProcess(tmp_path, env=env)
    try:
        with Client(server.target) as client:
            reports = client.reembed()
            assert next(reports).conversations_total == len(STALE)
            server.proc.terminate()  # SIGTERM while the run goes on
            with pytest.raises(UnavailableError, match=r"shutting down.*resumes"):
                for _ in reports:
                    pass
        assert server.proc.wait(60) == 0
    finally:
        server.kill()

    again = ServerProcess(tmp_path, env=env)
    try:
        with Client(again.target) as client:
            plan, *_, last = client.reembed()
            assert plan.items_reused > 0 and plan.items_reused + plan.items_total <= 3 * ITEMS
            assert last.finished and last.items_done == plan.items_total
            for cid in STALE:
                assert client.search(QUERY, conversation_id=cid, mode="dense").hits
    finally:
        assert again.terminate() == 0
