"""The client commands stay light: they load the CLI and the client, never the server or torch."""

from __future__ import annotations

import json
import subprocess
import sys

# Runs in a fresh interpreter so that nothing this test process imported can hide an import.
CLI_IMPORT_PROBE = """
import json
import sys
from importlib.abc import MetaPathFinder

BLOCKED = ("torch", "faiss", "numpy", "sentence_transformers")

class Blocker(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ImportError(f"blocked import of {name!r}")
        return None

sys.meta_path.insert(0, Blocker())

from contextwm.cli import main

status = main(["--target", "127.0.0.1:1", "list"])
ours = sorted(m for m in sys.modules if m == "contextwm" or m.startswith("contextwm."))
print(json.dumps({"status": status, "ours": ours}))
"""


def test_client_commands_load_only_the_cli_and_the_client() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CLI_IMPORT_PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    # Nothing listens on port 1: the command ran as far as the call, which failed (exit 1).
    assert report["status"] == 1, result.stderr
    assert "error: UNAVAILABLE" in result.stderr
    outside = [m for m in report["ours"] if m != "contextwm" and not m.startswith("contextwm.cli")]
    assert outside == []
