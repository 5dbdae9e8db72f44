"""Bulk-indexes historic timelines into a running contextwm server: `contextwm import`.

Usage: scripts/bulk_index.py [--target HOST:PORT] [--namespace NS] INPUT... [import flags]
(`contextwm import --help` lists them: formats, --map, --strict, resume points).
"""

from __future__ import annotations

import sys

from contextwm.cli import main

GLOBAL_OPTIONS = ("--target", "--namespace")


def arguments(argv: list[str]) -> list[str]:
    """The command line with "import" after the global options."""
    head: list[str] = []
    rest = list(argv)
    while rest and rest[0] in GLOBAL_OPTIONS:
        head += rest[:2]
        rest = rest[2:]
    return [*head, "import", *rest]


if __name__ == "__main__":
    sys.exit(main(arguments(sys.argv[1:])))
