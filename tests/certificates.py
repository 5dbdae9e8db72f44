"""Certificates made at test time with `cryptography`, as PEM files: a CA, a server
certificate for 127.0.0.1, ::1 and localhost, a client certificate, and the odd ones the
refusals need (another CA and its client, a server certificate for another name only)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# A name no resolver knows: reached by address, with the name given as the server name.
OTHER_NAME = "contextwm.test"


@dataclass(frozen=True, slots=True)
class KeyPair:
    """A certificate's PEM file and its key's."""

    cert: Path
    key: Path


@dataclass(frozen=True, slots=True)
class Pki:
    """The files of a test's certificates."""

    ca: Path  # signed server and client
    server: KeyPair  # for 127.0.0.1, ::1 and localhost
    client: KeyPair
    other_ca: Path  # signed other_client only
    other_client: KeyPair
    named_server: KeyPair  # for OTHER_NAME only, signed by ca


@dataclass(frozen=True, slots=True)
class _Issuer:
    name: x509.Name
    key: ec.EllipticCurvePrivateKey


def _key() -> ec.EllipticCurvePrivateKey:
    # P-256: made in a millisecond, where an RSA key takes tens.
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _ca(directory: Path, name: str) -> tuple[Path, _Issuer]:
    key = _key()
    subject = _name(name)
    cert = (
        _builder(subject, subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    path = directory / f"{name}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path, _Issuer(subject, key)


def _leaf(
    directory: Path,
    name: str,
    issuer: _Issuer,
    *,
    usage: x509.ObjectIdentifier,
    alternative_names: list[x509.GeneralName] | None = None,
) -> KeyPair:
    key = _key()
    builder = (
        _builder(_name(name), issuer.name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if alternative_names:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(alternative_names), critical=False
        )
    cert = builder.sign(issuer.key, hashes.SHA256())
    cert_path = directory / f"{name}.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return KeyPair(cert_path, _write_key(directory / f"{name}.key", key))


def make_pki(directory: Path) -> Pki:
    """Makes the certificates in directory (which must exist)."""
    ca, issuer = _ca(directory, "ca")
    other_ca, other_issuer = _ca(directory, "other-ca")
    server = _leaf(
        directory,
        "server",
        issuer,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        alternative_names=[
            x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(ipaddress.ip_address("::1")),
        ],
    )
    named = _leaf(
        directory,
        "named-server",
        issuer,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        alternative_names=[x509.DNSName(OTHER_NAME)],
    )
    client = _leaf(directory, "client", issuer, usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    other_client = _leaf(
        directory, "other-client", other_issuer, usage=ExtendedKeyUsageOID.CLIENT_AUTH
    )
    return Pki(ca, server, client, other_ca, other_client, named)
