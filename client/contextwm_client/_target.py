"""Server addresses as people type them: a host alone means contextwm's port."""

from __future__ import annotations

DEFAULT_PORT = 50051
"""The port `contextwm serve` listens on unless told otherwise."""

# gRPC's own address schemes: taken as they are.
_SCHEMES = ("unix:", "unix-abstract:", "vsock:", "dns:", "ipv4:", "ipv6:", "xds:")


def with_port(target: str) -> str:
    """target with DEFAULT_PORT when it names a host without a port.

    "localhost" becomes "localhost:50051" and "::1" becomes "[::1]:50051" (gRPC alone would
    take port 443); "host:port", "[::1]:port" and scheme addresses ("unix:/path",
    "dns:///host:port") are returned unchanged.
    """
    t = target.strip()
    if not t or t.startswith(_SCHEMES) or "://" in t:
        return t
    if t.startswith("["):
        return t if "]:" in t else f"{t}:{DEFAULT_PORT}"
    colons = t.count(":")
    if colons == 0:
        return f"{t}:{DEFAULT_PORT}"
    if colons > 1:  # a bare IPv6 address
        return f"[{t}]:{DEFAULT_PORT}"
    return t
