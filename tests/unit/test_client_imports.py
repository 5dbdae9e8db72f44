"""The client package stays light: grpcio and protobuf only, never the server or its ML stack."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter so that nothing this test process imported can hide an import.
BLOCKED_IMPORT_PROBE = """
import sys
from importlib.abc import MetaPathFinder

BLOCKED = ("torch", "faiss", "numpy", "sentence_transformers", "contextwm", "langchain_core",
           "langgraph")

class Blocker(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        # "contextwm" and "contextwm.x" are the server; "contextwm_client" is not.
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ImportError(f"blocked import of {name!r}")
        return None

sys.meta_path.insert(0, Blocker())

import contextwm_client
from contextwm_client import AsyncClient, Client

client = Client("127.0.0.1:1")
client.close()
print("ok")
"""


def test_client_imports_without_server_or_ml_packages() -> None:
    result = subprocess.run(
        [sys.executable, "-c", BLOCKED_IMPORT_PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_an_adapter_without_its_extra_says_what_to_install() -> None:
    probe = BLOCKED_IMPORT_PROBE.replace(
        "import contextwm_client\n",
        "import contextwm_client\nimport contextwm_client.integrations\n"
        "try:\n"
        "    import contextwm_client.integrations.langchain\n"
        "except ImportError as exc:\n"
        "    print(exc)\n",
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    said, ok = result.stdout.strip().splitlines()
    assert said.startswith(
        "contextwm_client.integrations.langchain needs langchain-core and langgraph:"
        ' pip install "contextwm-client[langchain]"'
    )
    assert ok == "ok"


def test_client_depends_on_grpcio_and_protobuf_only() -> None:
    project = tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())["project"]
    # The distribution name is what precedes any extras, version specifier or marker.
    names = {
        re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower()
        for requirement in project["dependencies"]
    }
    assert names == {"grpcio", "protobuf"}
