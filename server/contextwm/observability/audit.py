"""The audit trail: one JSON line per key change, refused call, deletion and retention run, to
a file or stderr. A line names who (the key's id), what (the method), where (namespace and
conversation) and how it ended; never a token, a digest or any content."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TextIO

from contextwm.retention.outcomes import RetentionReport

# Calls whose every outcome is recorded: they change keys or remove what was stored.
AUDITED_METHODS = frozenset(
    {"CreateKey", "RevokeKey", "RotateKey", "DeleteConversation", "ApplyRetention", "Forget"}
)
# Outcomes recorded whatever the method: the call was refused for who made it.
REFUSALS = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED"})
STDERR = "stderr"


@dataclass(frozen=True, slots=True)
class CallSubject:
    """Who made a call and on what (None: no key, or not named): the caller's key id, the
    namespace and conversation it named, and the key it changed (revoke, rotate)."""

    key_id: str | None = None
    namespace: str | None = None
    conversation: str | None = None
    target_key: str | None = None


class AuditLog:
    """Writes audit lines, each flushed as written (a line lost in a crash is one an auditor
    would miss); safe from any thread."""

    def __init__(self, out: TextIO, clock: Callable[[], float], *, owned: bool = False) -> None:
        """Args:
        out: Where lines go.
        clock: The wall clock, Unix seconds.
        owned: Close out with the log (a file opened for it).
        """
        self._out = out
        self._clock = clock
        self._owned = owned
        self._lock = threading.Lock()

    @classmethod
    def open(cls, target: str, clock: Callable[[], float]) -> AuditLog | None:
        """The log the audit_log setting names: "" none, "stderr", or a file, appended to
        and readable by its owner only (created so).

        Raises:
            OSError: the file cannot be opened for appending.
        """
        if not target:
            return None
        if target == STDERR:
            return cls(sys.stderr, clock)
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return cls(os.fdopen(fd, "a", encoding="utf-8"), clock, owned=True)

    def record(
        self,
        method: str,
        outcome: str,
        *,
        subject: CallSubject | None = None,
        **figures: int | str,
    ) -> None:
        """Writes one line: the time (UTC, ISO 8601), who made the change and on what, how
        it ended, then figures (counts such as items removed)."""
        subject = subject or CallSubject()
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(self._clock(), UTC).isoformat(timespec="milliseconds"),
            "key_id": subject.key_id,
            "method": method,
            "namespace": subject.namespace,
            "conversation": subject.conversation,
            "outcome": outcome,
        }
        if subject.target_key is not None:
            line["target_key"] = subject.target_key
        line.update(figures)
        text = json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock:
            self._out.write(text)
            self._out.flush()

    def call(self, method: str, outcome: str, subject: CallSubject) -> None:
        """A finished call: recorded when its method changes keys or removes what was
        stored, or when it was refused."""
        if method in AUDITED_METHODS or outcome in REFUSALS:
            self.record(method, outcome, subject=subject)

    def retention_run(self, report: RetentionReport) -> None:
        """A background retention run that removed something."""
        self.record(
            "retention",
            "OK",
            items_removed=report.items_removed,
            conversations_removed=report.conversations_removed,
        )

    def close(self) -> None:
        if self._owned:
            with self._lock:
                self._out.close()
