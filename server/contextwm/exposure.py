"""Secure by default: whether the server may listen on an address, given its API keys and TLS.

Loopback and a Unix socket reach only this machine, so they stay open without keys. Any
other address reaches a network: there, without API keys anyone who reaches the port could
read and delete every conversation, and without TLS keys and conversations cross it in plain
text. So both are required there, unless the operator says the network is trusted.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

# Host names that always mean loopback. Other names are not resolved: what a name resolves
# to can change after start-up, and an address is what the server binds.
_LOOPBACK_NAMES = frozenset({"localhost"})


@dataclass(frozen=True, slots=True)
class Exposure:
    """Where the server listens, and what guards it there.

    Attributes:
        host: The address or host name to listen on (ignored with a socket).
        port: The port to listen on (0: one the system picks).
        socket: A Unix socket's path to listen on instead; None: host and port.
        api_keys: Every call must carry an API key (require_api_keys).
        tls: The server has a certificate and key (tls_cert_file and tls_key_file).
        insecure: The operator accepts a network address without keys and TLS.
    """

    host: str
    port: int
    socket: str | None = None
    api_keys: bool = False
    tls: bool = False
    insecure: bool = False


def is_loopback(host: str) -> bool:
    """Whether host names this machine only: "localhost", 127.0.0.0/8, ::1, or an IPv4
    loopback address mapped into IPv6. "0.0.0.0", "::" and "" are every interface."""
    name = host.strip().removeprefix("[").removesuffix("]")
    if name.lower() in _LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def host_port(host: str, port: int) -> str:
    """host:port as an address is written, an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def refusal(exposure: Exposure) -> str | None:
    """Why the server must not listen where exposure says, in one line that says what to do
    instead; None when it may.

    It may on a Unix socket or loopback always, and elsewhere with both API keys and TLS,
    or when insecure is set.
    """
    if exposure.socket or is_loopback(exposure.host) or exposure.insecure:
        return None
    if exposure.api_keys and exposure.tls:
        return None
    where = host_port(exposure.host, exposure.port)
    trusted = "or pass --insecure on a network you trust"
    if not exposure.api_keys and not exposure.tls:
        return (
            f"refusing to listen on {where} without API keys and TLS: anyone who reaches the"
            " port could read and delete every conversation; set require_api_keys and"
            f" tls_cert_file/tls_key_file, {trusted}"
        )
    if not exposure.api_keys:
        return (
            f"refusing to listen on {where} without API keys: anyone who reaches the port"
            f" could read and delete every conversation; set require_api_keys, {trusted}"
        )
    return (
        f"refusing to listen on {where} without TLS: API keys and conversations would cross"
        f" the network in plain text; set tls_cert_file and tls_key_file, {trusted}"
    )


def inspector_refusal(exposure: Exposure) -> str | None:
    """Why the web inspector must not be served where exposure says; None when it may.

    Off loopback it needs API keys whatever else is set (it shows conversations to whoever
    opens it, and a key is how it knows which), and TLS unless insecure is set."""
    if is_loopback(exposure.host):
        return None
    where = host_port(exposure.host, exposure.port)
    if not exposure.api_keys:
        return (
            f"refusing to serve the inspector on {where} without API keys: it would show every"
            " conversation to whoever opens it; set require_api_keys, or keep it on loopback"
            " (inspector_host = 127.0.0.1)"
        )
    if not exposure.tls and not exposure.insecure:
        return (
            f"refusing to serve the inspector on {where} without TLS: API keys and"
            " conversations would cross the network in plain text; set tls_cert_file and"
            " tls_key_file, or pass --insecure on a network you trust"
        )
    return None
