"""The server's TLS files (tls_cert_file, tls_key_file, tls_client_ca_file): read once at
start-up and checked, so that a half-made configuration, an unreadable file or a key of
another certificate stops the server with one line naming the setting, rather than failing
every handshake once it serves."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from contextwm.settings import ServerSettings, SettingsError


@dataclass(frozen=True, slots=True)
class ServerTls:
    """The PEM bytes the gRPC server's credentials are made of.

    Attributes:
        certificate_chain: The server's certificate, then any intermediates.
        private_key: The key of the server's certificate.
        client_ca: The certificates a client's certificate must be signed by; None: clients
            present none (TLS without client certificates).
    """

    certificate_chain: bytes
    private_key: bytes
    client_ca: bytes | None = None

    @property
    def mutual(self) -> bool:
        """Whether clients must present a certificate the client CA signed."""
        return self.client_ca is not None


def tls_configured(settings: ServerSettings) -> bool:
    """Whether the settings ask for TLS: a certificate and its key (see `load_server_tls`
    for the other combinations, which are refused)."""
    return bool(settings.tls_cert_file and settings.tls_key_file)


def load_server_tls(settings: ServerSettings) -> ServerTls | None:
    """Reads and checks the TLS files the settings name.

    Args:
        settings: tls_cert_file, tls_key_file and tls_client_ca_file ("" = unset).

    Returns:
        The files' contents; None when none of the three is set.

    Raises:
        SettingsError: A certificate without its key or a key without its certificate; a
            client CA without both; a file that cannot be read or holds no PEM certificate
            (or key); an encrypted key; a key that is not the certificate's.
    """
    cert_file, key_file = settings.tls_cert_file, settings.tls_key_file
    client_ca_file = settings.tls_client_ca_file
    if not (cert_file or key_file or client_ca_file):
        return None
    if cert_file and not key_file:
        raise SettingsError(
            f"tls_cert_file = {cert_file!r} is set without tls_key_file: TLS needs the"
            " certificate's private key too"
        )
    if key_file and not cert_file:
        raise SettingsError(
            f"tls_key_file = {key_file!r} is set without tls_cert_file: TLS needs the"
            " certificate the key belongs to"
        )
    if not cert_file:
        raise SettingsError(
            f"tls_client_ca_file = {client_ca_file!r} is set without tls_cert_file and"
            " tls_key_file: mutual TLS needs the server's own certificate and key too"
        )
    chain = _read("tls_cert_file", cert_file)
    leaf = _certificates("tls_cert_file", cert_file, chain)[0]
    key = _read("tls_key_file", key_file)
    public_key = _public_key_der(key_file, key)
    if leaf.public_key().public_bytes(*_SPKI) != public_key:
        raise SettingsError(
            f"tls_key_file = {key_file!r} is not the key of the certificate in"
            f" tls_cert_file = {cert_file!r}"
        )
    client_ca = None
    if client_ca_file:
        client_ca = _read("tls_client_ca_file", client_ca_file)
        _certificates("tls_client_ca_file", client_ca_file, client_ca)
    return ServerTls(chain, key, client_ca)


# Public keys are compared as their DER SubjectPublicKeyInfo: one form for every key type.
_SPKI = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _read(setting: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise SettingsError(
            f"{setting} = {path!r}: cannot read it: {exc.strerror or exc}"
        ) from None


def _certificates(setting: str, path: str, data: bytes) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError:
        raise SettingsError(
            f"{setting} = {path!r} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
        ) from None


def _public_key_der(path: str, data: bytes) -> bytes:
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:  # cryptography's word for "encrypted, and no password given"
        raise SettingsError(
            f"tls_key_file = {path!r} is encrypted: the server cannot ask for its password;"
            " store it unencrypted, readable by the server's user only"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise SettingsError(
            f"tls_key_file = {path!r} holds no PEM private key (-----BEGIN PRIVATE KEY-----)"
        ) from None
    return key.public_key().public_bytes(*_SPKI)
