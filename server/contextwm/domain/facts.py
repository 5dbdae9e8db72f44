"""Facts the ledger records: instructions, files read and written, commands, errors."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class FactKind(enum.StrEnum):
    """What a fact records."""

    INSTRUCTION = "instruction"
    FILE_READ = "file_read"
    FILE_WRITE = "file_write"
    COMMAND = "command"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact; text is the instruction verbatim, the path, the command line or the error line."""

    kind: FactKind
    text: str
    seq: int
    outcome: str = ""  # commands only: "exit 0", "failed", or "" when unknown
