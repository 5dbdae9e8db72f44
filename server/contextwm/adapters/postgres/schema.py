"""The PostgreSQL store's schema, as the migrations that build it, one per version."""

from __future__ import annotations

# MIGRATIONS[n] brings a database at version n to version n + 1; each runs in the same
# transaction as the version it records.
MIGRATIONS: tuple[str, ...] = (
    # Lexical postings: one row per distinct term of an item, cut by FTS5's own tokenizer
    # (Fts5Terms), so BM25 gets the inputs the SQLite store's full-text index gives it.
    # Names compare byte by byte (COLLATE "C"), as SQLite compares them: pages of conversations
    # come in the same order from either store, whatever the database's locale.
    """
    CREATE TABLE conversations (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        namespace text COLLATE "C" NOT NULL,
        conversation_id text COLLATE "C" NOT NULL,
        settings text NOT NULL,
        created_at double precision NOT NULL,
        last_seq bigint NOT NULL DEFAULT 0,
        token_limit bigint,
        state text NOT NULL DEFAULT 'general',
        active_start bigint NOT NULL DEFAULT 0,
        reported_tokens bigint,
        reported_server_tokens bigint,
        last_event bigint NOT NULL DEFAULT 0,
        last_append_at double precision,
        removed_items bigint NOT NULL DEFAULT 0,
        embed_model text,
        -- Moves with every hold that wrote (locks.py): how replicas tell that their memory
        -- of the conversation is out of date.
        version bigint NOT NULL DEFAULT 0,
        -- The last vector write of the conversation (vector_writes): how a server's
        -- namespace index learns what other servers embedded.
        vectors_written bigint NOT NULL DEFAULT 0,
        UNIQUE (namespace, conversation_id)
    );
    CREATE TABLE items (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        conv bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        role text NOT NULL,
        content text NOT NULL,
        ts double precision NOT NULL,
        tokens bigint NOT NULL,
        flags bigint NOT NULL,
        metadata text,
        file_path text,
        file_kind text,
        state smallint NOT NULL,
        idem text,
        kind text NOT NULL DEFAULT 'message',
        whole_file smallint,
        UNIQUE (conv, seq)
    );
    CREATE UNIQUE INDEX items_idem ON items (conv, idem) WHERE idem IS NOT NULL;
    CREATE INDEX items_state ON items (conv, state, seq);
    CREATE INDEX items_time ON items (conv, ts);
    -- The statistics and namespace_totals read items from this index alone (an index-only
    -- scan), never from the rows, which hold the content before tokens and ts; the id joins
    -- an item to its vector in vectors_model.
    CREATE INDEX items_stats ON items (conv, state, tokens, ts) INCLUDE (id);
    -- Numbers every vector write; within a conversation they grow in commit order, since its
    -- writes are serialised by its hold (locks.py).
    CREATE SEQUENCE vector_writes;
    CREATE TABLE vectors (
        item bigint PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
        conv bigint NOT NULL,
        model text NOT NULL,
        vec bytea NOT NULL,
        written bigint NOT NULL DEFAULT nextval('vector_writes')
    );
    CREATE INDEX vectors_model ON vectors (model, item);
    CREATE INDEX vectors_written ON vectors (conv, written);
    CREATE TABLE events (
        conv bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        number bigint NOT NULL,
        at double precision NOT NULL,
        kind text NOT NULL,
        payload text NOT NULL,
        PRIMARY KEY (conv, number)
    );
    CREATE INDEX events_at ON events (at);
    CREATE TABLE sessions (
        conv bigint PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
        doc text NOT NULL
    );
    CREATE TABLE postings (
        conv bigint NOT NULL,
        term text COLLATE "C" NOT NULL,
        item bigint NOT NULL REFERENCES items (id) ON DELETE CASCADE,
        PRIMARY KEY (conv, term, item)
    );
    CREATE INDEX postings_item ON postings (item);
    -- A term across a namespace's conversations (namespace_postings): the primary key leads
    -- with the conversation, so it would be searched once per conversation of the namespace.
    CREATE INDEX postings_term ON postings (term, conv, item);
    CREATE TABLE facts (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        conv bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        kind text NOT NULL,
        text text NOT NULL,
        outcome text NOT NULL DEFAULT ''
    );
    CREATE INDEX facts_conv ON facts (conv, seq);
    CREATE TABLE edits (
        conv bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        id bigint NOT NULL,
        at double precision NOT NULL,
        kind text NOT NULL,
        seqs text NOT NULL,
        related_seq bigint NOT NULL DEFAULT 0,
        tokens_saved bigint NOT NULL DEFAULT 0,
        detail text NOT NULL DEFAULT '',
        undone_at double precision,
        PRIMARY KEY (conv, id)
    );
    CREATE TABLE compactions (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        conv bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        number bigint NOT NULL,
        at double precision NOT NULL,
        summary text NOT NULL,
        extractive smallint NOT NULL,
        marker_seq bigint NOT NULL,
        items_archived bigint NOT NULL,
        tokens_before bigint NOT NULL,
        tokens_after bigint NOT NULL,
        ledger text NOT NULL,
        facts text NOT NULL,
        undone_at double precision
    );
    CREATE INDEX compactions_conv ON compactions (conv, marker_seq);
    CREATE TABLE checkpoints (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        conv bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        name text NOT NULL,
        at double precision NOT NULL,
        snapshot text NOT NULL,
        UNIQUE (conv, name)
    );
    CREATE INDEX items_file ON items (conv, file_path) WHERE file_path IS NOT NULL;
    -- Items a replica's indexer is embedding (claims.py), until their vectors are written or
    -- the lease runs out: replicas embed each item once, and take over a dead one's work.
    -- Times are the database's, which every replica shares, whatever its own clock says.
    CREATE TABLE claims (
        item bigint PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
        owner text NOT NULL,
        until timestamptz NOT NULL
    );
    """,
    # API keys: one row per key with the SHA-256 digest of its token, never the token; the
    # scopes as a JSON array, as the SQLite store keeps them.
    """
    CREATE TABLE api_keys (
        key_id text COLLATE "C" PRIMARY KEY,
        name text NOT NULL,
        role text NOT NULL,
        namespaces text NOT NULL,
        created_at double precision NOT NULL,
        expires_at double precision,
        revoked_at double precision,
        token_digest text NOT NULL
    );
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)
