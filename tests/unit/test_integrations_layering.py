"""The framework adapters are thin layers over the public client: they import the client's
public names and their framework, never the client's internals, the service or grpc; the
client imports no framework; each framework is an extra of the client and in the dev extra."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INTEGRATIONS = ROOT / "client" / "contextwm_client" / "integrations"
# Each adapter: its extra, the framework's distribution and import name, the adapter module.
FRAMEWORKS = [
    ("langchain", "langchain-core", "langchain_core", "langchain.py"),
    ("openai-agents", "openai-agents", "agents", "openai_agents.py"),
    ("llama-index", "llama-index-core", "llama_index", "llama_index.py"),
]


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_adapters_import_the_public_client_only() -> None:
    modules = sorted(INTEGRATIONS.glob("*.py"))
    assert {m.name for m in modules} >= {"langchain.py", "openai_agents.py", "llama_index.py"}
    for module in modules:
        ours = {n for n in imported(module) if n.split(".")[0].startswith("contextwm")}
        allowed = {
            n
            for n in ours
            if n == "contextwm_client" or n.startswith("contextwm_client.integrations")
        }
        assert ours == allowed, f"{module.name} imports {sorted(ours - allowed)}"
        assert not {n for n in imported(module) if n.split(".")[0] == "grpc"}, module.name


def test_the_client_imports_no_framework() -> None:
    probe = (
        "import sys, contextwm_client, contextwm_client.integrations\n"
        "frameworks = {'agents', 'llama_index', 'langchain_core', 'langgraph'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & frameworks))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_each_framework_is_an_extra_of_the_client_and_in_the_dev_extra() -> None:
    client = tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())["project"]
    dev = requirement_names(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][
            "dev"
        ]
    )
    for extra, distribution, module, adapter in FRAMEWORKS:
        needs = requirement_names(client["optional-dependencies"][extra])
        assert distribution in needs and needs <= dev
        assert module in {n.split(".")[0] for n in imported(INTEGRATIONS / adapter)}
