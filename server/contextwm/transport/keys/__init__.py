"""The transport of API keys: create, list, revoke, rotate."""
