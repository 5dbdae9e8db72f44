"""The calls the adapters make, awaitable whichever client they were given.

Frameworks call their memory from coroutines. An `AsyncClient` is awaited directly; a
`Client` runs in a worker thread, so that a blocking call never stalls the event loop and a
framework that runs each call in a new event loop (LlamaIndex's sync wrappers, the Agents SDK's
`run_sync`) can still share one client, which a grpc.aio channel, bound to its loop, cannot.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from contextwm_client import (
    AlreadyExistsError,
    AppendBatchResult,
    AsyncClient,
    Client,
    ConversationSettings,
    EnhancedContext,
    ErasureReceipt,
    Item,
    ItemState,
    NewItem,
    NotFoundError,
    Page,
)


class Bridge:
    """One client's calls as coroutines, in one namespace."""

    def __init__(self, client: Client | AsyncClient, namespace: str | None) -> None:
        """Keeps the client (not closed here: its owner closes it).

        Args:
            client: The client to call.
            namespace: Namespace of every call; None uses the client's.

        Raises:
            TypeError: client is neither a Client nor an AsyncClient.
        """
        if not isinstance(client, Client | AsyncClient):
            raise TypeError(
                f"client must be a contextwm_client Client or AsyncClient, not {type(client)!r}"
            )
        self.client = client
        self.namespace = namespace

    async def create_if_missing(self, conversation_id: str, settings: ConversationSettings) -> None:
        """Creates the conversation with these settings unless it exists already."""
        try:
            if isinstance(self.client, AsyncClient):
                await self.client.create_conversation(
                    conversation_id, settings=settings, namespace=self.namespace
                )
            else:
                await asyncio.to_thread(
                    self.client.create_conversation,
                    conversation_id,
                    settings=settings,
                    namespace=self.namespace,
                )
        except AlreadyExistsError:
            pass

    async def append_batch(
        self, conversation_id: str, items: Sequence[NewItem]
    ) -> AppendBatchResult:
        """AppendBatch (as consecutive calls of up to 1,000 items)."""
        if isinstance(self.client, AsyncClient):
            return await self.client.append_batch(conversation_id, items, namespace=self.namespace)
        return await asyncio.to_thread(
            self.client.append_batch, conversation_id, items, namespace=self.namespace
        )

    async def items(self, conversation_id: str, states: Sequence[ItemState]) -> AsyncIterator[Item]:
        """Every item in these states, in seq order; none for a conversation that does not
        exist."""
        page_token = ""
        while True:
            try:
                page = await self._list_items(conversation_id, page_token, states)
            except NotFoundError:
                return
            for item in page.entries:
                yield item
            if not page.next_page_token:
                return
            page_token = page.next_page_token

    async def _list_items(
        self, conversation_id: str, page_token: str, states: Sequence[ItemState]
    ) -> Page[Item]:
        # The largest page the server takes: a history is read in as few calls as it can be.
        kwargs: dict[str, Any] = {
            "page_size": 1000,
            "page_token": page_token,
            "states": states,
            "namespace": self.namespace,
        }
        if isinstance(self.client, AsyncClient):
            return await self.client.list_items(conversation_id, **kwargs)
        return await asyncio.to_thread(self.client.list_items, conversation_id, **kwargs)

    async def get_context(
        self, conversation_id: str, query: str | None, max_tokens: int
    ) -> EnhancedContext | None:
        """The enhanced context; None for a conversation that does not exist."""
        try:
            if isinstance(self.client, AsyncClient):
                return await self.client.get_context(
                    conversation_id, query, max_tokens=max_tokens, namespace=self.namespace
                )
            return await asyncio.to_thread(
                self.client.get_context,
                conversation_id,
                query,
                max_tokens=max_tokens,
                namespace=self.namespace,
            )
        except NotFoundError:
            return None

    async def forget(self, conversation_id: str, metadata: Mapping[str, str]) -> ErasureReceipt:
        """Erases the conversation's items whose metadata has these pairs."""
        if isinstance(self.client, AsyncClient):
            return await self.client.forget(
                conversation_id, metadata=metadata, namespace=self.namespace
            )
        return await asyncio.to_thread(
            self.client.forget, conversation_id, metadata=metadata, namespace=self.namespace
        )

    async def erase_conversation(self, conversation_id: str) -> ErasureReceipt | None:
        """Deletes the conversation; None when it did not exist."""
        try:
            if isinstance(self.client, AsyncClient):
                return await self.client.erase_conversation(
                    conversation_id, namespace=self.namespace
                )
            return await asyncio.to_thread(
                self.client.erase_conversation, conversation_id, namespace=self.namespace
            )
        except NotFoundError:
            return None
