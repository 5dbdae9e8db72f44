"""What a check of a data directory found, and how it reads: problems, which make it
unhealthy, and notes, which a server deals with by itself."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path


class Severity(enum.Enum):
    PROBLEM = "problem"  # damaged or inconsistent: someone should look
    NOTE = "note"  # a state the server repairs or expects (stale index, pending vectors)


@dataclass(frozen=True)
class Finding:
    severity: Severity
    subject: str  # what it is about: "store", "conversation ns/id", an index file
    text: str


@dataclass
class Report:
    """Findings, and summary lines of what was looked at, in the order they were made."""

    root: Path
    summary: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def line(self, text: str) -> None:
        self.summary.append(text)

    def problem(self, subject: str, text: str) -> None:
        self.findings.append(Finding(Severity.PROBLEM, subject, text))

    def note(self, subject: str, text: str) -> None:
        self.findings.append(Finding(Severity.NOTE, subject, text))

    def of(self, severity: Severity) -> list[Finding]:
        return [f for f in self.findings if f.severity is severity]

    @property
    def healthy(self) -> bool:
        return not self.of(Severity.PROBLEM)

    def render(self) -> str:
        """The report for a person: what was checked, then problems, then notes, then the
        verdict on a line of its own."""
        lines = [f"contextwm check {self.root}", *(f"  {s}" for s in self.summary)]
        for severity in Severity:
            for f in self.of(severity):
                lines.append(f"{severity.value}: {f.subject}: {f.text}")
        problems, notes = len(self.of(Severity.PROBLEM)), len(self.of(Severity.NOTE))
        counted = f"{count(problems, 'problem')}, {count(notes, 'note')}"
        lines.append(f"{'healthy' if self.healthy else 'UNHEALTHY'} ({counted})")
        return "\n".join(lines)


def count(n: int, noun: str) -> str:
    """ "1 note", "2 notes": a number and its noun, for reports."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
