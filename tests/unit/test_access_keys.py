"""The key service on real stores (SQLite, then PostgreSQL): creation and its checks, the
token shown once, rotation, revocation, expiry, and what authentication tells a caller."""

from __future__ import annotations

from pathlib import Path

import pytest
from contextwm.access.keys import Keys
from contextwm.access.tokens import key_id_of, new_token, token_digest
from contextwm.adapters.postgres.store import PostgresStore
from contextwm.adapters.sqlite import SqliteStore
from contextwm.domain.access import Role
from contextwm.domain.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unauthenticated,
)
from stores import T0, RoleStore


class Clock:
    """A wall clock the test moves."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def keys(store: RoleStore, clock: Clock) -> Keys:
    return Keys(store, clock)


def test_a_created_key_is_stored_with_its_digest_and_its_token_authenticates(
    keys: Keys, store: RoleStore
) -> None:
    key, token = keys.create("ci", Role.WRITE, ["team-a", "shared/"], expires_at=T0 + 3600)
    assert key_id_of(token) == key.key_id
    assert (key.name, key.role, key.namespaces) == ("ci", Role.WRITE, ("team-a", "shared/"))
    assert (key.created_at, key.expires_at, key.revoked_at) == (T0, T0 + 3600, None)
    stored = store.get_key(key.key_id)
    assert stored is not None and stored.key == key
    assert stored.token_digest == token_digest(token) != token
    assert keys.authenticate(token) == key
    assert keys.get(key.key_id) == key
    assert keys.list() == [key]


def test_each_key_gets_its_own_id_and_token(keys: Keys, clock: Clock) -> None:
    first, first_token = keys.create("one", Role.READ, ["a"])
    clock.now += 1
    second, second_token = keys.create("two", Role.ADMIN, ["*"])
    assert first.key_id != second.key_id and first_token != second_token
    assert keys.authenticate(first_token).key_id == first.key_id
    assert keys.authenticate(second_token).key_id == second.key_id
    assert [k.key_id for k in keys.list()] == [first.key_id, second.key_id]


def test_duplicate_scopes_are_folded_in_order(keys: Keys) -> None:
    key, _ = keys.create("k", Role.READ, ["b", "a/", "b", "*", "a/"])
    assert key.namespaces == ("b", "a/", "*")


@pytest.mark.parametrize(
    ("namespaces", "message"),
    [
        ([], "at least one namespace"),
        ([""], "empty"),
        (["ok", " team"], "whitespace"),
        (["team a"], "whitespace"),
        (["team\ta"], "whitespace"),
        (["team\x00"], "control"),
        (["team\x7f"], "control"),
        (["t" * 257], "257 characters"),
    ],
)
def test_bad_scopes_are_refused(keys: Keys, namespaces: list[str], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        keys.create("k", Role.READ, namespaces)
    assert keys.list() == []


def test_the_longest_scope_and_name_are_taken(keys: Keys) -> None:
    key, _ = keys.create("n" * 200, Role.READ, ["t" * 256])
    assert key.namespaces == ("t" * 256,) and len(key.name) == 200


@pytest.mark.parametrize(
    ("name", "message"), [("n" * 201, "201 characters"), ("two\nlines", "control")]
)
def test_bad_names_are_refused(keys: Keys, name: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        keys.create(name, Role.READ, ["a"])
    assert keys.list() == []


@pytest.mark.parametrize("expires_at", [T0, T0 - 1, float("nan"), float("inf"), 1e300, -1e300, 0.0])
def test_an_expiry_not_in_the_future_is_refused(keys: Keys, expires_at: float) -> None:
    with pytest.raises(InvalidArgument, match="expiry"):
        keys.create("k", Role.READ, ["a"], expires_at=expires_at)
    assert keys.list() == []


def test_rotation_keeps_the_key_and_replaces_its_token(keys: Keys, clock: Clock) -> None:
    key, old = keys.create("ci", Role.WRITE, ["team-a"], expires_at=T0 + 3600)
    clock.now += 10
    rotated, new = keys.rotate(key.key_id)
    assert rotated == key  # same id, name, role, scopes, creation and expiry
    assert new != old and key_id_of(new) == key.key_id
    with pytest.raises(Unauthenticated, match="not known to this server"):
        keys.authenticate(old)
    assert keys.authenticate(new) == key


def test_revoked_expired_and_unknown_keys_are_not_rotated(keys: Keys, clock: Clock) -> None:
    revoked, revoked_token = keys.create("r", Role.READ, ["a"])
    expiring, expiring_token = keys.create("e", Role.READ, ["a"], expires_at=T0 + 60)
    keys.revoke(revoked.key_id)
    with pytest.raises(FailedPrecondition, match=f"{revoked.key_id} was revoked at 2023-11-14"):
        keys.rotate(revoked.key_id)
    clock.now = T0 + 60
    with pytest.raises(FailedPrecondition, match=f"{expiring.key_id} expired at 2023-11-14"):
        keys.rotate(expiring.key_id)
    with pytest.raises(NotFound, match="ffffffffffff"):
        keys.rotate("ffffffffffff")
    # The refused rotations changed no token.
    clock.now = T0
    assert keys.authenticate(expiring_token) == expiring
    with pytest.raises(Unauthenticated, match="revoked"):
        keys.authenticate(revoked_token)


def test_a_revocation_holds_at_once_and_keeps_its_first_time(keys: Keys, clock: Clock) -> None:
    key, token = keys.create("ci", Role.READ, ["a"])
    other, other_token = keys.create("other", Role.READ, ["a"])
    clock.now = T0 + 5
    revoked = keys.revoke(key.key_id)
    assert revoked.revoked_at == T0 + 5
    clock.now = T0 + 50
    assert keys.revoke(key.key_id).revoked_at == T0 + 5
    assert keys.get(key.key_id).revoked_at == T0 + 5
    with pytest.raises(
        Unauthenticated, match=rf"^API key {key.key_id} was revoked at 2023-11-14 22:13:25 UTC"
    ):
        keys.authenticate(token)
    assert keys.authenticate(other_token) == other
    with pytest.raises(NotFound, match="ffffffffffff"):
        keys.revoke("ffffffffffff")
    with pytest.raises(NotFound, match="ffffffffffff"):
        keys.get("ffffffffffff")


def test_a_key_stops_at_its_expiry(keys: Keys, clock: Clock) -> None:
    key, token = keys.create("ci", Role.READ, ["a"], expires_at=T0 + 60)
    clock.now = T0 + 59.9
    assert keys.authenticate(token) == key
    clock.now = T0 + 60
    with pytest.raises(
        Unauthenticated, match=rf"^API key {key.key_id} expired at 2023-11-14 22:14:20 UTC"
    ):
        keys.authenticate(token)


def test_authentication_tells_nothing_about_a_key_without_its_token(keys: Keys) -> None:
    key, token = keys.create("ci", Role.READ, ["a"])
    keys.revoke(key.key_id)
    wrong_secret = new_token(key.key_id)
    unknown_id = new_token("ffffffffffff")
    messages = []
    for bad in (wrong_secret, unknown_id):
        with pytest.raises(Unauthenticated) as info:
            keys.authenticate(bad)
        messages.append(info.value.message)
    # The same answer for a revoked key's id with a wrong secret and for an unknown id.
    assert messages[0] == messages[1]
    assert "not known to this server" in messages[0] and key.key_id not in messages[0]
    with pytest.raises(Unauthenticated, match="revoked"):
        keys.authenticate(token)


@pytest.mark.parametrize("token", ["", "Bearer x", "cwm_123_456", "cwm_0123456789ab_short"])
def test_a_malformed_token_is_told_its_expected_form(keys: Keys, token: str) -> None:
    with pytest.raises(Unauthenticated, match=r"malformed: expected cwm_<id>_<secret>"):
        keys.authenticate(token)


def test_every_authentication_reads_the_store_so_other_servers_changes_hold_at_once(
    tmp_path: Path, request: pytest.FixtureRequest, clock: Clock
) -> None:
    # Two servers' stores on one SQLite file, then on one PostgreSQL database: a key revoked
    # or rotated through one is refused by the other on its next call.
    pairs: list[tuple[RoleStore, RoleStore]] = [
        (SqliteStore(tmp_path / "s.db"), SqliteStore(tmp_path / "s.db")),
    ]
    dsn = request.getfixturevalue("pg_dsn")
    pairs.append((PostgresStore(dsn), PostgresStore(dsn)))
    try:
        for first_store, second_store in pairs:
            first, second = Keys(first_store, clock), Keys(second_store, clock)
            key, token = first.create("shared", Role.READ, ["a"])
            assert second.authenticate(token) == key
            _, new = first.rotate(key.key_id)
            with pytest.raises(Unauthenticated, match="not known"):
                second.authenticate(token)
            assert second.authenticate(new) == key
            second.revoke(key.key_id)
            with pytest.raises(Unauthenticated, match="revoked"):
                first.authenticate(new)
    finally:
        for a, b in pairs:
            a.close()
            b.close()


def test_a_new_id_that_clashes_with_a_key_is_drawn_again(
    keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken, _ = keys.create("first", Role.READ, ["a"])
    ids = iter([taken.key_id, taken.key_id, "0123456789ab"])
    monkeypatch.setattr("contextwm.access.keys.new_key_id", lambda: next(ids))
    key, token = keys.create("second", Role.WRITE, ["a"])
    assert key.key_id == "0123456789ab" and key_id_of(token) == "0123456789ab"
    assert keys.get(taken.key_id).name == "first"  # the clash changed nothing
    # A clash on every try: AlreadyExists after three, rather than drawing forever.
    monkeypatch.setattr("contextwm.access.keys.new_key_id", lambda: taken.key_id)
    with pytest.raises(AlreadyExists):
        keys.create("third", Role.READ, ["a"])
    assert len(keys.list()) == 2
