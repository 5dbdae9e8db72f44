"""Serve flags, config file and environment, health, reflection, SIGTERM, logging."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import cast

import grpc
import pytest
from contextwm.app import Service
from contextwm_client import Client, EnhancedContext, NewItem, UnavailableError
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)
from server_process import ServerProcess


def test_health_and_reflection(service: Service) -> None:
    channel = grpc.insecure_channel(f"127.0.0.1:{service.port}")
    health = health_pb2_grpc.HealthStub(channel)
    for name in ("", "contextwm.v1.ContextService"):
        status = health.Check(health_pb2.HealthCheckRequest(service=name)).status
        assert status == health_pb2.HealthCheckResponse.SERVING
    services = ProtoReflectionDescriptorDatabase(channel).get_services()
    assert "contextwm.v1.ContextService" in services
    assert "grpc.health.v1.Health" in services
    channel.close()


@pytest.mark.slow
def test_socket_config_environment_debug_log_and_sigterm(tmp_path: Path) -> None:
    config = tmp_path / "contextwm.toml"
    config.write_text(
        "log_level = 'debug'\n"
        "[conversation]\nwindow_max_items = 7\nwindow_max_tokens = 123\n"
        "[limits]\nmax_item_tokens = 50\n"
    )
    socket = tmp_path / "cwm.sock"
    server = ServerProcess(
        tmp_path / "data",
        "--socket",
        str(socket),
        "--config",
        str(config),
        env={"CONTEXTWM_CONVERSATION__WINDOW_MAX_TOKENS": "456"},  # environment beats file
    )
    target = f"unix:{socket}"
    try:
        _exercise(server, target)
    finally:
        server.kill()
    log = server.log()
    assert "/contextwm.v1.ContextService/Append OK" in log
    assert "/contextwm.v1.ContextService/Append RESOURCE_EXHAUSTED" in log
    assert "shutting down" in log
    assert "Traceback" not in log
    with Client(target) as client, pytest.raises(UnavailableError):
        client.get_conversation("c")


def _exercise(server: ServerProcess, target: str) -> None:
    with Client(target) as client:
        conv = client.create_conversation("c")
        assert conv.settings.window_max_items == 7  # from the file
        assert conv.settings.window_max_tokens == 456  # from the environment
        client.append("c", "hello")
        with pytest.raises(Exception, match="max_item_tokens"):
            client.append("c", "word " * 60)
        # A call in flight when SIGTERM arrives ends cleanly (graceful drain): a Watch stream
        # that has delivered its first event is certainly running on the server.
        result: dict[str, object] = {}
        received = threading.Event()

        def watch() -> None:
            try:
                with client.watch("c") as stream:
                    for event in stream:
                        result.setdefault("first", event.id)
                        received.set()
                result["ended"] = True
            except Exception as exc:  # reported by the assertions below
                result["error"] = exc
                received.set()

        t = threading.Thread(target=watch)
        t.start()
        assert received.wait(30)
        code = server.terminate()
        t.join(30)
    assert code == 0
    assert result.get("ended") and result.get("first") == 1, result


@pytest.mark.slow
def test_sigterm_lets_a_call_in_flight_finish_then_saves_and_exits_0(tmp_path: Path) -> None:
    # A GetContext waits (index_wait_seconds) for the vectors of the items appended before it:
    # after a batch of 1,000 long items it is in flight for those seconds.
    data = tmp_path / "data"
    server = ServerProcess(data, env={"CONTEXTWM_INDEX_WAIT_SECONDS": "4"})
    texts = [
        f"Note {n}: " + " ".join(f"w{(n * 7 + k) % 997}" for k in range(200)) for n in range(1000)
    ]
    outcome: dict[str, object] = {}
    try:
        with Client(server.target, timeout=60) as client:
            client.append_batch("c", [NewItem(t) for t in texts])

            def get_context() -> None:
                try:
                    outcome["context"] = client.get_context("c", "Note 5 w40", max_tokens=500)
                except Exception as exc:  # reported by the assertions below
                    outcome["error"] = exc
                outcome["ended"] = time.monotonic()

            call = threading.Thread(target=get_context)
            call.start()
            time.sleep(1.0)
            assert "ended" not in outcome, "the call was not slow: the test proves nothing"
            code = server.terminate()
            call.join(30)
    finally:
        server.kill()
    assert code == 0, server.log()
    assert "error" not in outcome, outcome
    context = outcome["context"]
    assert isinstance(context, EnhancedContext) and "Note 5:" in context.text
    drained = server.first_read("shutting down: draining calls in flight")
    assert drained is not None and drained < cast(float, outcome["ended"]), "ended before SIGTERM"
    assert "Traceback" not in server.log()
    # The indexes were saved on the way out: the check finds each equal to the stored vectors.
    assert list((data / "indexes").rglob("*.faiss"))
    check = subprocess.run(
        [sys.executable, "-m", "contextwm", "check", str(data)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    again = ServerProcess(data)
    try:
        with Client(again.target) as client:
            assert client.get_conversation("c").total_items == 1000
            assert [i.content for i in client.iter_items("c")] == texts
    finally:
        again.kill()


def test_config_show_prints_each_setting_with_where_it_came_from(tmp_path: Path) -> None:
    config = tmp_path / "contextwm.toml"
    config.write_text("workers = 3\nport = 1111\n[limits]\nmax_item_tokens = 50\n")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTWM_")}
    environ |= {"CONTEXTWM_CONVERSATION__WINDOW_MAX_ITEMS": "7", "CONTEXTWM_PORT": "2222"}
    command = [sys.executable, "-m", "contextwm", "config", "show", "--config", str(config)]
    data = tmp_path / "data"
    out = subprocess.run(
        [*command, "--port", "3333", "--data-dir", str(data)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    header, *lines = out.stdout.splitlines()
    assert header.split() == ["setting", "value", "source"]
    table = {line.split()[0]: line.split()[1:] for line in lines}
    assert table["workers"] == ["3", str(config)]
    assert table["limits.max_item_tokens"] == ["50", str(config)]
    assert table["conversation.window_max_items"] == [
        "7",
        "CONTEXTWM_CONVERSATION__WINDOW_MAX_ITEMS",
    ]
    assert table["port"] == ["3333", "--port"]  # the flag beats the environment and the file
    assert table["data_dir"] == [str(data), "--data-dir"]
    assert table["host"] == ["127.0.0.1", "default"]
    assert table["conversation.weights.importance.pinned"] == ["0.8", "default"]
    assert not data.exists()  # it only reads settings
    # Settings serve would refuse are refused the same way.
    bad = subprocess.run(
        command, env=environ | {"CONTEXTWM_PORT": "many"}, capture_output=True, text=True
    )
    assert bad.returncode == 2
    assert "environment: port = 'many' is not a valid int" in bad.stdout


def test_bad_settings_fail_fast_with_a_clear_message(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[conversation]\nwindow_max_items = 'many'\n")
    out = subprocess.run(
        [sys.executable, "-m", "contextwm", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert "conversation.window_max_items" in out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr
