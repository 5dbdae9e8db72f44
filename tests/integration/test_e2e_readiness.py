"""Readiness: the port and the health service come up before the model has loaded; until the
service is ready, liveness says SERVING, readiness NOT_SERVING, and calls get UNAVAILABLE;
a client that waits for readiness never sees UNAVAILABLE."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import grpc
import pytest
from contextwm.app import Service
from contextwm.ports.embedder import Embedder, Vectors
from contextwm.settings import ServerSettings
from contextwm_client import AsyncClient, Client, DeadlineExceededError, UnavailableError
from grpc_health.v1 import health_pb2, health_pb2_grpc
from server_process import ServerProcess

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
LIVENESS = "contextwm.v1.Liveness"
READINESS = ("", "contextwm.v1.ContextService")


# A channel with connections of its own: the process's shared ones may be in back-off after
# clients tried them before the server listened.
OWN_CONNECTIONS = [("grpc.use_local_subchannel_pool", 1)]


def statuses(target: str, *, wait: bool = False) -> dict[str, int]:
    """Health.Check of the liveness and readiness names.

    wait: wait for a connection.
    """
    with grpc.insecure_channel(target, options=OWN_CONNECTIONS) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        return {
            name: health.Check(
                health_pb2.HealthCheckRequest(service=name), timeout=10, wait_for_ready=wait
            ).status
            for name in (LIVENESS, *READINESS)
        }


def unreachable(target: str) -> bool:
    try:
        statuses(target)
    except grpc.RpcError as exc:
        return exc.code() == grpc.StatusCode.UNAVAILABLE
    return False


def live_not_ready() -> dict[str, int]:
    return {LIVENESS: SERVING, **dict.fromkeys(READINESS, NOT_SERVING)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_listening_before_ready_then_serving(tmp_path: Path, embedder: Embedder) -> None:
    settings = ServerSettings(port=0, data_dir=tmp_path, grace_seconds=1.0, indexer_process=False)
    listening = Service.listen(settings)
    target = f"127.0.0.1:{listening.port}"
    try:
        assert statuses(target) == live_not_ready()
        with Client(target) as client:
            with pytest.raises(
                UnavailableError, match=r"starting \(loading the embedding model\); retry"
            ):
                client.create_conversation("c")
            with client.watch("c") as events, pytest.raises(UnavailableError, match="starting"):
                next(iter(events))
            with pytest.raises(DeadlineExceededError):
                client.wait_ready(0.3)
    except BaseException:
        listening.abandon()
        raise
    service = listening.load(embedder)
    try:
        assert set(statuses(target).values()) == {SERVING}
        with Client(target) as client:
            client.wait_ready(5)
            assert client.append("c", "hello").seq == 1

        async def wait_async() -> None:
            async with AsyncClient(target) as aclient:
                await aclient.wait_ready(5)
                assert (await aclient.get_conversation("c")).total_items == 1

        asyncio.run(wait_async())
    finally:
        service.stop(grace=0)
    assert unreachable(target)


class UnloadableModel:
    """An embedder whose model fails to load (on first use)."""

    model_name = "unloadable"
    dimension = 8

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise RuntimeError("the model does not load")


def test_a_failed_load_stops_listening_and_frees_the_directory(
    tmp_path: Path, embedder: Embedder
) -> None:
    settings = ServerSettings(port=0, data_dir=tmp_path, grace_seconds=1.0, indexer_process=False)
    listening = Service.listen(settings)
    with pytest.raises(RuntimeError, match="does not load"):
        listening.load(UnloadableModel())
    assert unreachable(f"127.0.0.1:{listening.port}")
    Service.start(settings, embedder=embedder).stop(grace=0)  # the lock was let go


def test_health_watches_ending_while_others_begin_leave_the_server_serving(
    client: Client, service: Service
) -> None:
    # grpcio-health-checking's non-blocking Watch (its default) deadlocks the server's
    # completion queue when one watch ends while another sends its first status: after this,
    # no call was answered any more.
    target = f"127.0.0.1:{service.port}"
    failures: list[BaseException] = []

    def wait() -> None:
        try:
            with Client(target) as waiter:
                waiter.wait_ready(10)  # watches until SERVING, then cancels its watch
        except BaseException as exc:
            failures.append(exc)

    for _ in range(3):
        waiters = [threading.Thread(target=wait) for _ in range(8)]
        for w in waiters:
            w.start()
        for w in waiters:
            w.join(30)
    assert failures == []
    assert set(statuses(target).values()) == {SERVING}
    assert client.list_conversations().entries == ()


def test_wait_ready_gives_up_at_its_timeout_when_nothing_listens() -> None:
    with Client(f"127.0.0.1:{free_port()}") as client, pytest.raises(DeadlineExceededError):
        client.wait_ready(0.5)


@pytest.mark.slow
def test_a_client_that_waits_for_readiness_never_sees_unavailable(tmp_path: Path) -> None:
    """A real start (the model loads for seconds, in two processes): a client waits from
    before the server exists, then calls at once from several threads."""
    port = free_port()
    target = f"127.0.0.1:{port}"
    errors: list[BaseException] = []
    answered: list[int] = []
    ready = threading.Event()

    def calls(worker: int) -> None:
        try:
            with Client(target) as client:
                client.wait_ready(120)
                ready.set()
                conv = f"w{worker}"
                client.create_conversation(conv)
                for n in range(25):
                    client.append(conv, f"note {n} from worker {worker}")
                    client.get_context(conv, f"note {n}", max_tokens=200)
                    answered.append(worker)
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=calls, args=(w,)) for w in range(4)]
    for w in workers:
        w.start()  # before the server exists: wait_ready waits for it to listen too
    server = ServerProcess(tmp_path, "--port", str(port), ready=False)
    try:
        # The port is bound before the model has loaded (several seconds).
        before = statuses(target, wait=True)
        assert not ready.is_set(), "ready before the first look: the test proves nothing"
        assert before == live_not_ready()
        early = Client(target, channel_options=OWN_CONNECTIONS)
        with early, pytest.raises(UnavailableError, match="starting"):
            early.get_conversation("w0")
        for w in workers:
            w.join(180)
        assert errors == []
        assert len(answered) == 4 * 25
    finally:
        server.kill()


def _cli(target: str, stderr: Path, *argv: str) -> subprocess.Popen[str]:
    """The CLI, its stderr written to a file (read while it runs, and after)."""
    with stderr.open("w") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "contextwm", "--target", target, *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )


def _says(path: Path, text: str, seconds: float = 120.0) -> bool:
    """Whether the file holds text within seconds (a process writing it is slow to start on
    a busy machine)."""
    deadline = time.monotonic() + seconds
    while text not in path.read_text():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.slow
def test_the_cli_and_the_mcp_server_wait_for_a_starting_server_and_say_so(
    tmp_path: Path,
) -> None:
    """Started before the server exists: each waits, says for what, and then works."""
    port = free_port()
    target = f"127.0.0.1:{port}"
    waiting = f"waiting up to 60 s for contextwm at {target}"
    append_err, mcp_err = tmp_path / "append.err", tmp_path / "mcp.err"
    append = _cli(target, append_err, "append", "notes", "the deploy is on Tuesday")
    # stdio MCP with stdin closed: it creates its conversation, then ends with its input.
    mcp = _cli(target, mcp_err, "mcp", "--conversation", "agent")
    # Both are waiting for a server, and have said so, before there is one.
    assert _says(append_err, waiting), append_err.read_text()
    assert _says(mcp_err, waiting), mcp_err.read_text()
    server = ServerProcess(tmp_path / "data", "--port", str(port), ready=False)
    try:
        out, _ = append.communicate(timeout=180)
        assert append.returncode == 0, append_err.read_text()
        assert "appended seq 1" in out
        mcp.communicate(timeout=180)
        assert mcp.returncode == 0, mcp_err.read_text()
        with Client(target) as client:
            assert client.get_conversation("agent").conversation_id == "agent"
    finally:
        append.kill()
        mcp.kill()
        server.kill()
