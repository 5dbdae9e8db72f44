"""How client commands reach a server that asks for credentials: the --api-key and --tls-*
options, their defaults from the environment, and the one function that turns them into the
client's arguments."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass

from contextwm_client import Tls

API_KEY_ENV = "CONTEXTWM_API_KEY"
TLS_CA_ENV = "CONTEXTWM_TLS_CA"
TLS_CERT_ENV = "CONTEXTWM_TLS_CERT"
TLS_KEY_ENV = "CONTEXTWM_TLS_KEY"
VARIABLES = (API_KEY_ENV, TLS_CA_ENV, TLS_CERT_ENV, TLS_KEY_ENV)
"""The environment variables that give the options' defaults."""

OPTIONS_WITH_VALUE = frozenset({"--api-key", "--tls-ca", "--tls-cert", "--tls-key"})
"""The options, each of which takes a value."""


@dataclass(frozen=True, slots=True)
class Connection:
    """What a client command connects with besides the address: `Client`'s api_key and
    tls arguments."""

    api_key: str | None = None
    tls: Tls | None = None


def add_connection_arguments(
    parser: argparse.ArgumentParser, environ: Mapping[str, str] | None
) -> None:
    """Adds --api-key, --tls-ca, --tls-cert and --tls-key to parser. The TLS options are
    stored as client_tls_*: `contextwm serve` has flags of the same names for its own files.

    Args:
        parser: The top-level parser (the options before the command), or a command's.
        environ: The environment, whose variables give the defaults (an empty one is unset);
            None for a command's parser: there the options default to what was given before
            the command (argparse.SUPPRESS).
    """

    def default(variable: str) -> str | None:
        return argparse.SUPPRESS if environ is None else environ.get(variable) or None

    parser.add_argument(
        "--api-key",
        default=default(API_KEY_ENV),
        metavar="KEY",
        help=f"sent with every call as authorization: Bearer KEY (default ${API_KEY_ENV},"
        " which, unlike the flag, does not show in the process list)",
    )
    parser.add_argument(
        "--tls-ca",
        dest="client_tls_ca",
        default=default(TLS_CA_ENV),
        metavar="PEM",
        help="connect with TLS, trusting the server certificates this CA signed (default"
        f" ${TLS_CA_ENV}; without it, but with --tls-cert, the system's roots)",
    )
    parser.add_argument(
        "--tls-cert",
        dest="client_tls_cert",
        default=default(TLS_CERT_ENV),
        metavar="PEM",
        help=f"TLS with this client certificate, for mutual TLS (default ${TLS_CERT_ENV})",
    )
    parser.add_argument(
        "--tls-key",
        dest="client_tls_key",
        default=default(TLS_KEY_ENV),
        metavar="PEM",
        help=f"the client certificate's private key (default ${TLS_KEY_ENV})",
    )


def connection_of(args: argparse.Namespace) -> Connection:
    """The client's credentials as the options give them: TLS when any --tls-* option is
    given, an API key when --api-key is (its checks are the client's).

    Raises:
        ValueError: --tls-cert without --tls-key or the other way round, or an empty path.
    """
    files = {
        "--tls-ca": args.client_tls_ca,
        "--tls-cert": args.client_tls_cert,
        "--tls-key": args.client_tls_key,
    }
    for flag, path in files.items():
        if path == "":
            raise ValueError(f"{flag} is empty: give a PEM file")
    ca, cert, key = files.values()
    if (cert is None) != (key is None):
        raise ValueError("--tls-cert and --tls-key go together: a client certificate needs its key")
    tls = None if ca is None and cert is None else Tls(ca_file=ca, cert_file=cert, key_file=key)
    return Connection(api_key=args.api_key, tls=tls)
