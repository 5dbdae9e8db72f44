"""`contextwm keys` run as an operator runs it: the first admin key made offline on a fresh
data directory, listed without its token, rotated and revoked, beside a running server,
on PostgreSQL, and carried along by `contextwm move`; bad input refused in one line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from contextwm.access.keys import Keys
from contextwm.adapters.postgres.store import PostgresStore
from contextwm.adapters.sqlite import SqliteStore
from contextwm.datadir.layout import DataDir
from contextwm.domain.access import Role
from contextwm.domain.errors import Unauthenticated
from contextwm_client import Client
from server_process import ServerProcess

TOKEN = re.compile(r"cwm_([0-9a-f]{12})_[0-9a-f]{64}")


def cwm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextwm", *args], capture_output=True, text=True, timeout=120
    )


def in_dir(data: Path) -> tuple[str, str]:
    return ("--data-dir", str(data))


def create(
    where: tuple[str, ...], name: str, role: str, *scopes: str, expires: str = ""
) -> subprocess.CompletedProcess[str]:
    args = ["keys", "create", *where, "--name", name, "--role", role]
    for scope in scopes:
        args += ["--namespace", scope]
    return cwm(*args, *(["--expires", expires] if expires else []))


def token_of(result: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    """The token a `create` or `rotate` printed, alone on stdout, and its key id."""
    assert result.returncode == 0, result.stderr
    match = TOKEN.fullmatch(result.stdout.removesuffix("\n"))
    assert match, result.stdout
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "shown once: store it now" in result.stderr and match[1] in result.stderr
    return match[0], match[1]


@contextmanager
def sqlite_keys(data: Path) -> Iterator[Keys]:
    """The keys of a data directory, read through a store of the test's own."""
    store = SqliteStore(DataDir(data).store)
    try:
        yield Keys(store, time.time)
    finally:
        store.close()


def test_the_first_admin_key_is_made_offline_then_listed_rotated_and_revoked(
    tmp_path: Path,
) -> None:
    data = tmp_path / "never-served"
    token, key_id = token_of(create(in_dir(data), "ops", "admin", "*"))
    assert DataDir(data).store.is_file()
    made = create(in_dir(data), "ci", "write", "team-a", "shared/", expires="30d")
    ci_token, ci_id = token_of(made)
    assert f"API key {ci_id} created: role write, namespaces team-a shared/" in made.stderr

    listed = cwm("keys", "list", *in_dir(data))
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["ID", "NAME", "ROLE", "NAMESPACES", "CREATED", "EXPIRES", "REVOKED"]
    assert [row.split()[:4] for row in rows] == [
        [key_id, "ops", "admin", "*"],
        [ci_id, "ci", "write", "team-a,shared/"],
    ]
    as_json = cwm("keys", "list", *in_dir(data), "--json")
    keys = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [(k["key_id"], k["role"], k["namespaces"], k["revoked_at"]) for k in keys] == [
        (key_id, "admin", ["*"], None),
        (ci_id, "write", ["team-a", "shared/"], None),
    ]
    assert keys[0]["expires_at"] is None and keys[1]["expires_at"] > keys[1]["created_at"]
    # Never a token, its secret, nor its digest.
    store = SqliteStore(DataDir(data).store)
    digests = [stored.token_digest for stored in store.list_keys()]
    store.close()
    for shown in (listed.stdout, as_json.stdout):
        for secret in (token, ci_token, token.split("_")[2], *digests):
            assert secret not in shown

    new_token, same_id = token_of(cwm("keys", "rotate", *in_dir(data), key_id))
    assert same_id == key_id and new_token != token
    with sqlite_keys(data) as held:
        with pytest.raises(Unauthenticated, match="not known to this server"):
            held.authenticate(token)
        assert held.authenticate(new_token).role is Role.ADMIN
        assert held.authenticate(ci_token).namespaces == ("team-a", "shared/")

    revoked = cwm("keys", "revoke", *in_dir(data), key_id)
    assert revoked.returncode == 0, revoked.stderr
    assert re.fullmatch(rf"API key {key_id} \(ops\) revoked at .* UTC\n", revoked.stdout)
    again = cwm("keys", "revoke", *in_dir(data), key_id)
    assert (again.returncode, again.stdout) == (0, revoked.stdout)  # the first time kept
    with sqlite_keys(data) as held:
        with pytest.raises(Unauthenticated, match=f"API key {key_id} was revoked at"):
            held.authenticate(new_token)
        assert held.authenticate(ci_token).key_id == ci_id

    # Refused: a revoked key is not rotated; an unknown one is neither revoked nor rotated.
    for action, target in (("rotate", key_id), ("revoke", "f" * 12), ("rotate", "f" * 12)):
        refused = cwm("keys", action, *in_dir(data), target)
        assert refused.returncode == 1 and refused.stdout == ""
        assert len(refused.stderr.splitlines()) == 1 and refused.stderr.startswith("error: ")
        assert target in refused.stderr


BAD = {
    "role": (("root", "a"), "", "role 'root' is not one of read, write, admin"),
    "no scope": (("read",), "", "the following arguments are required: --namespace"),
    "empty scope": (("read", ""), "", "scope is empty"),
    "spaced scope": (("read", "team a"), "", "whitespace"),
    "long scope": (("read", "t" * 257), "", "at most 256"),
    "expiry form": (("read", "a"), "3y", "is not a duration (30d, 12h, 90m)"),
    "past expiry": (("read", "a"), "2001-01-01", "not in the future"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_refused_in_one_line_and_makes_no_key(tmp_path: Path, case: str) -> None:
    data = tmp_path / "data"
    (role, *scopes), expires, message = BAD[case]
    result = create(in_dir(data), "x", role, *scopes, expires=expires)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("error: ")
    assert message in result.stderr
    if DataDir(data).store.exists():
        assert cwm("keys", "list", *in_dir(data), "--json").stdout == ""


def test_usage_errors_are_one_line_too(tmp_path: Path) -> None:
    for result, message in (
        (cwm("keys", "create", "--name", "x", "--role", "read", "--namespace", "a"), "--data-dir"),
        (create(("--store", "mysql://db"), "x", "read", "a"), "--store must be a postgresql://"),
        (cwm("keys", "revoke", *in_dir(tmp_path)), "required: KEY_ID"),
        (create(in_dir(tmp_path), "n" * 201, "read", "a"), "201 characters; at most 200"),
    ):
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.splitlines()) == 1 and message in result.stderr


@pytest.mark.slow
def test_keys_are_managed_while_a_server_runs_on_the_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first, _ = token_of(create(in_dir(data), "before", "admin", "*"))
    server = ServerProcess(data, "--embedder", "hashing")  # serves the store the CLI made
    try:
        with Client(server.target) as client:
            client.append("c", "served while keys change")
            token, key_id = token_of(create(in_dir(data), "during", "read", "default"))
            rotated, _ = token_of(cwm("keys", "rotate", *in_dir(data), key_id))
            assert cwm("keys", "revoke", *in_dir(data), key_id).returncode == 0
            client.append("c", "and after")
            assert client.get_conversation("c").total_items == 2
        with sqlite_keys(data) as held:
            assert held.authenticate(first).name == "before"
            for gone in (token, rotated):
                with pytest.raises(Unauthenticated):
                    held.authenticate(gone)
    finally:
        assert server.terminate() == 0
    check = cwm("check", str(data))
    assert check.returncode == 0, check.stdout + check.stderr


def test_keys_on_postgresql_and_carried_along_by_move(tmp_path: Path, pg_dsn: str) -> None:
    data = tmp_path / "data"
    live, live_id = token_of(create(in_dir(data), "live", "write", "team-a"))
    gone, gone_id = token_of(create(in_dir(data), "gone", "read", "team-a"))
    assert cwm("keys", "revoke", *in_dir(data), gone_id).returncode == 0

    moved = cwm("move", str(data), "--to", pg_dsn)
    assert moved.returncode == 0, moved.stderr
    assert "moved 2 API keys, 0 were there already" in moved.stdout
    store = PostgresStore(pg_dsn)
    try:
        keys = Keys(store, time.time)
        assert keys.authenticate(live).key_id == live_id
        with pytest.raises(Unauthenticated, match="revoked"):
            keys.authenticate(gone)
        # Managed on the database itself, beside the moved keys.
        made, made_id = token_of(create(("--store", pg_dsn), "pg", "admin", "*"))
        assert keys.authenticate(made).role is Role.ADMIN
        listed = cwm("keys", "list", "--store", pg_dsn, "--json")
        ids = [json.loads(line)["key_id"] for line in listed.stdout.splitlines()]
        assert ids == [live_id, gone_id, made_id]

        # Moved again after a revocation in the directory: the revocation follows.
        assert cwm("keys", "revoke", *in_dir(data), live_id).returncode == 0
        again = cwm("move", str(data), "--to", pg_dsn)
        assert again.returncode == 0, again.stderr
        assert "moved 0 API keys, 2 were there already" in again.stdout
        with pytest.raises(Unauthenticated, match="revoked"):
            keys.authenticate(live)
    finally:
        store.close()


def test_keys_are_managed_through_a_server_with_an_admin_key(
    tmp_path: Path, start_service: Any
) -> None:
    service = start_service(require_api_keys=True, data_dir=tmp_path / "data")
    admin, _ = token_of(create(in_dir(tmp_path / "data"), "root", "admin", "*"))
    server = ("--server", f"127.0.0.1:{service.port}")

    refused = cwm("keys", "list", *server)  # no key
    assert refused.returncode == 1 and "UNAUTHENTICATED" in refused.stderr
    scoped, _ = token_of(create((*server, "--api-key", admin), "ci", "admin", "team-a/"))
    refused = cwm("keys", "list", *server, "--api-key", scoped)  # not for every namespace
    assert refused.returncode == 1 and "PERMISSION_DENIED" in refused.stderr

    listed = subprocess.run(
        [sys.executable, "-m", "contextwm", "keys", "list", *server, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CONTEXTWM_API_KEY": admin},
    )
    assert listed.returncode == 0, listed.stderr
    names = [json.loads(line)["name"] for line in listed.stdout.splitlines()]
    assert names == ["root", "ci"]
    bad = create((*server, "--api-key", admin), "x", "admin", "bad scope!")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1, bad.stderr


def test_offline_changes_go_to_the_audit_log_given(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    where = (*in_dir(tmp_path / "data"), "--audit-log", str(audit))
    token, key_id = token_of(create(where, "ops", "admin", "*"))
    assert cwm("keys", "revoke", *where, key_id).returncode == 0
    assert cwm("keys", "list", *where).returncode == 0  # a read: not recorded
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r["method"], r["outcome"], r["target_key"], r["key_id"]) for r in lines] == [
        ("keys create", "OK", key_id, None),
        ("keys revoke", "OK", key_id, None),
    ]
    assert token not in audit.read_text()
    bad = cwm("keys", "list", *in_dir(tmp_path / "data"), "--audit-log", str(tmp_path))
    assert bad.returncode == 2 and "cannot open it for appending" in bad.stderr
