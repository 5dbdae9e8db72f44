"""Whether a call may run: the key it carries authenticated, its role enough for the method,
and every namespace the call touches inside the key's scope; decided before any work."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from contextwm.domain.access import EVERY_NAMESPACE, ApiKey, Role
from contextwm.domain.errors import PermissionDenied, Unauthenticated

NO_KEY = (
    "this server requires an API key: send the call metadata `authorization: Bearer <key>`"
    " (the Python client's api_key=, the CLI's --api-key or CONTEXTWM_API_KEY)"
)


class Authenticator(Protocol):
    def authenticate(self, token: str) -> ApiKey:
        """The live key whose token this is.

        Raises:
            Unauthenticated: malformed, unknown, revoked or expired.
        """
        ...


class Guard:
    """Admits calls. Where keys are required, a call without one is refused; where they are
    not (loopback, the Unix socket), a call without one runs unchecked, and a call with one
    is held to that key all the same, so a read key never writes anywhere."""

    def __init__(self, keys: Authenticator, *, required: bool) -> None:
        self._keys = keys
        self.required = required

    def caller(self, token: str | None) -> ApiKey | None:
        """The key a call carries, authenticated; None for a call without one where keys
        are not required.

        Raises:
            Unauthenticated: no key where one is required, or one that does not authenticate.
        """
        if token is None:
            if self.required:
                raise Unauthenticated(NO_KEY)
            return None
        return self._keys.authenticate(token)

    @staticmethod
    def admit(
        key: ApiKey | None, method: str, needed: Role, namespaces: Iterable[str] | None
    ) -> None:
        """Refuses the call unless key may call `method` (which needs `needed`) on each of
        `namespaces` (None: the call spans every namespace, which takes an admin key for
        every namespace). The refusal names the key and the namespace only, so it reads the
        same whether or not what the call names exists.

        Raises:
            PermissionDenied: the role is too low, or a namespace is outside the key's scope.
        """
        if key is None:
            return
        if key.role < needed:
            raise PermissionDenied(
                f"API key {key.key_id} has the {key.role.name.lower()} role; {method} needs"
                f" {needed.name.lower()}"
            )
        if namespaces is None:
            if key.role < Role.ADMIN or not key.covers_every_namespace:
                raise PermissionDenied(
                    f"{method} here spans every namespace, which needs an admin key whose scope"
                    f" is {EVERY_NAMESPACE!r}; API key {key.key_id} is a"
                    f" {key.role.name.lower()} key for {', '.join(key.namespaces)}"
                )
            return
        for namespace in namespaces:
            if not key.covers(namespace):
                raise PermissionDenied(f"API key {key.key_id} may not use namespace {namespace!r}")
