"""Adapters that make contextwm the memory of agent frameworks, each an extra of the client."""
