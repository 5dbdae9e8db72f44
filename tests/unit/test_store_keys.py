"""The key store role, the same tests on SQLite and PostgreSQL: keys come back as stored,
listed oldest first, revoked once, and given a new token only while unrevoked."""

from __future__ import annotations

from pathlib import Path

import pytest
from contextwm.adapters.sqlite import SqliteStore
from contextwm.domain.access import ApiKey, Role, StoredKey
from contextwm.domain.errors import AlreadyExists
from stores import T0, RoleStore


def stored(
    key_id: str,
    *,
    created_at: float = T0,
    role: Role = Role.READ,
    namespaces: tuple[str, ...] = ("team-a", "shared/"),
    expires_at: float | None = None,
    digest: str = "",
) -> StoredKey:
    key = ApiKey(key_id, f"key {key_id}", role, namespaces, created_at, expires_at)
    return StoredKey(key, digest or key_id * 4)


def test_a_key_comes_back_as_it_was_added(store: RoleStore) -> None:
    key = stored("0123456789ab", role=Role.ADMIN, namespaces=("*",), expires_at=T0 + 86400.5)
    store.add_key(key)
    assert store.get_key("0123456789ab") == key
    assert store.get_key("ffffffffffff") is None
    # Names and scopes beyond ASCII, and every role, round-trip.
    name = "clé \"quoted\" 'name' ✓"
    odd = StoredKey(ApiKey("aaaaaaaaaaaa", name, Role.WRITE, ("équipe/", "x:y"), T0), "f" * 64)
    store.add_key(odd)
    assert store.get_key("aaaaaaaaaaaa") == odd


def test_keys_are_listed_oldest_first_revoked_ones_too(store: RoleStore) -> None:
    assert store.list_keys() == []
    # Added out of order, two at the same time (ordered by id then).
    keys = [
        stored("cccccccccccc", created_at=T0 + 2),
        stored("bbbbbbbbbbbb", created_at=T0 + 1),
        stored("dddddddddddd", created_at=T0 + 1),
        stored("aaaaaaaaaaaa", created_at=T0 + 3),
    ]
    for key in keys:
        store.add_key(key)
    revoked = store.revoke_key("cccccccccccc", T0 + 10)
    assert revoked is not None
    assert [s.key.key_id for s in store.list_keys()] == [
        "bbbbbbbbbbbb",
        "dddddddddddd",
        "cccccccccccc",
        "aaaaaaaaaaaa",
    ]
    assert store.list_keys()[2] == revoked


def test_a_duplicate_id_is_refused_and_the_first_key_kept(store: RoleStore) -> None:
    first = stored("0123456789ab", digest="1" * 64)
    store.add_key(first)
    with pytest.raises(AlreadyExists, match="0123456789ab"):
        store.add_key(stored("0123456789ab", role=Role.ADMIN, digest="2" * 64))
    assert store.get_key("0123456789ab") == first
    assert len(store.list_keys()) == 1


def test_a_revocation_keeps_its_first_time(store: RoleStore) -> None:
    store.add_key(stored("0123456789ab"))
    store.add_key(stored("ba9876543210"))
    once = store.revoke_key("0123456789ab", T0 + 5)
    assert once is not None and once.key.revoked_at == T0 + 5
    twice = store.revoke_key("0123456789ab", T0 + 50)
    assert twice == once
    got = store.get_key("0123456789ab")
    assert got is not None and got.key.revoked_at == T0 + 5
    # The other key is untouched.
    other = store.get_key("ba9876543210")
    assert other is not None and other.key.revoked_at is None


def test_revoking_an_unknown_key_changes_nothing(store: RoleStore) -> None:
    store.add_key(stored("0123456789ab"))
    assert store.revoke_key("ffffffffffff", T0) is None
    assert [s.key.revoked_at for s in store.list_keys()] == [None]


def test_a_new_token_replaces_the_old_digest_of_an_unrevoked_key_only(store: RoleStore) -> None:
    store.add_key(stored("0123456789ab", digest="1" * 64))
    replaced = store.replace_token("0123456789ab", "2" * 64)
    assert replaced == stored("0123456789ab", digest="2" * 64)
    assert store.get_key("0123456789ab") == replaced
    assert store.replace_token("ffffffffffff", "3" * 64) is None
    store.revoke_key("0123456789ab", T0 + 1)
    assert store.replace_token("0123456789ab", "4" * 64) is None
    got = store.get_key("0123456789ab")
    assert got is not None and got.token_digest == "2" * 64


def test_keys_outlive_the_sqlite_store_closing(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = SqliteStore(path)
    store.add_key(stored("0123456789ab", digest="1" * 64, expires_at=T0 + 60))
    store.replace_token("0123456789ab", "2" * 64)
    store.close()
    again = SqliteStore(path)
    try:
        got = again.get_key("0123456789ab")
        assert got == stored("0123456789ab", digest="2" * 64, expires_at=T0 + 60)
    finally:
        again.close()
