"""The enhanced context as the messages a LangChain model or LangGraph node sends."""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from contextwm_client import AsyncClient, Client, EnhancedContext

ContextRole = Literal["user", "system"]


def context_message(
    context: EnhancedContext, *, role: ContextRole = "user"
) -> HumanMessage | SystemMessage:
    """The enhanced context's text as one message, exactly as the server counted it.

    Args:
        context: What `Client.get_context` returned.
        role: "user" (the default): the text ends with the query under "# Current Query",
            so it is the user's turn; "system" for a context asked without a query, which
            the caller follows with the user's message.

    Returns:
        A HumanMessage or SystemMessage whose content is `context.text`.
    """
    if role == "system":
        return SystemMessage(content=context.text)
    return HumanMessage(content=context.text)


def context_messages(
    client: Client,
    conversation_id: str,
    query: str | None = None,
    *,
    max_tokens: int,
    instructions: str | None = None,
    role: ContextRole = "user",
    namespace: str | None = None,
    **options: Any,
) -> list[BaseMessage]:
    """Asks for the enhanced context and returns the messages to send the model.

    Args:
        client: The client to call.
        conversation_id: The conversation.
        query: The question; None lets the conversation's focus stand in (and the text then
            has no query section: use role="system" and send the question after it).
        max_tokens: The budget of the context's text, which never exceeds it (the
            instructions are not counted in it).
        instructions: A system prompt put first, as a SystemMessage; None for none.
        role: The context message's role (see `context_message`).
        namespace: Namespace; None uses the client's.
        **options: Further keyword arguments of `Client.get_context` (recent_share, mode,
            as_of, ...).

    Returns:
        [SystemMessage(instructions)] if given, then the context message.

    Raises:
        NotFoundError: No such conversation.
        ContextWMError: Any other failure of the call.
    """
    context = client.get_context(
        conversation_id, query, max_tokens=max_tokens, namespace=namespace, **options
    )
    return _with_instructions(instructions, context_message(context, role=role))


async def acontext_messages(
    client: AsyncClient,
    conversation_id: str,
    query: str | None = None,
    *,
    max_tokens: int,
    instructions: str | None = None,
    role: ContextRole = "user",
    namespace: str | None = None,
    **options: Any,
) -> list[BaseMessage]:
    """`context_messages` with an `AsyncClient`: the same arguments, result and errors."""
    context = await client.get_context(
        conversation_id, query, max_tokens=max_tokens, namespace=namespace, **options
    )
    return _with_instructions(instructions, context_message(context, role=role))


def _with_instructions(instructions: str | None, message: BaseMessage) -> list[BaseMessage]:
    return [SystemMessage(content=instructions), message] if instructions else [message]
