"""A real Node.js client (examples/node: @grpc/grpc-js with the proto loaded at run time)
appends, asks for context and handles NOT_FOUND against a real server, over mutual TLS too,
and sends its API key with every call.

Its npm packages are installed here with `npm ci` from the committed lock file, once per
lock file. No skips: without node or npm, or when the install fails, the test fails with
npm's output, so CI can never pass without having run the Node client.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from certificates import Pki
from conftest import StartService
from contextwm.app import Service
from contextwm_client import Client
from recording_server import recording_server

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "examples" / "node"
# Inside node_modules, so that `npm ci`, which deletes node_modules first, drops it too.
STAMP = NODE_DIR / "node_modules" / ".contextwm-npm-ci"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not on PATH: the Node.js client test needs Node.js 18+ and npm")
    return path


def _lock_digest() -> str:
    return hashlib.sha256(
        (NODE_DIR / "package.json").read_bytes() + (NODE_DIR / "package-lock.json").read_bytes()
    ).hexdigest()


@pytest.fixture(scope="module")
def node() -> str:
    """The node executable, with examples/node's packages installed as the lock file pins them."""
    node = _tool("node")
    want = _lock_digest()
    if STAMP.is_file() and STAMP.read_text() == want:
        return node
    # --ignore-scripts: the packages are plain JavaScript; no install script needs to run.
    result = subprocess.run(
        [_tool("npm"), "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        pytest.fail(
            f"npm ci in {NODE_DIR} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    STAMP.write_text(want)
    return node


def test_node_client_appends_gets_context_and_sees_not_found(service: Service, node: str) -> None:
    target = f"127.0.0.1:{service.port}"
    result = subprocess.run(
        [node, str(NODE_DIR / "example.js"), target, "from-node"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)

    assert summary["conversation_id"] == "from-node"
    assert [a["seq"] for a in summary["appended"]] == [1, 2, 3]
    assert all(a["token_count"] > 0 for a in summary["appended"])
    assert "error" in summary["appended"][1]["flags"]  # detected by the server from the content
    context = summary["context"]
    assert context["query"] == "why did the deploy fail?"
    assert 0 < context["total_tokens"] <= context["budget"] == 512
    assert context["recent_seqs"] == [1, 2, 3]
    assert "ConnectionError: db-3:5432 refused connection" in context["text"]
    assert "# Current Query" in context["text"]
    assert summary["not_found"] == {
        "code": 5,
        "name": "NOT_FOUND",
        "details": "conversation 'from-node-missing' not found in namespace 'default'",
    }

    # What the Node client wrote is what the Python client reads.
    with Client(target) as client:
        items = list(client.iter_items("from-node"))
        assert [(i.seq, i.role) for i in items] == [(1, "user"), (2, "tool"), (3, "assistant")]
        assert items[1].content.startswith("ConnectionError: db-3:5432")
        assert items[1].metadata == {"client": "node"}
        assert client.get_conversation("from-node").total_items == 3


def run_example(node: str, target: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """examples/node/example.js against target, with these variables besides the usual."""
    plain = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTWM_")}
    return subprocess.run(
        [node, str(NODE_DIR / "example.js"), target, "from-node"],
        env={**plain, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_node_client_over_mutual_tls(start_service: StartService, pki: Pki, node: str) -> None:
    service = start_service(
        tls_cert_file=str(pki.server.cert),
        tls_key_file=str(pki.server.key),
        tls_client_ca_file=str(pki.ca),
    )
    # By name: Node.js warns when TLS is given an IP address as the server name.
    target = f"localhost:{service.port}"
    files = {"CONTEXTWM_TLS_CA": str(pki.ca), "CONTEXTWM_TLS_CERT": str(pki.client.cert)}
    result = run_example(node, target, {**files, "CONTEXTWM_TLS_KEY": str(pki.client.key)})
    assert result.returncode == 0, result.stderr
    assert [a["seq"] for a in json.loads(result.stdout)["appended"]] == [1, 2, 3]
    # Without its certificate the handshake fails, and the example says so.
    refused = run_example(node, target, {"CONTEXTWM_TLS_CA": str(pki.ca)})
    assert refused.returncode == 1
    assert refused.stderr.startswith("example.js: UNAVAILABLE (14): ")


def test_node_client_sends_the_api_key_with_every_call(node: str) -> None:
    with recording_server() as (target, recorder):
        result = run_example(node, target, {"CONTEXTWM_API_KEY": "node-key"})
    # The recording server implements nothing: the first call fails, after it arrived.
    assert result.returncode == 1
    assert result.stderr.startswith("example.js: UNIMPLEMENTED (12): ")
    (call,) = recorder.context_calls()
    assert call.method.endswith("/Append")
    assert call.metadata["authorization"] == "Bearer node-key"


def test_node_client_fails_loudly_without_a_server(node: str) -> None:
    """Anything unexpected is exit code 1 with the reason on stderr, not a half summary."""
    result = subprocess.run(
        [node, str(NODE_DIR / "example.js"), "unix:/nonexistent/contextwm.sock"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("example.js: UNAVAILABLE (14): ")


def test_documented_node_example_runs(service: Service, node: str, tmp_path: Path) -> None:
    """The Node.js snippet of docs/other-languages.md, as written, from the repository root."""
    page = (ROOT / "docs" / "other-languages.md").read_text()
    (snippet,) = re.findall(r"```js\n(.*?)```", page, flags=re.S)
    script = tmp_path / "readme_example.js"
    script.write_text(snippet.replace("127.0.0.1:50051", f"127.0.0.1:{service.port}"))
    result = subprocess.run(
        [node, str(script)],
        cwd=ROOT,  # the snippet loads the proto from proto/, relative to the root
        env={**os.environ, "NODE_PATH": str(NODE_DIR / "node_modules")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "1 # Recent Context"
    assert "tool: Deploy failed: ConnectionError on db-3" in lines
    assert lines[-1] == "conversation 'no-such-ticket' not found in namespace 'default'"
