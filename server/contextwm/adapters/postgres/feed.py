"""Hearing of the events every server sharing the database commits: one connection of its
own LISTENs on the channel write_events announces them on, from a thread that reconnects by
itself after the database restarts."""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable

import psycopg

from contextwm.adapters.postgres.database import Database, first_line
from contextwm.adapters.postgres.events import CHANNEL, ERASURE_CHANNEL
from contextwm.domain.errors import Unavailable
from contextwm.ports.event_feed import EventFeed

log = logging.getLogger(__name__)

# How long the listening thread waits for news at a time: it sees it was stopped this often.
WAKE_SECONDS = 0.5
# Between attempts to connect while the database is unreachable.
RETRY_SECONDS = 1.0
CONNECT_SECONDS = 3


class EventFeedListener(Database, EventFeed):
    """Each call of follow_events starts one listener, which the store's close stops."""

    def follow_events(
        self, committed: Callable[[int, int], None], missed: Callable[[], None]
    ) -> None:
        listener = Listener(self._dsn, self._where, committed, missed)

        def stop() -> None:
            listener.stopping.set()
            # An empty announcement wakes the listener now rather than at its next wake-up.
            with contextlib.suppress(Unavailable), self._read() as db:
                db.execute("SELECT pg_notify(%s, '')", (CHANNEL,))
            listener.stop()

        self._closing.append(stop)
        listener.start()

    def follow_erasures(self, erased: Callable[[int], None]) -> None:
        listener = Listener(
            self._dsn,
            self._where,
            lambda key, _: erased(key),
            lambda: None,  # an erasure missed meanwhile is not told again
            channel=ERASURE_CHANNEL,
            parse=_parse_key,
        )

        def stop() -> None:
            listener.stopping.set()
            with contextlib.suppress(Unavailable), self._read() as db:
                db.execute("SELECT pg_notify(%s, '')", (ERASURE_CHANNEL,))
            listener.stop()

        self._closing.append(stop)
        listener.start()


class Listener:
    """A daemon thread on a connection of its own (autocommit, LISTEN CHANNEL) that hands the
    announcements to `committed`, and calls `missed` whenever it (re)connected, when news may
    have been lost, and again after a callback failed, until it succeeds."""

    def __init__(
        self,
        dsn: str,
        where: str,
        committed: Callable[[int, int], None],
        missed: Callable[[], None],
        *,
        channel: str = CHANNEL,
        parse: Callable[[str], tuple[int, int] | None] | None = None,
    ) -> None:
        """Args:
        channel: the channel to listen on.
        parse: (conversation key, number) from an announcement; None when it is malformed
            or a wake-up. Default: "<key> <last event number>".
        """
        self._dsn = dsn
        self._where = where
        self._committed = committed
        self._missed = missed
        self._channel = channel
        self._parse = parse or _parse
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="contextwm-event-feed", daemon=True)
        self._behind = False

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self._thread.join(WAKE_SECONDS + CONNECT_SECONDS + 2)

    def _run(self) -> None:
        down = False
        while not self.stopping.is_set():
            try:
                with psycopg.connect(
                    self._dsn, autocommit=True, connect_timeout=CONNECT_SECONDS
                ) as conn:
                    conn.execute(f"LISTEN {self._channel}")
                    if down:
                        log.info("listening for events at %s again", self._where)
                    down = False
                    # Events committed while nobody listened are known only to the store.
                    self._behind = True
                    self._listen(conn)
            except psycopg.Error as exc:
                if not down:
                    log.warning(
                        "lost the event feed of the PostgreSQL store at %s (%s); reconnecting",
                        self._where,
                        first_line(exc),
                    )
                down = True
                self.stopping.wait(RETRY_SECONDS)

    def _listen(self, conn: psycopg.Connection) -> None:
        while not self.stopping.is_set():
            if self._behind:
                self._behind = not self._call(self._missed)
            # Returns with the first batch of news, or after WAKE_SECONDS without any.
            latest: dict[int, int] = {}
            for note in conn.notifies(timeout=WAKE_SECONDS, stop_after=1):
                parsed = self._parse(note.payload)
                if parsed is not None:
                    key, last = parsed
                    latest[key] = max(last, latest.get(key, 0))
            for key, last in latest.items():
                if not self._call(functools.partial(self._committed, key, last)):
                    self._behind = True

    def _call(self, callback: Callable[[], None]) -> bool:
        """Runs a callback; False when it failed (it is made good by a later missed())."""
        try:
            callback()
        except Unavailable as exc:
            log.warning("events could not be read for watchers: %s", exc)
            return False
        except Exception:
            log.exception("events could not be handed to watchers")
            return False
        return True


def _parse(payload: str) -> tuple[int, int] | None:
    """(conversation key, last event number) from an announcement; None if malformed."""
    parts = payload.split()
    if not parts:
        return None  # a wake-up (see follow_events)
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        log.warning("ignored a malformed event announcement %r", payload)
        return None
    return int(parts[0]), int(parts[1])


def _parse_key(payload: str) -> tuple[int, int] | None:
    """(conversation key, 0) from an erasure's announcement; None if malformed."""
    if not payload:
        return None  # a wake-up
    if not payload.isdigit():
        log.warning("ignored a malformed erasure announcement %r", payload)
        return None
    return int(payload), 0
