"""A search's continuation token: where the next page starts, checked against the query.

The token carries the position itself (the next file's path and how many of its matching
lines were shown), not a key to server state, so any replica, before or after a restart,
can continue a search. It is not secret: it names a path the agent already saw.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass

from contextwm.domain.errors import InvalidArgument
from contextwm.domain.workspace_files import FileSearchQuery

_VERSION = 1


@dataclass(frozen=True, slots=True)
class Position:
    """The next page starts at the file `path` (or the first after it, if it has gone),
    after its first `shown` matching lines; path "" is the start."""

    path: str = ""
    shown: int = 0


def query_digest(query: FileSearchQuery, scope: str) -> str:
    """A digest of what decides the matches and their order.

    The page size, context lines and max_tokens are left out: they shape pages, not the
    matches, so an agent may change them between pages (e.g. ask for smaller pages).

    Args:
        query: the search.
        scope: the searched path as resolved (workspace-relative).
    """
    fields = [
        query.pattern,
        query.regex,
        query.case.value,
        list(query.include),
        list(query.exclude),
        scope,
        query.max_matches_per_file,
    ]
    data = json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode()
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def encode_token(digest: str, position: Position) -> str:
    """A URL-safe token for the page starting at position."""
    body = {"v": _VERSION, "q": digest, "f": position.path, "n": position.shown}
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(data).decode("ascii")


def decode_token(token: str, digest: str) -> Position:
    """The position a token from encode_token() holds.

    Raises:
        InvalidArgument: the token is garbled or from another version, or was made for a
            different search (the digest differs).
    """
    try:
        body = json.loads(base64.urlsafe_b64decode(token.encode("ascii")))
        version, made_for, path, shown = body["v"], body["q"], body["f"], body["n"]
    except (ValueError, binascii.Error, UnicodeError, TypeError, KeyError) as exc:
        raise InvalidArgument(
            "page_token is not a token this search returned: pass the next_page_token of"
            " the previous page unchanged, or an empty page_token to start from the first page"
        ) from exc
    valid = (
        version == _VERSION
        and isinstance(made_for, str)
        and isinstance(path, str)
        and type(shown) is int
        and shown >= 0
    )
    if not valid:
        raise InvalidArgument(
            "page_token is malformed or from another server version: start again with an"
            " empty page_token"
        )
    if made_for != digest:
        raise InvalidArgument(
            "page_token belongs to a different search (its pattern, regex or case flag,"
            " globs, path or max_matches_per_file differ): repeat that search's fields to"
            " continue it, or pass an empty page_token to start this one"
        )
    return Position(path, shown)
