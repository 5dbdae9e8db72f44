"""API keys kept in the store, so every server sharing it honours a change at once."""

from __future__ import annotations

from typing import Protocol

from contextwm.domain.access import StoredKey


class KeyStore(Protocol):
    """Keys by id; durable once a call returns."""

    def add_key(self, stored: StoredKey) -> None:
        """Stores a new key.

        Raises:
            AlreadyExists: a key with its id exists.
        """
        ...

    def get_key(self, key_id: str) -> StoredKey | None:
        """The key with this id, revoked or not; None if there is none."""
        ...

    def list_keys(self) -> list[StoredKey]:
        """Every key, revoked ones too, oldest first."""
        ...

    def revoke_key(self, key_id: str, at: float) -> StoredKey | None:
        """Marks the key revoked at `at` (a key revoked already keeps its first time);
        returns it as stored now, or None if there is none."""
        ...

    def replace_token(self, key_id: str, token_digest: str) -> StoredKey | None:
        """Gives an unrevoked key a new token (its old one stops working at once); returns it
        as stored now, or None if there is no unrevoked key with this id."""
        ...
