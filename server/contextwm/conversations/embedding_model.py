"""Which embedding model a conversation's vectors come from, and the refusal of dense ranking
over a conversation whose model is not the server's: its vectors and the server's query
vectors would not be comparable, and the server does not embed its items by itself."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from contextwm.conversations.runtime import ConversationRuntime
from contextwm.domain.errors import FailedPrecondition
from contextwm.ports.reembed_store import StaleConversation

# Conversations named in a refusal; the command in it re-embeds them all.
NAMED = 5


def stale_model(rt: ConversationRuntime, model: str) -> str | None:
    """The other model rt's stored vectors come from, or None when they come from model (the
    server's) or it has none yet (its first vectors will be model's)."""
    recorded = rt.record.embed_model
    return recorded if recorded is not None and recorded != model else None


def require_current(rts: Sequence[ConversationRuntime], model: str, mode: str) -> None:
    """Refuses dense or hybrid ranking (mode) over conversations whose vectors come from
    another model than model; lexical ranking needs no vectors and is never refused.

    Raises:
        FailedPrecondition: naming the models and the `contextwm reembed` command to run.
    """
    refuse_stale(
        [
            StaleConversation(rt.key, rt.record.namespace, rt.record.conversation_id, old)
            for rt in rts
            if (old := stale_model(rt, model)) is not None
        ],
        model,
        mode,
    )


def refuse_stale(stale: Sequence[StaleConversation], model: str, mode: str) -> None:
    """Refuses dense or hybrid ranking (mode) over these conversations, whose vectors come
    from another model than model, when there are any (see require_current).

    Raises:
        FailedPrecondition: naming the models and the `contextwm reembed` command to run.
    """
    if mode == "lexical" or not stale:
        return
    olds = " and ".join(sorted({s.model for s in stale}))
    advice = f"; or ask in lexical mode meanwhile (this is {mode} mode)"
    if len(stale) == 1:
        one = stale[0]
        raise FailedPrecondition(
            f"conversation {one.conversation_id!r} of namespace {one.namespace!r} holds"
            f" vectors of {olds}, but this server embeds with {model}: dense search on it"
            " needs it re-embedded first; run `contextwm reembed --namespace"
            f" {shlex.quote(one.namespace)} {shlex.quote(one.conversation_id)}`{advice}"
        )
    namespaces = sorted({s.namespace for s in stale})
    names = ", ".join(repr(s.conversation_id) for s in stale[:NAMED])
    more = f" and {len(stale) - NAMED} more" if len(stale) > NAMED else ""
    command = (
        f"contextwm reembed --namespace {shlex.quote(namespaces[0])}"
        if len(namespaces) == 1
        else "contextwm reembed --all"
    )
    raise FailedPrecondition(
        f"{len(stale)} conversations ({names}{more}) hold vectors of {olds}, but this server"
        f" embeds with {model}: dense search on them needs them re-embedded first; run"
        f" `{command}`{advice}"
    )
