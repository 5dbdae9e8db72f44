"""Refuses every connection that leaves the machine, so that a framework which would
download something at run time (tokenizer tables, NLTK data, traces) fails the test
instead of passing on a machine that happens to be online."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

_LOCAL_NAMES = frozenset({"localhost", "ip6-localhost"})


def _is_local(host: object) -> bool:
    if not isinstance(host, str):
        return False
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _address_host(address: Any) -> object:
    # AF_UNIX addresses are paths (str or bytes): always local.
    if isinstance(address, str | bytes):
        return "localhost"
    return address[0] if isinstance(address, tuple) and address else None


def refuse_internet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes Python's sockets refuse to resolve or reach any host but this machine.

    gRPC's own sockets (C core) are untouched: the tests' servers listen on loopback anyway.
    """
    connect = socket.socket.connect
    connect_ex = socket.socket.connect_ex
    getaddrinfo = socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if not _is_local(_address_host(address)):
            raise OSError(f"test is offline: refused a connection to {address!r}")
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_local(_address_host(address)):
            raise OSError(f"test is offline: refused a connection to {address!r}")
        return connect_ex(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _is_local(host.decode() if isinstance(host, bytes) else host):
            raise OSError(f"test is offline: refused to resolve {host!r}")
        return getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
