"""API keys: tokens, the service that creates, rotates, revokes and checks them, and their
offline command."""

from contextwm.access.keys import Keys

__all__ = ["Keys"]
