"""A conversation with a row of every kind a store keeps, built through the client, and what a
caller reads of it: for the tests that copy conversations between servers and stores."""

from __future__ import annotations

from contextwm_client import Client, ConversationSettings, FileRef, Role


def build(client: Client, cid: str = "rich") -> None:
    """A conversation with a row in every table: archived and compacted items, a pinned one,
    metadata, a file read twice, a compaction, a checkpoint, a truncation, a session and
    reported usage."""
    client.create_conversation(cid, settings=ConversationSettings(window_max_items=6))
    client.append(cid, "Always deploy to port 8443.", flags=["pinned"], metadata={"user": "42"})
    for k in range(8):
        client.append(cid, f"Turn {k} about kernel scheduling, nul \x00 and all.")
    body = "def main():\n    return 1\n"
    for _ in range(2):  # the second read supersedes the first
        client.append(cid, body, role="tool", file=FileRef("src/app.py", "read", whole_file=True))
    client.create_checkpoint(cid, "before-compaction")
    client.compact(cid, "We set up the deploy port and talked about scheduling.")
    for k in range(6):
        role: Role = "user" if k % 2 == 0 else "assistant"
        client.append(
            cid, f"After the compaction, turn {k}: " + "sourdough starter " * 30, role=role
        )
    client.truncate(cid, "half")
    client.set_session_state(cid, set=["search_active"])
    client.get_usage(cid, reported_input_tokens=900)


def seen(client: Client, cid: str, namespace: str | None = None) -> tuple[object, ...]:
    """What a caller reads of a conversation, but for embedding progress."""
    conv = client.get_conversation(cid, namespace=namespace)
    return (
        [
            (i.seq, i.state, i.content, i.flags, i.metadata, i.file, i.role)
            for i in client.iter_items(cid, namespace=namespace)
        ],
        [(e.seq, e.content) for e in client.iter_active_context(cid, namespace=namespace)],
        [(c.name, c.last_seq) for c in client.list_checkpoints(cid, namespace=namespace)],
        [(e.id, e.kind, e.seqs) for e in client.iter_context_edits(cid, namespace=namespace)],
        client.get_session(cid, namespace=namespace).states,
        client.get_usage(cid, namespace=namespace).active_tokens,
        (conv.last_seq, conv.window.token_count, conv.archived_items, conv.settings),
    )
