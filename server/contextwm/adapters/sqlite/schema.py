"""The store's tables, indexes and full-text index, and the schema version they make."""

from __future__ import annotations

SCHEMA_VERSION = 5

# How the full-text index cuts text into terms; fts5_terms.py cuts it the same way for stores
# that keep their own postings.
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS conversations (
    id INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    settings TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_seq INTEGER NOT NULL DEFAULT 0,
    token_limit INTEGER,
    state TEXT NOT NULL DEFAULT 'general',
    UNIQUE (namespace, conversation_id)
);

CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY,
    conv INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    ts REAL NOT NULL,
    tokens INTEGER NOT NULL,
    flags INTEGER NOT NULL,
    metadata TEXT,
    file_path TEXT,
    file_kind TEXT,
    state INTEGER NOT NULL,
    idem TEXT,
    UNIQUE (conv, seq)
);

CREATE UNIQUE INDEX IF NOT EXISTS items_idem ON items (conv, idem) WHERE idem IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_state ON items (conv, state, seq);
CREATE INDEX IF NOT EXISTS items_time ON items (conv, ts);
-- items_stats and vectors_model serve the statistics, which read them instead of the rows:
-- an item row holds its content before tokens and ts, a vector row its 1.5 KiB blob, so
-- counting 100k items from the rows read the whole file (0.4 s from a cold cache, against
-- 0.05 s from these indexes). Older files get them at their next open, with no new schema
-- version: a server that does not know them still reads and writes the file.
CREATE INDEX IF NOT EXISTS items_stats ON items (conv, state, tokens, ts);
CREATE TABLE IF NOT EXISTS vectors (
    item INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    vec BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS vectors_model ON vectors (model, item);
-- Contentless: the text lives in items once. The tag column ("c<conversation key>") lets
-- a MATCH narrow to one conversation inside the index instead of filtering afterwards.
CREATE VIRTUAL TABLE IF NOT EXISTS items_fts USING fts5(
    content, tag, content='', tokenize='"""
    + FTS_TOKENIZER
    + """'
);
"""
)

# Version 2 (the agent loop): columns added to version-1 files by ALTER TABLE, so one list
# serves new files and migrated ones alike.
V2_COLUMNS = (
    ("items", "kind TEXT NOT NULL DEFAULT 'message'"),
    ("items", "whole_file INTEGER"),
    ("conversations", "active_start INTEGER NOT NULL DEFAULT 0"),
    ("conversations", "reported_tokens INTEGER"),
    ("conversations", "reported_server_tokens INTEGER"),
    ("conversations", "last_event INTEGER NOT NULL DEFAULT 0"),
)

# Version 3 (retention): when a conversation was last appended to (NULL in rows older than
# the column: the newest of its creation and its newest item stand in), and how many of its
# items retention removed, which leaves gaps in its seqs that `contextwm check` accounts for.
V3_COLUMNS = (
    ("conversations", "last_append_at REAL"),
    ("conversations", "removed_items INTEGER NOT NULL DEFAULT 0"),
)

# Version 4 (re-embedding): the embedding model a conversation's vectors come from (NULL: no
# vectors yet). Recorded rather than read off the vectors table: an item holds one vector, so
# a conversation half-way through a re-embed holds vectors of two models, and every dense
# search asks.
V4_COLUMNS = (("conversations", "embed_model TEXT"),)

# An older file learns each conversation's model from its vectors: that of its oldest
# embedded item (an older server re-embedded silently after a model change, oldest first).
V4_FILL = """
UPDATE conversations SET embed_model = (
    SELECT v.model FROM items i JOIN vectors v ON v.item = i.id
    WHERE i.conv = conversations.id ORDER BY i.seq LIMIT 1
)
"""

# Version 5 (API keys): one row per key with the SHA-256 digest of its token, never the token;
# the scopes as a JSON array. A new version rather than a table older servers ignore: an older
# server knows nothing of keys and would serve the file without asking for one, so it must
# refuse the file instead.
V5_TABLES = """
CREATE TABLE IF NOT EXISTS api_keys (
    key_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    role TEXT NOT NULL,
    namespaces TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL,
    revoked_at REAL,
    token_digest TEXT NOT NULL
)
"""

V2_TABLES = """
CREATE INDEX IF NOT EXISTS items_file ON items (conv, file_path) WHERE file_path IS NOT NULL;
CREATE TABLE IF NOT EXISTS facts (
    conv INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    outcome TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS facts_conv ON facts (conv, seq);
CREATE TABLE IF NOT EXISTS edits (
    conv INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    id INTEGER NOT NULL,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    seqs TEXT NOT NULL,
    related_seq INTEGER NOT NULL DEFAULT 0,
    tokens_saved INTEGER NOT NULL DEFAULT 0,
    detail TEXT NOT NULL DEFAULT '',
    undone_at REAL,
    PRIMARY KEY (conv, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS compactions (
    id INTEGER PRIMARY KEY,
    conv INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    at REAL NOT NULL,
    summary TEXT NOT NULL,
    extractive INTEGER NOT NULL,
    marker_seq INTEGER NOT NULL,
    items_archived INTEGER NOT NULL,
    tokens_before INTEGER NOT NULL,
    tokens_after INTEGER NOT NULL,
    ledger TEXT NOT NULL,
    facts TEXT NOT NULL,
    undone_at REAL
);
CREATE INDEX IF NOT EXISTS compactions_conv ON compactions (conv, marker_seq);
CREATE TABLE IF NOT EXISTS checkpoints (
    id INTEGER PRIMARY KEY,
    conv INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    at REAL NOT NULL,
    snapshot TEXT NOT NULL,
    UNIQUE (conv, name)
);
CREATE TABLE IF NOT EXISTS events (
    conv INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (conv, number)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_at ON events (at);
-- A conversation's session (tool states, the file it views) as one JSON document. Files
-- older than the table get it at their next open, with no new schema version: a server that
-- does not know it still reads and writes the file.
CREATE TABLE IF NOT EXISTS sessions (
    conv INTEGER PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
    doc TEXT NOT NULL
);
"""

# Every item's FTS row is written by this trigger, so that an item costs one INSERT statement
# rather than two: each sqlite3 call releases and re-takes the interpreter lock, which under
# concurrent appends means a switch to another thread and back. TEMP: it exists on the write
# connection only and is never stored in the file, which older versions can still open.
FTS_TRIGGER = """
CREATE TEMP TRIGGER items_fts_insert AFTER INSERT ON main.items BEGIN
    INSERT INTO items_fts (rowid, content, tag) VALUES (new.id, new.content, 'c' || new.conv);
END
"""
