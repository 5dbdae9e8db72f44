"""API keys as every layer sees them: a role and the namespaces a key may touch."""

from __future__ import annotations

import enum
from dataclasses import dataclass

# A scope ending in this is a prefix ("team-a/" covers "team-a/x"); "*" covers every namespace.
PREFIX_MARK = "/"
EVERY_NAMESPACE = "*"


class Role(enum.IntEnum):
    """What a key may do; each role may do everything the ones below it may."""

    READ = 1  # context, search, lists, stats, watch, file reads
    WRITE = 2  # also appends, edits, imports, compaction, checkpoints, settings
    ADMIN = 3  # also keys, retention, re-embedding, every namespace's stats

    @classmethod
    def parse(cls, name: str) -> Role:
        """The role named `name` ("read", "write" or "admin", any case).

        Raises:
            ValueError: another name; the message lists the three.
        """
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise ValueError(f"role {name!r} is not one of read, write, admin") from None


def covers(scopes: tuple[str, ...], namespace: str) -> bool:
    """Whether a key with these scopes may touch `namespace`: an exact name, a prefix ending
    in "/", or "*"."""
    for scope in scopes:
        if scope in (EVERY_NAMESPACE, namespace):
            return True
        if scope.endswith(PREFIX_MARK) and namespace.startswith(scope):
            return True
    return False


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key as it is stored and shown: never its secret, which exists only in the token
    handed out once at creation (or rotation).

    key_id is safe to log; created_at, expires_at and revoked_at are Unix seconds."""

    key_id: str
    name: str
    role: Role
    namespaces: tuple[str, ...]
    created_at: float
    expires_at: float | None = None
    revoked_at: float | None = None

    def covers(self, namespace: str) -> bool:
        return covers(self.namespaces, namespace)

    @property
    def covers_every_namespace(self) -> bool:
        return EVERY_NAMESPACE in self.namespaces

    def live(self, now: float) -> bool:
        """Neither revoked nor expired at `now`."""
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)


@dataclass(frozen=True, slots=True)
class StoredKey:
    """A key with the SHA-256 digest (hex) of its token, as the store keeps it."""

    key: ApiKey
    token_digest: str
