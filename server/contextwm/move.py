"""`contextwm move DIR --to postgresql://...`: copies every conversation of a data directory's
SQLite store into PostgreSQL, with its stored vectors, through the same dump and load that
export and restore use; then checks that the database holds each one exactly. Its API keys
come along, so that they still work there.

Each conversation is written in one transaction, so an interrupted move leaves whole
conversations behind: run the command again and it copies the rest, skipping those already
there exactly (a conversation there with other rows stops it, rather than being
overwritten). The data directory is only read, and locked meanwhile so that no server
starts on it and changes it.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import Protocol

from contextwm.adapters.sqlite import SqliteStore
from contextwm.cli.render import counted
from contextwm.datadir.layout import DataDir
from contextwm.datadir.lock import DataDirInUse, DataDirLock
from contextwm.domain.errors import ContextWMError
from contextwm.ports.conversation_store import ConversationStore
from contextwm.ports.conversation_transfer import ConversationTransfer
from contextwm.ports.key_store import KeyStore
from contextwm.ports.retention_store import RetentionStore


class Store(ConversationStore, RetentionStore, ConversationTransfer, KeyStore, Protocol):
    """The roles a move uses of each store: its conversations, listed and read whole, or
    written whole, and its API keys."""


MOVED = 0
DIFFERS = 1  # the check at the end found a conversation that is not as in the directory
NOT_MOVED = 2  # no store there, a server runs on it, the database is unreachable, ...


def run_move(args: argparse.Namespace) -> int:
    """Moves args.data_dir's store into args.to; prints progress and the outcome."""
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
    data = DataDir(args.data_dir)
    if not data.store.is_file():
        print(f"error: {data.root} holds no contextwm store ({data.store.name})", file=sys.stderr)
        return NOT_MOVED
    if not args.to.startswith(("postgresql://", "postgres://")):
        print("error: --to must be a postgresql:// URL", file=sys.stderr)
        return NOT_MOVED
    try:
        lock = DataDirLock.take(data)
    except DataDirInUse as exc:
        print(
            f"error: {exc} `contextwm move` reads a directory no server has open.", file=sys.stderr
        )
        return NOT_MOVED
    try:
        from contextwm.adapters.postgres.database import StoreUnavailable
        from contextwm.adapters.postgres.store import PostgresStore

        source = SqliteStore(data.store)
        try:
            target = PostgresStore(args.to)
        except StoreUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return NOT_MOVED
        try:
            return _move(source, target)
        finally:
            target.close()
            source.close()
    finally:
        lock.release()


def _move(source: Store, target: Store) -> int:
    began = time.monotonic()
    keys_moved, keys_present, keys_differ = _move_keys(source, target)
    print(f"moved {counted(keys_moved, 'API key')}, {keys_present} were there already")
    if keys_differ:
        print(
            f"error: API keys not identical in the database: {', '.join(keys_differ)}",
            file=sys.stderr,
        )
        return DIFFERS
    conversations = sorted(
        (a.record.namespace, a.record.conversation_id, a.record.key)
        for a in source.conversation_activity(None)
    )
    moved = present = items = vectors = 0
    differs: list[str] = []
    for n, (namespace, conversation_id, key) in enumerate(conversations, 1):
        dump = source.dump_conversation(key, vectors=True)
        if dump is None:
            continue
        there = target.get_conversation(namespace, conversation_id)
        if there is None:
            try:
                there_key = target.load_conversation(dump)
            except ContextWMError as exc:
                print(f"error: {exc.message}", file=sys.stderr)
                return NOT_MOVED
            moved += 1
            items += len(dump.tables["items"])
            vectors += len(dump.vectors or ())
            # The check: what the database holds now, read back, against the directory's.
            if target.dump_conversation(there_key, vectors=True) != dump:
                differs.append(f"{namespace}/{conversation_id}")
        elif target.dump_conversation(there.key, vectors=True) == dump:
            present += 1  # copied by an earlier run, and checked the same way
        else:
            print(
                f"error: conversation {conversation_id!r} of namespace {namespace!r} is in"
                " the database already with other rows; delete it there (or move into"
                " another database) and run the move again",
                file=sys.stderr,
            )
            return NOT_MOVED
        print(f"[{n}/{len(conversations)}] {namespace}/{conversation_id}", file=sys.stderr)
    print(
        f"moved {counted(moved, 'conversation')} ({counted(items, 'item')},"
        f" {counted(vectors, 'vector')}), {present} were there already; checked"
        f" {len(conversations) - len(differs)} of {counted(len(conversations), 'conversation')}"
        f" identical in the database, in {time.monotonic() - began:.1f} s"
    )
    if differs:
        print(f"error: not identical in the database: {', '.join(differs)}", file=sys.stderr)
        return DIFFERS
    return MOVED


def _move_keys(source: KeyStore, target: KeyStore) -> tuple[int, int, list[str]]:
    """Copies the API keys the database lacks, so that a moved directory's keys still work.

    A key there already (an earlier run) keeps its row there, whose token may have been
    rotated since; only a revocation is carried over, so that no revoked key works again
    because it moved.

    Returns:
        How many were copied, how many were there already, and the ids of copied keys that
        do not read back identical.
    """
    moved = present = 0
    differ: list[str] = []
    for stored in source.list_keys():
        key_id = stored.key.key_id
        there = target.get_key(key_id)
        if there is None:
            target.add_key(stored)
            moved += 1
            if target.get_key(key_id) != stored:
                differ.append(key_id)
            continue
        present += 1
        if stored.key.revoked_at is not None and there.key.revoked_at is None:
            target.revoke_key(key_id, stored.key.revoked_at)
    return moved, present, differ
