"""Resume points: how far an import of one input got, so that a re-run after an interruption
starts there instead of re-sending everything (idempotency keys make a re-sent part safe).

A point holds only for the same input sent the same way (namespace, format, field mapping)
to the same server, and only while that server still holds what the point says: it names a
conversation the input stored, with the time the server made it, which the re-run checks
before it trusts the point."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Witness:
    """A conversation the input's items went to, and when the server created it: a server
    whose data was wiped (or that deleted the conversation) no longer has it, and one that
    made it again since has another creation time."""

    namespace: str  # "" for the run's namespace
    conversation_id: str
    created_at: float  # seconds since the epoch


@dataclass(frozen=True, slots=True)
class Point:
    """Lines 1..line of the input are answered; end is the byte position after them.

    Attributes:
        bad: Lines skipped and items refused among them: a re-run that finds the input
            done exits 1 as the run that left them did.
        witness: What tells whether the server still holds them (None: nothing stored yet).
    """

    line: int = 0
    end: int = 0
    done: bool = False
    bad: int = 0
    witness: Witness | None = None


class ResumePoints:
    """One small JSON file per input, way of sending it and server, in a state directory."""

    def __init__(
        self,
        directory: Path,
        identity: dict[str, Any],
        target: str,
        sending: dict[str, Any] | None = None,
    ) -> None:
        """Args:
        directory: Where resume points are kept.
        identity: The input's path, size, modification time and head digest: a point saved
            for an input that changed since is not used.
        target: The server: a point is only good for the server the items went to.
        sending: Everything else that decides what the server stores of the input (the
            namespace, format and field mapping): a point saved for other flags is another
            point, and the same input sent another way starts from its first line.
        """
        # As JSON has it (tuples become lists), so that a saved point compares equal.
        sending = json.loads(json.dumps(sending or {}))
        self.identity = {**identity, "target": target, "sending": sending}
        key = json.dumps([identity["path"], target, sending], sort_keys=True).encode()
        self.path = directory / f"{hashlib.sha256(key).hexdigest()[:24]}.json"

    def load(self) -> Point | None:
        """The saved point, or None when there is none or it is for another input."""
        try:
            saved = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(saved, dict) or saved.get("input") != self.identity:
            return None
        try:
            witness = saved.get("witness")
            return Point(
                int(saved["line"]),
                int(saved["end"]),
                bool(saved["done"]),
                int(saved.get("bad", 0)),
                None
                if witness is None
                else Witness(
                    str(witness["namespace"]),
                    str(witness["conversation_id"]),
                    float(witness["created_at"]),
                ),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def save(self, point: Point) -> None:
        """Writes the point atomically (a crash leaves the old one or the new one)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        scratch = self.path.with_suffix(".tmp")
        scratch.write_text(json.dumps({"input": self.identity, **asdict(point)}))
        os.replace(scratch, self.path)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
