"""Recent workspace searches by the page token that continues them.

The server continues a search only when it is asked again with the same arguments and the
page's token; remembering the arguments here lets the model continue with the token alone.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from contextwm_client import CaseMode

DEFAULT_CAPACITY = 256
"""Searches remembered; each is a few short strings, and a model rarely pages back far."""


@dataclass(frozen=True, slots=True)
class FileSearch:
    """The arguments of one `Client.search_files` call, less its page token."""

    conversation_id: str
    pattern: str
    regex: bool
    case: CaseMode
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    path: str
    max_matches_per_file: int
    context_lines: int | None
    page_size: int
    max_tokens: int


class SearchPages:
    """The searches behind the most recent page tokens; the least recently used go first."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        """Starts empty.

        Args:
            capacity: Tokens remembered, at least 1.

        Raises:
            ValueError: capacity is below 1.
        """
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self._capacity = capacity
        self._searches: OrderedDict[str, FileSearch] = OrderedDict()
        # Tools run on worker threads, so two calls may remember or recall at once.
        self._lock = threading.Lock()

    def remember(self, page_token: str, search: FileSearch) -> None:
        """Keeps the search that page_token continues; an empty token (a last page) is ignored."""
        if not page_token:
            return
        with self._lock:
            self._searches[page_token] = search
            self._searches.move_to_end(page_token)
            while len(self._searches) > self._capacity:
                self._searches.popitem(last=False)

    def recall(self, page_token: str) -> FileSearch | None:
        """The search page_token continues, or None when it was never seen or is forgotten."""
        with self._lock:
            search = self._searches.get(page_token)
            if search is not None:
                self._searches.move_to_end(page_token)
            return search
