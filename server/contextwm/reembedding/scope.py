"""What a re-embed covers: one conversation, a namespace, or every namespace."""

from __future__ import annotations

from dataclasses import dataclass

from contextwm.conversations.validation import check_conversation_id, namespace_of
from contextwm.domain.errors import InvalidArgument


@dataclass(frozen=True, slots=True)
class ReembedScope:
    """namespace None: every namespace (and conversation_id None); conversation_id None:
    every conversation of the namespace."""

    namespace: str | None
    conversation_id: str | None = None

    def describe(self) -> str:
        if self.namespace is None:
            return "every namespace"
        if self.conversation_id is None:
            return f"namespace {self.namespace!r}"
        return f"conversation {self.conversation_id!r} of namespace {self.namespace!r}"


def scope_of(namespace: str, conversation_id: str, all_namespaces: bool) -> ReembedScope:
    """The scope a request names ("" namespace: the default one).

    Raises:
        InvalidArgument: all_namespaces with a namespace or conversation, or a bad name.
    """
    if all_namespaces:
        if namespace or conversation_id:
            raise InvalidArgument(
                "all_namespaces covers every conversation of every namespace: leave namespace"
                " and conversation_id empty, or name them without all_namespaces"
            )
        return ReembedScope(None)
    ns = namespace_of(namespace)
    if not conversation_id:
        return ReembedScope(ns)
    return ReembedScope(ns, check_conversation_id(conversation_id))
