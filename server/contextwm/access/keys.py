"""The key service: creates, lists, revokes and rotates API keys, and tells who a token
belongs to."""

from __future__ import annotations

import builtins
import math
import re
from collections.abc import Callable, Sequence

from contextwm.access.times import utc_text
from contextwm.access.tokens import (
    TOKEN_FORM,
    key_id_of,
    new_key_id,
    new_token,
    same_digest,
    token_digest,
)
from contextwm.domain.access import ApiKey, Role, StoredKey
from contextwm.domain.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unauthenticated,
)
from contextwm.ports.key_store import KeyStore

MAX_NAME = 200
MAX_SCOPE = 256
# The last second datetime can show: a later expiry is a mistake (milliseconds for seconds).
LATEST_EXPIRY = 253402300799.0  # 9999-12-31 23:59:59 UTC
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# An id is 48 random bits: a clash with an existing key is rare, not impossible, and a new id
# is better than an error.
_ID_TRIES = 3
# Compared against when a token names no key, so that an unknown id costs what a known one
# does and the answer's timing does not tell which ids exist.
_NO_DIGEST = token_digest("")

MALFORMED = (
    f"the API key is malformed: expected {TOKEN_FORM}; pass the whole token that"
    " `contextwm keys create` or `rotate` printed"
)
UNKNOWN = (
    "the API key is not known to this server: it was never issued here, or it was rotated"
    " since; ask an admin for a key (`contextwm keys create`)"
)


class Keys:
    """API keys over a key store, which it reads on every call: several servers may share
    the store, and a revocation or rotation by one must hold on all of them at once."""

    def __init__(self, store: KeyStore, clock: Callable[[], float]) -> None:
        """
        Args:
            store: Where the keys are kept.
            clock: The wall clock, Unix seconds: creation, revocation and expiry times.
        """
        self._store = store
        self._clock = clock

    def create(
        self,
        name: str,
        role: Role,
        namespaces: Sequence[str],
        expires_at: float | None = None,
    ) -> tuple[ApiKey, str]:
        """Creates a key.

        Args:
            name: What the key is for, for people: up to 200 characters, none of them control
                characters.
            role: What the key may do.
            namespaces: The scopes it may touch: a namespace, a prefix ending in "/", or "*";
                duplicates are folded.
            expires_at: When it stops working, Unix seconds; None: never.

        Returns:
            The key and its token, which exists nowhere else: the store keeps its digest.

        Raises:
            InvalidArgument: no scopes; a scope empty, longer than 256 characters or holding
                whitespace or control characters; a name too long or holding control
                characters; an expiry not in the future.
        """
        scopes = _scopes(namespaces)
        _check_name(name)
        now = self._clock()
        if expires_at is not None:
            _check_expiry(expires_at, now)
        for _ in range(_ID_TRIES - 1):
            try:
                return self._add(ApiKey(new_key_id(), name, role, scopes, now, expires_at))
            except AlreadyExists:
                pass
        return self._add(ApiKey(new_key_id(), name, role, scopes, now, expires_at))

    def list(self) -> builtins.list[ApiKey]:
        """Every key, revoked and expired ones too, oldest first."""
        return [stored.key for stored in self._store.list_keys()]

    def get(self, key_id: str) -> ApiKey:
        """The key with this id.

        Raises:
            NotFound: there is none.
        """
        return self._stored(key_id).key

    def revoke(self, key_id: str) -> ApiKey:
        """Revokes a key: its token stops working at once. A key revoked already keeps the
        time of its first revocation.

        Returns:
            The key as it is now.

        Raises:
            NotFound: there is no key with this id.
        """
        stored = self._store.revoke_key(key_id, self._clock())
        if stored is None:
            raise _not_found(key_id)
        return stored.key

    def rotate(self, key_id: str) -> tuple[ApiKey, str]:
        """Gives a key a new token; the old one stops working at once. The id, name, role,
        scopes and expiry stay.

        Returns:
            The key and its new token, shown once.

        Raises:
            NotFound: there is no key with this id.
            FailedPrecondition: the key is revoked or expired.
        """
        key = self._stored(key_id).key
        _check_rotatable(key, self._clock())
        token = new_token(key_id)
        stored = self._store.replace_token(key_id, token_digest(token))
        if stored is None:  # revoked meanwhile (or gone): say which, as read now
            _check_rotatable(self._stored(key_id).key, self._clock())
            raise FailedPrecondition(f"API key {key_id} changed while it was rotated; retry")
        return stored.key, token

    def authenticate(self, token: str) -> ApiKey:
        """The live key a token belongs to.

        Whether the key is revoked or expired is told only to a caller holding its token:
        an unknown id and a wrong secret get the same answer.

        Raises:
            Unauthenticated: the token is malformed, unknown, wrong, revoked or expired; the
                message says which and what to do.
        """
        key_id = key_id_of(token)
        if key_id is None:
            raise Unauthenticated(MALFORMED)
        stored = self._store.get_key(key_id)
        expected = stored.token_digest if stored is not None else _NO_DIGEST
        if not same_digest(token_digest(token), expected) or stored is None:
            raise Unauthenticated(UNKNOWN)
        key = stored.key
        if key.revoked_at is not None:
            raise Unauthenticated(
                f"API key {key_id} was revoked at {utc_text(key.revoked_at)}; ask an admin"
                " for a new key"
            )
        if key.expires_at is not None and self._clock() >= key.expires_at:
            raise Unauthenticated(
                f"API key {key_id} expired at {utc_text(key.expires_at)}; ask an admin for"
                " a new key"
            )
        return key

    def _add(self, key: ApiKey) -> tuple[ApiKey, str]:
        """Stores a new key with a new token; returns both. Raises AlreadyExists."""
        token = new_token(key.key_id)
        self._store.add_key(StoredKey(key, token_digest(token)))
        return key, token

    def _stored(self, key_id: str) -> StoredKey:
        stored = self._store.get_key(key_id)
        if stored is None:
            raise _not_found(key_id)
        return stored


def _scopes(namespaces: Sequence[str]) -> tuple[str, ...]:
    """The scopes, checked, in the order given without repeats."""
    if isinstance(namespaces, str):  # a lone name would become one scope per character
        namespaces = [namespaces]
    if not namespaces:
        raise InvalidArgument(
            "an API key needs at least one namespace scope: a namespace, a prefix ending in"
            ' "/", or "*" for every namespace'
        )
    for scope in namespaces:
        if not scope:
            raise InvalidArgument("a namespace scope is empty: give a namespace, a prefix, or *")
        if len(scope) > MAX_SCOPE:
            raise InvalidArgument(
                f"namespace scope {scope[:40]!r}... has {len(scope)} characters; at most"
                f" {MAX_SCOPE}"
            )
        if any(c.isspace() for c in scope) or _CONTROL.search(scope):
            raise InvalidArgument(
                f"namespace scope {scope!r} holds whitespace or control characters, which no"
                " namespace has"
            )
    return tuple(dict.fromkeys(namespaces))


def _check_name(name: str) -> None:
    if len(name) > MAX_NAME:
        raise InvalidArgument(f"the key's name has {len(name)} characters; at most {MAX_NAME}")
    # A name is shown in listings, one line per key; a NUL PostgreSQL would refuse.
    if _CONTROL.search(name):
        raise InvalidArgument(f"the key's name {name!r} holds control characters")


def _check_expiry(expires_at: float, now: float) -> None:
    if not (math.isfinite(expires_at) and 0 < expires_at <= LATEST_EXPIRY):
        raise InvalidArgument(
            f"the expiry {expires_at!r} is not a time between 1970 and the year 10000"
        )
    if expires_at <= now:
        raise InvalidArgument(
            f"the expiry {utc_text(expires_at)} is not in the future (now: {utc_text(now)})"
        )


def _check_rotatable(key: ApiKey, now: float) -> None:
    if key.revoked_at is not None:
        raise FailedPrecondition(
            f"API key {key.key_id} was revoked at {utc_text(key.revoked_at)}: a revoked key"
            " gets no new token; create a new key"
        )
    if key.expires_at is not None and now >= key.expires_at:
        raise FailedPrecondition(
            f"API key {key.key_id} expired at {utc_text(key.expires_at)}: an expired key gets"
            " no new token; create a new key"
        )


def _not_found(key_id: str) -> NotFound:
    return NotFound(f"no API key {key_id!r}; `contextwm keys list` shows the keys")
