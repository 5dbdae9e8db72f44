"""API key tokens: `cwm_<key id>_<secret>`, made from the system's random source, and the
digests the store keeps in their place."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

PREFIX = "cwm"
ID_BYTES = 6  # 12 hex digits: an id to show and log, unique among a server's keys
SECRET_BYTES = 32  # 64 hex digits: 256 bits, beyond any guessing
_TOKEN = re.compile(rf"{PREFIX}_([0-9a-f]{{{2 * ID_BYTES}}})_[0-9a-f]{{{2 * SECRET_BYTES}}}")
TOKEN_FORM = f"{PREFIX}_<id>_<secret> ({2 * ID_BYTES} and {2 * SECRET_BYTES} lowercase hex digits)"


def new_key_id() -> str:
    """A new key id: 12 lowercase hex digits."""
    return secrets.token_hex(ID_BYTES)


def new_token(key_id: str) -> str:
    """A new token for the key `key_id`, with a fresh secret.

    Args:
        key_id: The key's id, as new_key_id makes them.

    Returns:
        `cwm_<key_id>_<secret>`, the secret 64 lowercase hex digits.
    """
    return f"{PREFIX}_{key_id}_{secrets.token_hex(SECRET_BYTES)}"


def token_digest(token: str) -> str:
    """The SHA-256 of the token, in hex: what the store keeps instead of the token.

    A fast hash is right here, unlike for passwords: a token holds 256 random bits, so a
    stolen digest cannot be reversed by trying candidates however fast each try is, and a
    slow hash would only slow down every authenticated call.
    """
    return hashlib.sha256(token.encode()).hexdigest()


def key_id_of(token: str) -> str | None:
    """The key id inside a well-formed token; None if the token is not of the form
    `cwm_<12 hex>_<64 hex>`."""
    match = _TOKEN.fullmatch(token)
    return match[1] if match else None


def same_digest(a: str, b: str) -> bool:
    """Whether two digests are equal, in time that does not depend on where they differ (so
    that timing a wrong token reveals nothing of the right digest)."""
    return hmac.compare_digest(a.encode(), b.encode())
