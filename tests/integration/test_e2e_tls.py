"""TLS and mutual TLS through real gRPC: a server with certificates made for the test, and
clients (sync, asyncio, the command line) that trust its CA, another CA, or none; under
mutual TLS, clients with and without a certificate the client CA signed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from certificates import OTHER_NAME, Pki
from conftest import StartService
from contextwm.app import Service
from contextwm.cli import main
from contextwm_client import AsyncClient, Client, Tls, UnavailableError

# A refused handshake ends the first call at once; the deadline only bounds a surprise.
TIMEOUT = 10.0


@pytest.fixture
def tls_service(start_service: StartService, pki: Pki) -> Service:
    return start_service(tls_cert_file=str(pki.server.cert), tls_key_file=str(pki.server.key))


@pytest.fixture
def mtls_service(start_service: StartService, pki: Pki) -> Service:
    return start_service(
        tls_cert_file=str(pki.server.cert),
        tls_key_file=str(pki.server.key),
        tls_client_ca_file=str(pki.ca),
    )


def roundtrip(client: Client, conversation: str) -> None:
    """Creates a conversation, appends to it and reads it back."""
    client.create_conversation(conversation)
    appended = client.append(conversation, "The billing service listens on port 8443.")
    assert appended.seq == 1
    assert client.get_conversation(conversation).total_items == 1


def refused(target: str, tls: Tls | None) -> None:
    with Client(target, tls=tls, timeout=TIMEOUT) as client, pytest.raises(UnavailableError):
        client.get_conversation("any")


def test_a_client_that_trusts_the_ca_works_over_tls(tls_service: Service, pki: Pki) -> None:
    tls = Tls(ca_file=str(pki.ca))
    with Client(f"127.0.0.1:{tls_service.port}", tls=tls, timeout=TIMEOUT) as client:
        roundtrip(client, "over-tls")
    # The certificate names localhost too.
    with Client(f"localhost:{tls_service.port}", tls=tls, timeout=TIMEOUT) as client:
        assert client.get_conversation("over-tls").total_items == 1


def test_a_plaintext_client_is_refused(tls_service: Service) -> None:
    refused(f"127.0.0.1:{tls_service.port}", None)


def test_a_client_that_trusts_another_ca_is_refused(tls_service: Service, pki: Pki) -> None:
    refused(f"127.0.0.1:{tls_service.port}", Tls(ca_file=str(pki.other_ca)))
    # Nor is the server taken on the system's roots.
    refused(f"127.0.0.1:{tls_service.port}", Tls())


def test_server_name_checks_a_certificate_issued_for_another_name(
    start_service: StartService, pki: Pki
) -> None:
    service = start_service(
        tls_cert_file=str(pki.named_server.cert), tls_key_file=str(pki.named_server.key)
    )
    target = f"127.0.0.1:{service.port}"
    refused(target, Tls(ca_file=str(pki.ca)))
    tls = Tls(ca_file=str(pki.ca), server_name=OTHER_NAME)
    with Client(target, tls=tls, timeout=TIMEOUT) as client:
        roundtrip(client, "by-name")


def test_mutual_tls_refuses_a_client_without_a_certificate(mtls_service: Service, pki: Pki) -> None:
    target = f"127.0.0.1:{mtls_service.port}"
    refused(target, Tls(ca_file=str(pki.ca)))
    refused(target, None)
    # Signed by a CA the server does not take clients of.
    other = pki.other_client
    refused(target, Tls(ca_file=str(pki.ca), cert_file=str(other.cert), key_file=str(other.key)))


def test_mutual_tls_takes_a_client_with_a_certificate(mtls_service: Service, pki: Pki) -> None:
    tls = Tls(ca_file=str(pki.ca), cert_file=str(pki.client.cert), key_file=str(pki.client.key))
    with Client(f"127.0.0.1:{mtls_service.port}", tls=tls, timeout=TIMEOUT) as client:
        roundtrip(client, "mutual")


def test_the_async_client_works_over_mutual_tls(mtls_service: Service, pki: Pki) -> None:
    tls = Tls(ca_file=str(pki.ca), cert_file=str(pki.client.cert), key_file=str(pki.client.key))

    async def calls() -> int:
        target = f"127.0.0.1:{mtls_service.port}"
        async with AsyncClient(target, tls=tls, timeout=TIMEOUT) as client:
            await client.create_conversation("async-mutual")
            await client.append("async-mutual", "over mutual TLS, from asyncio")
            return (await client.get_conversation("async-mutual")).total_items

    assert asyncio.run(calls()) == 1
    refused(f"127.0.0.1:{mtls_service.port}", Tls(ca_file=str(pki.ca)))


def test_the_command_line_connects_with_the_tls_options_and_variables(
    mtls_service: Service, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = ["--target", f"127.0.0.1:{mtls_service.port}"]
    files = ["--tls-ca", str(pki.ca), "--tls-cert", str(pki.client.cert)]
    files += ["--tls-key", str(pki.client.key)]
    assert main([*target, *files, "append", "cli", "over mutual TLS"]) == 0
    assert main([*target, "--wait", "0", "get", "cli"]) == 1  # plaintext: refused
    monkeypatch.setenv("CONTEXTWM_TLS_CA", str(pki.ca))
    monkeypatch.setenv("CONTEXTWM_TLS_CERT", str(pki.client.cert))
    monkeypatch.setenv("CONTEXTWM_TLS_KEY", str(pki.client.key))
    assert main([*target, "append", "cli", "again, from the variables"]) == 0
    tls = Tls(ca_file=str(pki.ca), cert_file=str(pki.client.cert), key_file=str(pki.client.key))
    with Client(target[1], tls=tls, timeout=TIMEOUT) as client:
        assert client.get_conversation("cli").total_items == 2


def test_a_unix_socket_is_served_in_plaintext_whatever_the_tls_settings(
    start_service: StartService, pki: Pki, tmp_path: Path
) -> None:
    socket = tmp_path / "cwm.sock"
    start_service(
        socket=str(socket),
        tls_cert_file=str(pki.server.cert),
        tls_key_file=str(pki.server.key),
        tls_client_ca_file=str(pki.ca),
    )
    with Client(f"unix:{socket}", timeout=TIMEOUT) as client:
        roundtrip(client, "on-the-socket")
