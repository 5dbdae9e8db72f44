"""The client commands stay light: they load the CLI and the client (and `mcp` the MCP server),
never the server or torch."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

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
from contextwm_client import Client

# Nothing listens: skip the wait for readiness, so the command runs as far as its first call.
Client.wait_ready = lambda self, timeout=None: None
status = main(["--target", "127.0.0.1:1", *sys.argv[1:]])
ours = sorted(m for m in sys.modules if m == "contextwm" or m.startswith("contextwm."))
print(json.dumps({"status": status, "ours": ours}))
"""


def probe(*command: str) -> tuple[dict[str, Any], str]:
    """Runs a command in the probe; returns its exit status and our modules it loaded, and
    its stderr."""
    result = subprocess.run(
        [sys.executable, "-c", CLI_IMPORT_PROBE, *command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report, result.stderr


def test_client_commands_load_only_the_cli_and_the_client() -> None:
    report, stderr = probe("list")
    # Nothing listens on port 1: the command ran as far as the call, which failed (exit 1).
    assert report["status"] == 1, stderr
    assert "error: UNAVAILABLE" in stderr
    outside = [m for m in report["ours"] if m != "contextwm" and not m.startswith("contextwm.cli")]
    assert outside == []


def test_the_mcp_command_loads_the_mcp_server_but_not_the_service() -> None:
    report, stderr = probe("mcp", "--conversation", "agent")
    # It fails where it creates the conversation, after importing everything it serves with.
    assert report["status"] == 1, stderr
    assert "error: UNAVAILABLE" in stderr
    outside = [
        m
        for m in report["ours"]
        if m != "contextwm" and not m.startswith(("contextwm.cli", "contextwm.mcp_server"))
    ]
    assert outside == []
    assert "contextwm.mcp_server.tools" in report["ours"]
