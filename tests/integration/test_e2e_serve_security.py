"""`contextwm serve` in a subprocess: TLS settings it cannot use and an address it must not
listen on end it at once with exit status 2 and one line, before anything is created; with
--insecure, or with API keys and TLS, it listens on every interface and gets ready."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from certificates import Pki
from contextwm_client import Client, Tls
from server_process import START_SECONDS, ServerProcess

pytestmark = pytest.mark.slow

HASHING = ("--embedder", "hashing")


def refused(data_dir: Path, *args: str) -> str:
    """Runs serve with args; returns its one line of output, after checking the exit status
    and that the data directory was not even created."""
    result = subprocess.run(
        [sys.executable, "-m", "contextwm", "serve", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=START_SECONDS,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert len(output.splitlines()) == 1, output
    assert not data_dir.exists()
    return output.strip()


def test_tls_settings_it_cannot_use_exit_2_with_one_line(pki: Pki, tmp_path: Path) -> None:
    data = tmp_path / "data"
    cert, key = str(pki.server.cert), str(pki.server.key)
    half = refused(data, "--port", "0", "--tls-cert", cert)
    assert half.startswith(f"error: tls_cert_file = '{cert}' is set without tls_key_file")
    missing = tmp_path / "missing.pem"
    unreadable = refused(data, "--port", "0", "--tls-cert", str(missing), "--tls-key", key)
    assert (
        unreadable
        == f"error: tls_cert_file = '{missing}': cannot read it: No such file or directory"
    )
    wrong_key = refused(data, "--port", "0", "--tls-cert", cert, "--tls-key", str(pki.client.key))
    assert wrong_key.startswith(f"error: tls_key_file = '{pki.client.key}' is not the key of")


def test_a_data_directory_that_cannot_be_created_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    data = tmp_path / "a-file" / "data"
    line = refused(data, "--port", "0", *HASHING)
    assert line == f"error: data_dir = '{data}': cannot create it: Not a directory"


def test_a_port_out_of_range_exits_2_with_one_line(tmp_path: Path) -> None:
    line = refused(tmp_path / "data", "--port", "99999")
    assert line == "error: port must be between 0 and 65535 (0 picks a free port), got 99999"


def test_every_interface_without_keys_and_tls_exits_2_with_one_line(tmp_path: Path) -> None:
    line = refused(tmp_path / "data", "--host", "0.0.0.0", "--port", "0")
    assert line == (
        "error: refusing to listen on 0.0.0.0:0 without API keys and TLS: anyone who reaches"
        " the port could read and delete every conversation; set require_api_keys and"
        " tls_cert_file/tls_key_file, or pass --insecure on a network you trust"
    )


def test_insecure_listens_on_every_interface(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", "--host", "0.0.0.0", "--insecure", *HASHING)
    try:
        with Client(server.target) as client:  # 0.0.0.0 takes loopback too
            client.append("open", "on a network I trust")
            assert client.get_conversation("open").total_items == 1
    finally:
        assert server.terminate() == 0
    assert "as insecure allows" in server.log()


def test_api_keys_and_tls_listen_on_every_interface(pki: Pki, tmp_path: Path) -> None:
    tls = ("--tls-cert", str(pki.server.cert), "--tls-key", str(pki.server.key))
    server = ServerProcess(
        tmp_path / "data", "--host", "0.0.0.0", "--require-api-keys", *tls, *HASHING, ready=False
    )
    try:
        assert server.port, server.log()
        # Readiness, from the health service over TLS.
        with Client(server.target, tls=Tls(ca_file=str(pki.ca))) as client:
            client.wait_ready(START_SECONDS)
        assert "with TLS" in server.log()
    finally:
        assert server.terminate() == 0
