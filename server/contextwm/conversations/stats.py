"""The statistics of what the store holds: a scope's conversations, paged, and its totals,
with the size of each conversation's saved index."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from contextwm.conversations.validation import (
    Limits,
    conversation_page_token,
    page_size_of,
    page_token_conversation,
    scope_of,
)
from contextwm.domain.errors import InvalidArgument, NotFound
from contextwm.domain.scope import Scope
from contextwm.domain.stats import ConversationStats, StoreStats
from contextwm.ports.stats_store import StatsStore
from contextwm.ports.vector_index import VectorIndexFiles


@dataclass(frozen=True, slots=True)
class StatsPage:
    conversations: tuple[ConversationStats, ...]  # ordered by namespace, then id
    total: StoreStats  # the whole scope, not just this page
    conversation_count: int  # in the scope
    next_page_token: str  # empty on the last page
    model: str  # the embedding model the vectors are counted for


class Stats:
    """Thread-safe: it only reads, the store's figures from one snapshot of it and the index
    files as they are on disk (written every index_save_seconds, so they lag the store)."""

    def __init__(
        self, store: StatsStore, index_files: VectorIndexFiles, model: str, limits: Limits
    ) -> None:
        self.store = store
        self.index_files = index_files
        self.model = model
        self.limits = limits

    def get(
        self,
        namespace: str,
        conversation_id: str,
        *,
        all_namespaces: bool = False,
        page_size: int = 0,
        page_token: str = "",
    ) -> StatsPage:
        """The figures of one conversation, one namespace's or every namespace's.

        Args:
            namespace: The namespace ("" is the default one); empty with all_namespaces.
            conversation_id: One conversation of the namespace; "" for all of them.
            all_namespaces: Every conversation of the store.
            page_size: Conversations per page (0: 100).
            page_token: A previous page's next_page_token, of the same scope.

        Returns:
            The page of conversations and the scope's totals.

        Raises:
            InvalidArgument: A bad namespace, id, page size or token, or a scope that is
                named twice.
            NotFound: conversation_id names no conversation.
        """
        scope = _scope(namespace, conversation_id, all_namespaces, page_token)
        size = page_size_of(page_size, self.limits)
        after = page_token_conversation(page_token)
        if page_token and scope.namespace not in (None, after[0]):
            raise InvalidArgument(
                f"page_token continues a listing of namespace {after[0]!r}, not of"
                f" {scope.namespace!r}: pass next_page_token with the scope it came with"
            )
        found = self.store.stats(scope, self.model, after, size + 1)
        if scope.conversation_id is not None and not found.conversations:
            raise NotFound(
                f"conversation {scope.conversation_id!r} not found in namespace {scope.namespace!r}"
            )
        sizes = self.index_files.sizes()
        page = found.conversations[:size]
        more = len(found.conversations) > size
        return StatsPage(
            conversations=tuple(
                dataclasses.replace(
                    c, stats=dataclasses.replace(c.stats, index_bytes=sizes.get(c.key, 0))
                )
                for c in page
            ),
            total=dataclasses.replace(
                found.total, index_bytes=sum(sizes.get(key, 0) for key in found.keys)
            ),
            conversation_count=len(found.keys),
            next_page_token=(
                conversation_page_token(page[-1].namespace, page[-1].conversation_id)
                if more
                else ""
            ),
            model=self.model,
        )


def _scope(namespace: str, conversation_id: str, all_namespaces: bool, page_token: str) -> Scope:
    """The scope a request names.

    Raises:
        InvalidArgument: A bad namespace or id, a scope named twice, or a page of one
            conversation.
    """
    scope = scope_of(namespace, conversation_id, all_namespaces)
    if scope.conversation_id is not None and page_token:
        raise InvalidArgument(
            "page_token: one conversation (conversation_id) has no pages; leave it empty"
        )
    return scope
