"""Resume points: how far an import of one input got, so that a re-run after an interruption
starts there instead of re-sending everything (idempotency keys make a re-sent part safe)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Point:
    """Lines 1..line of the input are stored; end is the byte position after them."""

    line: int = 0
    end: int = 0
    done: bool = False


class ResumePoints:
    """One small JSON file per input and server, in a state directory."""

    def __init__(self, directory: Path, identity: dict[str, Any], target: str) -> None:
        """Args:
        directory: Where resume points are kept.
        identity: The input's path, size, modification time and head digest: a point saved
            for an input that changed since is not used.
        target: The server: a point is only good for the server the items went to.
        """
        self.identity = {**identity, "target": target}
        key = json.dumps([identity["path"], target]).encode()
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
            return Point(int(saved["line"]), int(saved["end"]), bool(saved["done"]))
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
