"""API keys as the rows both stores keep: the role by name, the scopes as a JSON array."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from contextwm.domain.access import ApiKey, Role, StoredKey

# The columns of api_keys in the order key_row writes them and stored_key_of reads them.
KEY_COLUMNS = (
    "key_id",
    "name",
    "role",
    "namespaces",
    "created_at",
    "expires_at",
    "revoked_at",
    "token_digest",
)


def key_row(stored: StoredKey) -> tuple[Any, ...]:
    """The row of a key, in KEY_COLUMNS order. The role is kept by name rather than by its
    number, so a reordered enum never changes what a stored key may do."""
    key = stored.key
    return (
        key.key_id,
        key.name,
        key.role.name.lower(),
        json.dumps(list(key.namespaces), separators=(",", ":")),
        key.created_at,
        key.expires_at,
        key.revoked_at,
        stored.token_digest,
    )


def stored_key_of(row: Sequence[Any]) -> StoredKey:
    """The key a row in KEY_COLUMNS order holds."""
    key_id, name, role, namespaces, created_at, expires_at, revoked_at, digest = row
    key = ApiKey(
        key_id=key_id,
        name=name,
        role=Role.parse(role),
        namespaces=tuple(json.loads(namespaces)),
        created_at=created_at,
        expires_at=expires_at,
        revoked_at=revoked_at,
    )
    return StoredKey(key, digest)
