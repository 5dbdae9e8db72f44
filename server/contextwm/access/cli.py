"""`contextwm keys create|list|revoke|rotate`: API keys managed on a data directory's SQLite
store or a PostgreSQL database, whether a server runs on it or not, or through a running
server with an admin key.

No server is needed and none is disturbed: the store is opened beside it (SQLite's WAL takes
another writer; the data directory's lock, which keeps a second server off, is not taken), and
a server reads the keys on every call, so a change holds there at once.
"""

from __future__ import annotations

import argparse
import builtins
import json
import logging
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from contextwm_client import ApiKey as ClientKey
from contextwm_client import Client, InvalidArgumentError
from contextwm_client import ContextWMError as ClientError

from contextwm.access.keys import Keys
from contextwm.access.times import expiry_of, utc_text
from contextwm.domain.access import ApiKey, Role
from contextwm.domain.errors import ContextWMError, FailedPrecondition, InvalidArgument
from contextwm.observability.audit import AuditLog, CallSubject
from contextwm.ports.key_store import KeyStore
from contextwm.ports.store_lifecycle import StoreLifecycle

_Answer = TypeVar("_Answer")

DONE = 0
REFUSED = 1  # an unknown, revoked or expired key; a store that cannot be used
BAD_INPUT = 2  # a bad role, scope, name or expiry; a --store that is no PostgreSQL URL


class KeyAdmin(Protocol):
    """What the command does with keys, wherever they are kept: `Keys` over a store opened
    here, or `ServerKeys` through a running server.

    Implementations raise the domain's errors: InvalidArgument for bad input, NotFound and
    FailedPrecondition for a key that cannot be revoked or rotated.
    """

    def create(
        self, name: str, role: Role, namespaces: Sequence[str], expires_at: float | None = None
    ) -> tuple[ApiKey, str]: ...

    def list(self) -> builtins.list[ApiKey]: ...

    def revoke(self, key_id: str) -> ApiKey: ...

    def rotate(self, key_id: str) -> tuple[ApiKey, str]: ...


class _KeyFile(KeyStore, StoreLifecycle, Protocol):
    """The roles of a store opened here: its keys, and closing it."""


class _Refused(Exception):
    """The store cannot be opened or used; the message is one line for the operator."""

    def __init__(self, message: str, status: int = REFUSED) -> None:
        super().__init__(message)
        self.status = status


def run_keys(args: argparse.Namespace) -> int:
    """Runs `contextwm keys ACTION` on args.data_dir or args.store.

    Returns:
        DONE, REFUSED or BAD_INPUT; every error is one line on stderr.
    """
    try:
        if args.server is not None:
            with _remote(args) as admin:  # the server keeps its own audit trail
                return run(admin, args, time.time)
        with _offline(args) as admin, _audit_log(args.audit_log) as audit:
            return run(admin if audit is None else AuditedKeys(admin, audit), args, time.time)
    except _Refused as exc:
        return _error(str(exc), exc.status)
    except KeyboardInterrupt:
        return 130


def run(admin: KeyAdmin, args: argparse.Namespace, clock: Callable[[], float]) -> int:
    """Runs one action through `admin`: its output on stdout, notes and errors on stderr.

    Args:
        admin: Where the keys are.
        args: The parsed `keys` arguments (keys_command and the action's own).
        clock: The wall clock, for --expires given as a duration.

    Returns:
        DONE, REFUSED or BAD_INPUT.
    """
    try:
        if args.keys_command == "create":
            return _create(admin, args, clock)
        if args.keys_command == "list":
            return _list(admin, as_json=args.json)
        if args.keys_command == "revoke":
            return _revoke(admin, args.key_id)
        return _rotate(admin, args.key_id)
    except InvalidArgument as exc:
        return _error(exc.message, BAD_INPUT)
    except ContextWMError as exc:
        return _error(exc.message, REFUSED)
    except ValueError as exc:  # a role or an expiry that does not parse
        return _error(str(exc), BAD_INPUT)


def _create(admin: KeyAdmin, args: argparse.Namespace, clock: Callable[[], float]) -> int:
    role = Role.parse(args.role)
    expires_at = None if args.expires is None else expiry_of(args.expires, clock())
    key, token = admin.create(args.name, role, args.namespaces, expires_at)
    _token_out(token, f"API key {key.key_id} created: {_grant(key)}")
    return DONE


def _rotate(admin: KeyAdmin, key_id: str) -> int:
    key, token = admin.rotate(key_id)
    _token_out(
        token, f"API key {key.key_id} rotated, its old token refused from now: {_grant(key)}"
    )
    return DONE


def _revoke(admin: KeyAdmin, key_id: str) -> int:
    key = admin.revoke(key_id)
    assert key.revoked_at is not None  # what a revocation returns
    print(f"API key {key.key_id} ({key.name}) revoked at {utc_text(key.revoked_at)}")
    return DONE


def _token_out(token: str, note: str) -> None:
    """The token alone on stdout, so that `$(contextwm keys create ...)` captures it; the
    note on stderr, where a person sees it."""
    print(token, flush=True)
    print(f"{note}; the token is shown once: store it now", file=sys.stderr)


def _grant(key: ApiKey) -> str:
    expires = "never" if key.expires_at is None else utc_text(key.expires_at)
    return f"role {_role(key)}, namespaces {' '.join(key.namespaces)}, expires {expires}"


HEADINGS = ("ID", "NAME", "ROLE", "NAMESPACES", "CREATED", "EXPIRES", "REVOKED")


def _list(admin: KeyAdmin, *, as_json: bool) -> int:
    keys = admin.list()
    if as_json:
        for key in keys:
            print(json.dumps(_key_json(key), ensure_ascii=False))
        return DONE
    if not keys:
        print("no API keys", file=sys.stderr)
        return DONE
    rows = [HEADINGS, *(_key_row(key) for key in keys)]
    widths = [max(len(row[n]) for row in rows) for n in range(len(HEADINGS) - 1)]
    for row in rows:
        print("  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]))
    return DONE


def _key_row(key: ApiKey) -> tuple[str, ...]:
    return (
        key.key_id,
        key.name or "-",
        _role(key),
        ",".join(key.namespaces),
        utc_text(key.created_at),
        "never" if key.expires_at is None else utc_text(key.expires_at),
        "-" if key.revoked_at is None else utc_text(key.revoked_at),
    )


def _key_json(key: ApiKey) -> dict[str, Any]:
    """A key for programs: times as ISO 8601 in UTC, as the other commands' JSON has them."""

    def iso(seconds: float | None) -> str | None:
        return None if seconds is None else datetime.fromtimestamp(seconds, UTC).isoformat()

    return {
        "key_id": key.key_id,
        "name": key.name,
        "role": _role(key),
        "namespaces": list(key.namespaces),
        "created_at": iso(key.created_at),
        "expires_at": iso(key.expires_at),
        "revoked_at": iso(key.revoked_at),
    }


def _role(key: ApiKey) -> str:
    return key.role.name.lower()


def _error(message: str, status: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return status


class AuditedKeys:
    """A KeyAdmin whose every change is recorded in an audit trail: for changes made
    offline, which no server sees being made."""

    def __init__(self, inner: KeyAdmin, audit: AuditLog) -> None:
        self._inner = inner
        self._audit = audit

    def create(
        self, name: str, role: Role, namespaces: Sequence[str], expires_at: float | None = None
    ) -> tuple[ApiKey, str]:
        key, token = self._inner.create(name, role, namespaces, expires_at)
        self._changed("keys create", key)
        return key, token

    def list(self) -> builtins.list[ApiKey]:
        return self._inner.list()

    def revoke(self, key_id: str) -> ApiKey:
        key = self._inner.revoke(key_id)
        self._changed("keys revoke", key)
        return key

    def rotate(self, key_id: str) -> tuple[ApiKey, str]:
        key, token = self._inner.rotate(key_id)
        self._changed("keys rotate", key)
        return key, token

    def _changed(self, method: str, key: ApiKey) -> None:
        self._audit.record(method, "OK", subject=CallSubject(target_key=key.key_id))


class ServerKeys:
    """Keys through a running server's key calls: a KeyAdmin over gRPC."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def create(
        self, name: str, role: Role, namespaces: Sequence[str], expires_at: float | None = None
    ) -> tuple[ApiKey, str]:
        expires = None if expires_at is None else datetime.fromtimestamp(expires_at, UTC)
        made = self._call(
            self._client.create_key, name, role.name.lower(), namespaces, expires_at=expires
        )
        return _from_client(made.key), made.token

    def list(self) -> builtins.list[ApiKey]:
        return [_from_client(k) for k in self._call(self._client.list_keys)]

    def revoke(self, key_id: str) -> ApiKey:
        return _from_client(self._call(self._client.revoke_key, key_id))

    def rotate(self, key_id: str) -> tuple[ApiKey, str]:
        made = self._call(self._client.rotate_key, key_id)
        return _from_client(made.key), made.token

    @staticmethod
    def _call(method: Callable[..., _Answer], *args: Any, **kwargs: Any) -> _Answer:
        """The call's answer; its failure as the domain's error, which `run` reports."""
        try:
            return method(*args, **kwargs)
        except InvalidArgumentError as exc:
            raise InvalidArgument(exc.details) from exc
        except ClientError as exc:
            raise FailedPrecondition(f"{exc.code}: {exc.details}") from exc


def _from_client(key: ClientKey) -> ApiKey:
    def seconds(moment: datetime | None) -> float | None:
        return None if moment is None else moment.timestamp()

    return ApiKey(
        key_id=key.key_id,
        name=key.name,
        role=Role.parse(key.role),
        namespaces=key.namespaces,
        created_at=key.created_at.timestamp(),
        expires_at=seconds(key.expires_at),
        revoked_at=seconds(key.revoked_at),
    )


@contextmanager
def _audit_log(path: str | None) -> Iterator[AuditLog | None]:
    """The audit trail --audit-log names, opened for the command (None: none).

    Raises:
        _Refused: it cannot be opened for appending (BAD_INPUT).
    """
    if not path:
        yield None
        return
    try:
        audit = AuditLog.open(path, time.time)
    except OSError as exc:
        raise _Refused(
            f"--audit-log {path}: cannot open it for appending: {exc.strerror}", BAD_INPUT
        ) from exc
    assert audit is not None
    try:
        yield audit
    finally:
        audit.close()


@contextmanager
def _remote(args: argparse.Namespace) -> Iterator[KeyAdmin]:
    """Keys through the server args.server names, with the connection options given.

    Raises:
        _Refused: a bad key or TLS option (BAD_INPUT).
    """
    from contextwm.cli.connection import connection_of

    try:
        credentials = connection_of(args)
        client = Client(args.server, api_key=credentials.api_key, tls=credentials.tls)
    except (ValueError, OSError) as exc:
        raise _Refused(str(exc), BAD_INPUT) from exc
    with client:
        yield ServerKeys(client)


@contextmanager
def _offline(args: argparse.Namespace) -> Iterator[KeyAdmin]:
    """Keys over the store args name, opened here and closed after.

    Raises:
        _Refused: the store cannot be opened (damaged, unreachable, newer), or --store is
            not a PostgreSQL URL.
    """
    opened = _postgres(args.store) if args.store is not None else _sqlite(args.data_dir)
    try:
        yield Keys(opened, time.time)
    except sqlite3.Error as exc:  # the file went bad, or is read-only, under the command
        raise _Refused(f"the store cannot be used: {exc}") from exc
    finally:
        opened.close()


def _sqlite(data_dir: Path) -> _KeyFile:
    """The data directory's store, created with the directory if missing; a damaged store,
    or one missing where index files show there was one, is refused rather than written."""
    from contextwm.adapters.sqlite import SqliteStore
    from contextwm.adapters.sqlite.guard import UnusableStore
    from contextwm.datadir.layout import DataDir
    from contextwm.datadir.startup import refuse_unusable

    data = DataDir(data_dir)
    try:
        data.root.mkdir(parents=True, exist_ok=True)
        refuse_unusable(data)
        return SqliteStore(data.store)
    except UnusableStore as exc:
        raise _Refused(str(exc)) from exc
    except (OSError, sqlite3.Error, RuntimeError) as exc:  # RuntimeError: a newer schema
        raise _Refused(f"cannot open the store in {data.root}: {exc}") from exc


def _postgres(dsn: str) -> _KeyFile:
    if not dsn.startswith(("postgresql://", "postgres://")):
        raise _Refused("--store must be a postgresql:// URL", BAD_INPUT)
    from contextwm.adapters.postgres.database import StoreUnavailable
    from contextwm.adapters.postgres.store import PostgresStore

    # The pool logs each failed connection attempt; the one line below says it all.
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)

    try:
        return PostgresStore(dsn)
    except (StoreUnavailable, RuntimeError) as exc:
        raise _Refused(str(exc)) from exc
