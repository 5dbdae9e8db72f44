"""The server's TLS files are read and checked at start-up: every way of getting them wrong
is a SettingsError of one line naming the setting and the file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from certificates import Pki
from contextwm.settings import ServerSettings, SettingsError
from contextwm.tls_files import load_server_tls, tls_configured
from cryptography.hazmat.primitives import serialization


def tls(cert: Path | str = "", key: Path | str = "", client_ca: Path | str = "") -> ServerSettings:
    return dataclasses.replace(
        ServerSettings(),
        tls_cert_file=str(cert),
        tls_key_file=str(key),
        tls_client_ca_file=str(client_ca),
    )


def refused(settings: ServerSettings) -> str:
    with pytest.raises(SettingsError) as caught:
        load_server_tls(settings)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_no_tls_settings_is_plaintext() -> None:
    assert load_server_tls(ServerSettings()) is None
    assert not tls_configured(ServerSettings())


def test_a_certificate_and_its_key_are_read(pki: Pki) -> None:
    loaded = load_server_tls(tls(pki.server.cert, pki.server.key))
    assert loaded is not None
    assert loaded.certificate_chain == pki.server.cert.read_bytes()
    assert loaded.private_key == pki.server.key.read_bytes()
    assert loaded.client_ca is None and not loaded.mutual


def test_a_client_ca_makes_it_mutual(pki: Pki) -> None:
    loaded = load_server_tls(tls(pki.server.cert, pki.server.key, pki.ca))
    assert loaded is not None and loaded.mutual
    assert loaded.client_ca == pki.ca.read_bytes()


def test_a_chain_with_intermediates_is_checked_against_its_first_certificate(
    pki: Pki, tmp_path: Path
) -> None:
    chain = tmp_path / "chain.pem"
    chain.write_bytes(pki.server.cert.read_bytes() + pki.ca.read_bytes())
    assert load_server_tls(tls(chain, pki.server.key)) is not None


def test_half_configured_tls_names_what_is_missing(pki: Pki) -> None:
    cert, key = pki.server.cert, pki.server.key
    assert refused(tls(cert=cert)) == (
        f"tls_cert_file = '{cert}' is set without tls_key_file: TLS needs the certificate's"
        " private key too"
    )
    assert refused(tls(key=key)).startswith(f"tls_key_file = '{key}' is set without tls_cert_file")
    assert refused(tls(client_ca=pki.ca)).startswith(
        f"tls_client_ca_file = '{pki.ca}' is set without tls_cert_file and tls_key_file"
    )
    assert refused(tls(cert=cert, client_ca=pki.ca)).startswith("tls_cert_file = ")


def test_files_that_cannot_be_read_are_named(pki: Pki, tmp_path: Path) -> None:
    missing = tmp_path / "missing.pem"
    assert refused(tls(missing, pki.server.key)) == (
        f"tls_cert_file = '{missing}': cannot read it: No such file or directory"
    )
    assert refused(tls(pki.server.cert, missing)).startswith(f"tls_key_file = '{missing}': cannot")
    assert refused(tls(pki.server.cert, pki.server.key, missing)).startswith(
        f"tls_client_ca_file = '{missing}': cannot read it"
    )
    assert refused(tls(tmp_path, pki.server.key)).startswith(f"tls_cert_file = '{tmp_path}': ")


def test_files_that_hold_no_pem_are_named(pki: Pki, tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    assert refused(tls(junk, pki.server.key)) == (
        f"tls_cert_file = '{junk}' holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
    )
    assert refused(tls(pki.server.cert, junk)).startswith(
        f"tls_key_file = '{junk}' holds no PEM private key"
    )
    # A certificate where the key should be, and the other way round.
    assert "holds no PEM private key" in refused(tls(pki.server.cert, pki.server.cert))
    assert "holds no PEM certificate" in refused(tls(pki.server.key, pki.server.key))
    assert refused(tls(pki.server.cert, pki.server.key, junk)).startswith(
        f"tls_client_ca_file = '{junk}' holds no PEM certificate"
    )


def test_a_key_of_another_certificate_is_refused(pki: Pki) -> None:
    assert refused(tls(pki.server.cert, pki.client.key)) == (
        f"tls_key_file = '{pki.client.key}' is not the key of the certificate in"
        f" tls_cert_file = '{pki.server.cert}'"
    )


def test_an_encrypted_key_is_refused(pki: Pki, tmp_path: Path) -> None:
    key = serialization.load_pem_private_key(pki.server.key.read_bytes(), password=None)
    encrypted = tmp_path / "encrypted.key"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    assert refused(tls(pki.server.cert, encrypted)).startswith(
        f"tls_key_file = '{encrypted}' is encrypted: the server cannot ask for its password"
    )
