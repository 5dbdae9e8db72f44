"""A LlamaIndex memory block backed by a contextwm conversation.

`pip install "contextwm-client[llama-index]"`, then give a `ContextWMMemoryBlock` to
LlamaIndex's `Memory` (`Memory.from_defaults(memory_blocks=[...])`): the messages Memory
flushes out of its short-term queue are appended to the conversation, and each time Memory
is read the block answers with contextwm's enhanced context for the newest user message.
See docs/integrations/llama-index.md for what maps and what does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory import BaseMemoryBlock

from contextwm_client import AsyncClient, Client, EnhancedContext, InvalidArgumentError, ItemState
from contextwm_client.integrations import _chat_messages
from contextwm_client.integrations._bridge import Bridge

__all__ = ["ContextWMMemoryBlock"]

_HISTORY_STATES: tuple[ItemState, ...] = ("window", "archived", "compacted")
# The heading the enhanced context puts its query under, last (docs/enhanced-context.md).
_QUERY_HEADING = "# Current Query"


@dataclass(frozen=True, slots=True)
class _Asked:
    """The last context the block gave: what truncating it asks again for, smaller."""

    conversation_id: str
    query: str | None
    tokens: int


class ContextWMMemoryBlock(BaseMemoryBlock[str]):
    """A memory block whose memory is a contextwm conversation.

    `aput` appends messages (Memory flushes the oldest ones of its short-term queue here),
    one item per message, with the metadata that rebuilds them (`aget_messages`). `aget`
    returns the enhanced context for the newest user message among the messages Memory
    passes, within `max_tokens` (counted by the server, with the conversation's encoding),
    without the query itself, which Memory's messages already hold.
    """

    name: str = Field(default="contextwm", description="The name of the memory block.")
    client: Client | AsyncClient = Field(
        exclude=True,
        description="The contextwm client to call; a Client works from any event loop, an"
        " AsyncClient only from the one it was made in.",
    )
    conversation_id: str | None = Field(
        default=None,
        description="The conversation; None: the session id of the Memory the block is in.",
    )
    namespace: str | None = Field(
        default=None, description="Namespace of the conversation; None: the client's."
    )
    max_tokens: int = Field(
        default=1024, gt=0, description="Token budget of the enhanced context the block returns."
    )

    _bridge: Bridge = PrivateAttr()
    _asked: _Asked | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Makes the bridge to the client once the fields are set."""
        self._bridge = Bridge(self.client, self.namespace)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The enhanced context for the newest user message of `messages`.

        Args:
            messages: Memory's short-term messages (and its input); without a user message
                the conversation's newest items stand in for a query.
            **block_kwargs: Memory passes its `session_id`, the conversation's id when the
                block names none.

        Returns:
            The rendered context; empty before anything was flushed to the conversation.

        Raises:
            ValueError: Neither the block nor Memory names a conversation.
            ContextWMError: The call failed.
        """
        conversation_id = self._conversation(block_kwargs.get("session_id"))
        query = _chat_messages.latest_user_text(messages or [])
        context = await self._bridge.get_context(conversation_id, query, self.max_tokens)
        if context is None:
            return ""
        self._asked = _Asked(conversation_id, query, context.tokens.total)
        return _without_query(context)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Appends the messages to the conversation, in order, in one AppendBatch.

        Raises:
            ValueError: Neither the block nor the messages (Memory's session id) name a
                conversation.
            ResourceExhaustedError: A message is over the server's limits
                (`limits.max_item_bytes`, `limits.max_metadata_bytes`: images and other
                non-text blocks stay in the metadata).
            ContextWMError: Another failure of the call.
        """
        if not messages:
            return
        session_id = messages[0].additional_kwargs.get("session_id")
        conversation_id = self._conversation(session_id)
        items = [_chat_messages.to_new_item(m) for m in messages]
        await self._bridge.append_batch(conversation_id, items)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Asks the server again for the last context, `tokens_to_truncate` tokens smaller.

        Memory counts tokens with its own tokenizer, the server with the conversation's
        encoding: the request is a hint, as LlamaIndex's contract has it.

        Returns:
            The smaller context; None when nothing would be left.
        """
        asked = self._asked
        budget = 0 if asked is None else asked.tokens - tokens_to_truncate
        if asked is None or budget <= 0:
            return None
        try:
            context = await self._bridge.get_context(asked.conversation_id, asked.query, budget)
        except InvalidArgumentError:  # the budget cannot hold the query itself
            return None
        if context is None or (not context.recent and not context.history):
            return None
        self._asked = _Asked(asked.conversation_id, asked.query, context.tokens.total)
        return _without_query(context)

    async def aget_messages(self, session_id: str | None = None) -> list[ChatMessage]:
        """Every message stored in the conversation, oldest first, each equal to the one
        flushed (without Memory's session id in its additional_kwargs).

        Args:
            session_id: The conversation, when the block names none.

        Raises:
            ValueError: No conversation is named, or a stored item's metadata no longer
                fits its content.
            ContextWMError: A call failed.
        """
        conversation_id = self._conversation(session_id)
        return [
            _chat_messages.from_item(item)
            async for item in self._bridge.items(conversation_id, _HISTORY_STATES)
            if item.kind == "message"
        ]

    def _conversation(self, session_id: object) -> str:
        if self.conversation_id is not None:
            return self.conversation_id
        if isinstance(session_id, str) and session_id:
            return session_id
        raise ValueError(
            "ContextWMMemoryBlock needs a conversation: give it conversation_id, or use it"
            " inside a Memory, whose session id then names it"
        )


def _without_query(context: EnhancedContext) -> str:
    """The context's text without its last section, the query, which the messages hold."""
    text = context.text
    if context.query_from_focus or not context.query:
        return text
    section = f"{_QUERY_HEADING}\n\n{context.query}"
    if text == section:
        return ""
    if text.endswith("\n\n" + section):
        return text[: -len(section) - 2]
    return text
