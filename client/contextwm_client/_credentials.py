"""What a client presents to a server: the TLS files of a secure channel (`Tls`) and the
metadata that carries an API key."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

API_KEY_HEADER = "authorization"
"""The metadata key an API key travels under, as `Bearer <key>`."""

# The channel argument that checks the server's certificate against another name than the
# target's host (and sends it as SNI): an address reached by IP, a certificate issued for a
# name.
_TARGET_NAME_OVERRIDE = "grpc.ssl_target_name_override"


@dataclass(frozen=True, slots=True)
class Tls:
    """A TLS channel: which certificate authority to trust, and the client's own
    certificate when the server asks for one (mutual TLS). Paths to PEM files.

    Attributes:
        ca_file: The certificates to verify the server's with; None trusts the system's
            roots (those gRPC ships with).
        cert_file: The client's certificate chain, for a server that requires client
            certificates; given with key_file.
        key_file: The private key of cert_file (unencrypted).
        server_name: The name the server's certificate must be issued for, and the TLS
            server name sent; None takes the target's host.

    Raises:
        ValueError: cert_file without key_file, or key_file without cert_file; an empty
            path or server_name.
    """

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    server_name: str | None = None

    def __post_init__(self) -> None:
        for name in ("ca_file", "cert_file", "key_file", "server_name"):
            if getattr(self, name) == "":
                raise ValueError(f"Tls.{name} is empty: give a value, or None to leave it out")
        if (self.cert_file is None) != (self.key_file is None):
            given, missing = (
                ("cert_file", "key_file") if self.key_file is None else ("key_file", "cert_file")
            )
            raise ValueError(f"Tls.{given} without Tls.{missing}: a client certificate needs both")


def _read(path: str | None) -> bytes | None:
    return None if path is None else Path(path).read_bytes()


def channel_credentials(tls: Tls) -> grpc.ChannelCredentials:
    """The credentials of a TLS channel with tls's files, read now.

    Raises:
        OSError: A file cannot be read.
    """
    return grpc.ssl_channel_credentials(
        root_certificates=_read(tls.ca_file),
        private_key=_read(tls.key_file),
        certificate_chain=_read(tls.cert_file),
    )


def channel_options(tls: Tls) -> list[tuple[str, Any]]:
    """The channel arguments tls needs besides its credentials (a server name override)."""
    return [] if tls.server_name is None else [(_TARGET_NAME_OVERRIDE, tls.server_name)]


def api_key_metadata(api_key: str | None) -> tuple[tuple[str, str], ...]:
    """The metadata that sends api_key with a call: `authorization: Bearer <key>`; none
    for None.

    Raises:
        ValueError: The key is empty, or holds whitespace (a newline read from a file
            with it, say) or characters a gRPC header cannot carry.
    """
    if api_key is None:
        return ()
    # A header value is printable ASCII; a space would make "Bearer a b" ambiguous.
    if not api_key or not all("!" <= c <= "~" for c in api_key):
        raise ValueError(
            "api_key must be a non-empty string of printable ASCII without spaces or"
            " newlines (strip the newline of a key read from a file)"
        )
    return ((API_KEY_HEADER, f"Bearer {api_key}"),)
