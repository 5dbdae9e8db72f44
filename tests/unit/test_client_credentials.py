"""The clients' API key and TLS arguments: the key goes with every call, unary and streaming,
sync and asyncio, as a real server receives it; bad keys and half-given TLS files are refused
when the client is made."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from contextwm_client import AsyncClient, Client, Tls, UnexpectedStatusError
from recording_server import Call, Recorder, recording_server

KEY = "cwm_k1.S3cr3t-_~"
BEARER = ("authorization", f"Bearer {KEY}")


@pytest.fixture
def recorded() -> Iterator[tuple[str, Recorder]]:
    with recording_server() as server:
        yield server


def methods(calls: list[Call]) -> list[str]:
    return [c.method.rsplit("/", 1)[1] for c in calls]


def test_the_key_goes_with_unary_and_streaming_calls(recorded: tuple[str, Recorder]) -> None:
    target, recorder = recorded
    with Client(target, api_key=KEY, metadata=[("x-trace", "t1")]) as client:
        with pytest.raises(UnexpectedStatusError):  # UNIMPLEMENTED: nothing behind it
            client.get_conversation("c")
        with pytest.raises(UnexpectedStatusError):  # server streaming
            list(client.export("c"))
        with pytest.raises(UnexpectedStatusError):  # client streaming
            client.restore_export(['{"kind": "header"}'])
        with pytest.raises(UnexpectedStatusError), client.watch("c") as events:
            list(events)
    calls = recorder.context_calls()
    assert methods(calls) == ["GetConversation", "Export", "RestoreExport", "Watch"]
    for call in calls:
        assert call.metadata["authorization"] == BEARER[1], call.method
        assert call.metadata["x-trace"] == "t1"


def test_the_async_client_sends_the_key_with_unary_and_streaming_calls(
    recorded: tuple[str, Recorder],
) -> None:
    target, recorder = recorded

    async def calls() -> None:
        async with AsyncClient(target, api_key=KEY) as client:
            with pytest.raises(UnexpectedStatusError):
                await client.get_conversation("c")
            with pytest.raises(UnexpectedStatusError):
                async for _ in client.export("c"):
                    pass
            with pytest.raises(UnexpectedStatusError):
                await client.restore_export(['{"kind": "header"}'])
            with pytest.raises(UnexpectedStatusError):
                async with client.watch("c") as events:
                    async for _ in events:
                        pass

    asyncio.run(calls())
    sent = recorder.context_calls()
    assert methods(sent) == ["GetConversation", "Export", "RestoreExport", "Watch"]
    assert all(c.metadata.get("authorization") == BEARER[1] for c in sent)


def test_the_readiness_wait_sends_the_key_too(recorded: tuple[str, Recorder]) -> None:
    target, recorder = recorded
    with (
        Client(target, api_key=KEY, ready_timeout=5) as client,
        pytest.raises(UnexpectedStatusError),
    ):
        client.get_conversation("c")
    health = [c for c in recorder.calls if c.method.startswith("/grpc.health.v1.Health/")]
    assert health and all(c.metadata.get("authorization") == BEARER[1] for c in health)


def test_without_a_key_no_authorization_is_sent(recorded: tuple[str, Recorder]) -> None:
    target, recorder = recorded
    with Client(target) as client, pytest.raises(UnexpectedStatusError):
        client.get_conversation("c")
    (call,) = recorder.context_calls()
    assert "authorization" not in call.metadata


@pytest.mark.parametrize("key", ["", " k", "k ", "a b", "k\n", "k\r\n", "\tk", "clé", "k\x00"])
def test_a_key_that_is_empty_or_has_whitespace_is_refused_by_both_clients(key: str) -> None:
    for client_class in (Client, AsyncClient):
        with pytest.raises(ValueError, match="api_key must be a non-empty string"):
            client_class("127.0.0.1:1", api_key=key)


def test_a_key_and_an_authorization_entry_of_metadata_are_refused_together() -> None:
    with pytest.raises(ValueError, match="give api_key or an 'authorization' entry"):
        Client("127.0.0.1:1", api_key=KEY, metadata=[("Authorization", "Bearer other")])
    # Either alone is taken.
    Client("127.0.0.1:1", metadata=[("authorization", "Bearer other")]).close()


def test_tls_and_credentials_are_refused_together() -> None:
    with pytest.raises(ValueError, match="give tls or credentials, not both"):
        Client("127.0.0.1:1", tls=Tls(), credentials=grpc.ssl_channel_credentials())


def test_tls_takes_a_certificate_with_its_key_only() -> None:
    with pytest.raises(ValueError, match=r"Tls.cert_file without Tls.key_file"):
        Tls(cert_file="client.pem")
    with pytest.raises(ValueError, match=r"Tls.key_file without Tls.cert_file"):
        Tls(ca_file="ca.pem", key_file="client.key")
    with pytest.raises(ValueError, match=r"Tls.ca_file is empty"):
        Tls(ca_file="")
    assert Tls(cert_file="c.pem", key_file="c.key").ca_file is None


def test_tls_is_a_frozen_value() -> None:
    tls = Tls(ca_file="ca.pem", server_name="cwm.internal")
    assert tls == Tls("ca.pem", None, None, "cwm.internal")
    with pytest.raises(AttributeError):
        tls.ca_file = "other.pem"  # type: ignore[misc]


def test_tls_files_are_read_when_the_client_is_made(tmp_path: Path) -> None:
    missing = tmp_path / "missing-ca.pem"
    with pytest.raises(FileNotFoundError, match=r"missing-ca\.pem"):
        Client("127.0.0.1:1", tls=Tls(ca_file=str(missing)))
