"""An OpenAI Agents SDK session backed by a contextwm conversation.

`pip install "contextwm-client[openai-agents]"`, then pass a `ContextWMSession` wherever the
SDK takes a session (`Runner.run(agent, input, session=...)`). See docs/integrations/
openai-agents.md for what maps and what does not.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast

from agents.memory import SessionSettings

from contextwm_client import (
    AsyncClient,
    Client,
    ConversationSettings,
    ErasureReceipt,
    Item,
    ItemState,
)
from contextwm_client.integrations import _response_items
from contextwm_client.integrations._bridge import Bridge

if TYPE_CHECKING:
    from agents import TResponseInputItem

__all__ = ["ContextWMSession"]

# A session's history: every item it holds except those a checkpoint's restore reverted.
_HISTORY_STATES: tuple[ItemState, ...] = ("window", "archived", "compacted")
# A pop that finds its item already erased (by another writer in between) looks again, a
# few times: each look finds a newer state of the conversation.
_POP_ATTEMPTS = 3


class ContextWMSession:
    """The Agents SDK's `Session` protocol over one contextwm conversation.

    The conversation's id is the session id. Each input item is stored as one item whose
    content is the item's text and whose metadata gives the item back exactly (see
    `contextwm_client.integrations._response_items`). Nothing is deleted silently:
    `pop_item` erases the newest item with `Forget` and `clear_session` deletes the
    conversation, each keeping its erasure receipt in `last_erasure`.

    Attributes:
        session_id: The session's id, also the conversation's.
        session_settings: The SDK's settings; their `limit` applies when `get_items` is
            called without one.
        last_erasure: The receipt of the last pop or clear that erased something.
    """

    def __init__(
        self,
        session_id: str,
        client: Client | AsyncClient,
        *,
        namespace: str | None = None,
        context_tokens: int | None = None,
        conversation_settings: ConversationSettings | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        """Binds the session to its conversation (nothing is sent before the first call).

        Args:
            session_id: The session's id, used as the conversation id (1..200 characters,
                no whitespace at either end).
            client: The client to call, sync or asyncio; its owner closes it. A `Client`
                works from any event loop (its calls run in worker threads), an
                `AsyncClient` only from the loop it was made in.
            namespace: Namespace of the conversation; None uses the client's.
            context_tokens: When set, `get_items()` without a limit returns the enhanced
                context of this many tokens at most (the history the server finds relevant
                as one system message, then the recent items) instead of the whole history.
            conversation_settings: Settings to create the conversation with, on the first
                add (and again after a clear); None: the server's defaults, or the settings
                of a conversation that exists already.
            session_settings: The SDK's session settings; None: SessionSettings().

        Raises:
            TypeError: client is neither a Client nor an AsyncClient.
            ValueError: context_tokens is not positive.
        """
        if context_tokens is not None and context_tokens <= 0:
            raise ValueError(f"context_tokens must be positive, not {context_tokens}")
        self.session_id = session_id
        self.session_settings: SessionSettings | None = session_settings or SessionSettings()
        self.last_erasure: ErasureReceipt | None = None
        self._bridge = Bridge(client, namespace)
        self._context_tokens = context_tokens
        self._conversation_settings = conversation_settings
        self._created = conversation_settings is None

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first, each equal to the item that was added.

        Args:
            limit: The newest this many items (0: none; negative: all, as the SDK's
                SQLiteSession has it); None: the session settings' limit, and without one
                every item, or with `context_tokens` the enhanced context.

        Returns:
            The items; the compact list under `context_tokens`.

        Raises:
            ContextWMError: A call failed.
            ValueError: A stored item's metadata no longer fits its content.
        """
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is None and self._context_tokens is not None:
            context = await self._bridge.get_context(self.session_id, None, self._context_tokens)
            compact = [] if context is None else _response_items.compact_items(context)
            return cast("list[TResponseInputItem]", compact)
        if limit == 0:
            return []
        kept: deque[Item] = deque(maxlen=limit if limit is not None and limit > 0 else None)
        async for item in self._history():
            kept.append(item)
        return [_input_item(item) for item in kept]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Appends the items, in order, in one AppendBatch (or one per 1,000 items).

        Args:
            items: The SDK's input items (JSON-like dicts).

        Raises:
            TypeError: An item holds something JSON cannot carry (nothing is sent).
            ResourceExhaustedError: An item's text or the rest of it is over the server's
                limits (`limits.max_item_bytes`, `limits.max_metadata_bytes`).
            ContextWMError: Another failure of the call.
        """
        if not items:
            return
        new_items = [
            _response_items.to_new_item(cast("dict[str, Any]", item), uuid.uuid4().hex)
            for item in items
        ]
        if not self._created and self._conversation_settings is not None:
            await self._bridge.create_if_missing(self.session_id, self._conversation_settings)
            self._created = True
        await self._bridge.append_batch(self.session_id, new_items)

    async def pop_item(self) -> TResponseInputItem | None:
        """Erases the newest item with `Forget` and returns it.

        The erasure is for good (content, vector, index entries), and its receipt is kept
        in `last_erasure`: contextwm has no quiet delete.

        Returns:
            The item, equal to the one that was added; None when the session is empty.

        Raises:
            ValueError: The newest item was not added by a session (it carries no id to
                erase it by).
            ContextWMError: A call failed.
        """
        for _ in range(_POP_ATTEMPTS):
            newest: Item | None = None
            async for item in self._history():
                newest = item
            if newest is None:
                return None
            item_id = newest.metadata.get(_response_items.ID_KEY)
            if item_id is None:
                raise ValueError(
                    f"the newest item of conversation {self.session_id!r} (seq {newest.seq})"
                    f" was not added by a session: it has no {_response_items.ID_KEY} to"
                    " erase it by"
                )
            receipt = await self._bridge.forget(self.session_id, {_response_items.ID_KEY: item_id})
            if receipt.counts.items:
                self.last_erasure = receipt
                return _input_item(newest)
        return None

    async def clear_session(self) -> None:
        """Deletes the conversation (DeleteConversation), keeping the receipt in
        `last_erasure`; the next add creates it again, with `conversation_settings` when
        they were given.

        Raises:
            ContextWMError: A call failed.
        """
        receipt = await self._bridge.erase_conversation(self.session_id)
        if receipt is not None:
            self.last_erasure = receipt
        self._created = self._conversation_settings is None

    async def _history(self) -> AsyncIterator[Item]:
        # Compaction markers are contextwm's own text, not items the session added.
        async for item in self._bridge.items(self.session_id, _HISTORY_STATES):
            if item.kind == "message":
                yield item


def _input_item(item: Item) -> TResponseInputItem:
    return cast("TResponseInputItem", _response_items.from_item(item))
