"""The TokenCounter port: exact token counts for one encoding."""

from __future__ import annotations

from typing import Protocol


class TokenCounter(Protocol):
    """Counts tokens exactly as the conversation's encoding does."""

    @property
    def encoding(self) -> str: ...

    def count(self, text: str) -> int:
        """Tokens of text, treating special-token strings as ordinary text."""
        ...
