"""A LangChain chat message history backed by one contextwm conversation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from contextwm_client import Client, ItemState, NotFoundError
from contextwm_client.integrations._langchain_messages import item_to_message, message_to_item

# Reverted items were undone by a checkpoint restore: they are not the history any more.
# Compacted and archived ones still are: a compaction or an eviction only shortens the
# active context.
HISTORY_STATES: tuple[ItemState, ...] = ("window", "archived", "compacted")


class ContextWMChatMessageHistory(BaseChatMessageHistory):
    """The messages of one contextwm conversation, as LangChain's chat histories hold them.

    Each message is one item (see `message_to_item`): `messages` reads every item back in
    order, archived and compacted ones included, as the messages that were added, equal to
    them; `add_messages` appends a list in one AppendBatch call; `clear` deletes the
    conversation with its items, vectors and index (an erasure, with a receipt on the
    server). The async methods run these in a worker thread.

    Args:
        client: The client to call.
        conversation_id: The conversation; created with the server's defaults by the first
            append (create it beforehand for other settings).
        namespace: Namespace; None uses the client's.
        metadata: Pairs added to every appended item's metadata (a user or session id, say),
            which contextwm's search filters can name.
    """

    def __init__(
        self,
        client: Client,
        conversation_id: str,
        *,
        namespace: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.client = client
        self.conversation_id = conversation_id
        self.namespace = namespace
        self.metadata = dict(metadata or {})

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]  # a read, not a field
        """The conversation's messages in order; none for a conversation not created yet.

        Raises:
            ValueError: An item's langchain metadata does not read back as a message.
            ContextWMError: A call failed.
        """
        try:
            items = list(
                self.client.iter_items(
                    self.conversation_id, states=HISTORY_STATES, namespace=self.namespace
                )
            )
        except NotFoundError:
            return []
        return [item_to_message(item) for item in items if item.kind == "message"]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Appends the messages in one AppendBatch call, all or none of them (a list over
        1,000 goes as calls of 1,000, each all or none: see `Client.append_batch`).

        Raises:
            ValueError: A message is not one to store, or a field of it is not JSON (before
                any call).
            ContextWMError: The call failed; nothing was appended.
        """
        items = [message_to_item(m, self.metadata) for m in messages]
        if items:
            self.client.append_batch(self.conversation_id, items, namespace=self.namespace)

    def clear(self) -> None:
        """Deletes the conversation with all its items; a conversation that does not exist is
        already clear.

        Raises:
            ContextWMError: The call failed.
        """
        with suppress(NotFoundError):
            self.client.delete_conversation(self.conversation_id, namespace=self.namespace)
