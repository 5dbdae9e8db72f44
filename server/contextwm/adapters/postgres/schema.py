"""The PostgreSQL store's schema, as the migrations that build it, one per version."""

from __future__ import annotations

# MIGRATIONS[n] brings a database at version n to version n + 1; each runs in the same
# transaction as the version it records.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE conversations (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        namespace text NOT NULL,
        conversation_id text NOT NULL,
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
        UNIQUE (namespace, conversation_id)
    );
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)
