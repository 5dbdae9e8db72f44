"""contextwm as LangChain and LangGraph memory: a chat message history backed by a
conversation, a LangGraph store whose search is contextwm's, and the enhanced context as the
messages a node sends (`pip install "contextwm-client[langchain]"`; docs/integrations/
langchain.md shows an agent)."""

from __future__ import annotations

try:
    import langchain_core.messages  # noqa: F401
    import langgraph.store.base  # noqa: F401
except ImportError as exc:  # the optional dependencies are probed once, here
    raise ImportError(
        "contextwm_client.integrations.langchain needs langchain-core and langgraph:"
        ' pip install "contextwm-client[langchain]"'
        f" ({exc})"
    ) from exc

from contextwm_client.integrations._langchain_context import (
    ContextRole,
    acontext_messages,
    context_message,
    context_messages,
)
from contextwm_client.integrations._langchain_history import ContextWMChatMessageHistory
from contextwm_client.integrations._langchain_messages import item_to_message, message_to_item
from contextwm_client.integrations._langgraph_store import (
    ContextWMStore,
    conversation_id,
    store_namespace,
)

__all__ = [
    "ContextRole",
    "ContextWMChatMessageHistory",
    "ContextWMStore",
    "acontext_messages",
    "context_message",
    "context_messages",
    "conversation_id",
    "item_to_message",
    "message_to_item",
    "store_namespace",
]
