"""Totals over the conversations loaded in memory: window fill, pending vectors and index
sizes, for the metrics."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from contextwm.conversations.runtime import ConversationRuntime


@dataclass(frozen=True, slots=True)
class LoadedTotals:
    conversations: int
    window_items: int
    window_item_limit: int  # the item limits of those windows, summed
    window_tokens: int
    window_token_limit: int  # their current token limits (adaptive ones included), summed
    pending_vectors: int  # items still waiting for their vector
    index_vectors: int  # vectors in the archive indexes loaded in memory


def loaded_totals(runtimes: Iterable[ConversationRuntime]) -> LoadedTotals:
    """Sums the runtimes' counts without taking their locks: a scrape must never wait behind
    a long retrieval, and a count read mid-change is off by one change at most."""
    conversations = items = item_limit = tokens = token_limit = pending = vectors = 0
    for rt in runtimes:
        if rt.deleted:
            continue
        window, index = rt.window, rt.index  # either may be replaced meanwhile
        conversations += 1
        items += len(window)
        item_limit += rt.record.settings.window_max_items
        tokens += window.tokens
        token_limit += rt.token_limit
        pending += rt.pending
        vectors += index.size if index is not None else 0
    return LoadedTotals(conversations, items, item_limit, tokens, token_limit, pending, vectors)
