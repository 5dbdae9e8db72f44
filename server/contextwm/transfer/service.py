"""Exports a conversation or a namespace as the lines of lines.py, and restores them: each
conversation is written whole in one transaction, or is left out whole, so an interrupted
restore is resumed by running it again."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.validation import check_conversation_id, namespace_of
from contextwm.domain.errors import AlreadyExists, ContextWMError, NotFound
from contextwm.ports.conversation_transfer import DUMP_TABLES, ConversationDump
from contextwm.transfer.lines import DumpReader, dump_lines


@dataclass(slots=True)
class RestoreSummary:
    """What a restore did: conversations written, conversations already there exactly as in
    the input (a resumed restore), and the items written."""

    restored: int = 0
    unchanged: int = 0
    items: int = 0


class Transfers:
    """Exports and restores through one engine's store."""

    def __init__(self, engine: ContextEngine) -> None:
        self._engine = engine
        self._store = engine.store

    def export(self, namespace: str, conversation_id: str = "") -> Iterator[str]:
        """The lines of one conversation, or of every conversation of the namespace (in id
        order), each read from one snapshot of the store.

        Raises:
            NotFound: for a conversation_id the namespace does not hold.
        """
        ns = namespace_of(namespace)
        if conversation_id:
            record = self._store.get_conversation(ns, check_conversation_id(conversation_id))
            if record is None:
                raise NotFound(f"conversation {conversation_id!r} not found in namespace {ns!r}")
            keys = [record.key]
        else:
            keys = [key for key, _ in sorted(self._store.conversation_keys(ns), key=lambda k: k[1])]
        for key in keys:
            dump = self._store.dump_conversation(key)
            if dump is not None:  # None: deleted since it was listed
                yield from dump_lines(dump)

    def restore_lines(self, lines: Iterable[str], namespace: str | None = None) -> RestoreSummary:
        """Restores the conversations of an export's lines, each once its end line is read.

        Args:
            lines: The lines, without their newlines.
            namespace: Restores every conversation into this namespace instead of its own.

        Raises:
            InvalidArgument: for a line that is not part of an export, or a conversation
                whose rows would not read back.
            AlreadyExists: for a conversation whose namespace holds one of that id that
                differs from it (one that is the same is counted as unchanged).
            ResourceExhausted: a conversation would take its namespace past its quota of
                items (limits.max_items_per_namespace).
            Each error says how many conversations were restored before it: those stay.
        """
        reader = DumpReader(DUMP_TABLES, namespace_of(namespace) if namespace else None)

        def dumps() -> Iterator[ConversationDump]:
            for number, line in enumerate(lines, 1):
                dump = reader.feed(line, number)
                if dump is not None:
                    yield dump
            reader.finish()

        summary = RestoreSummary()
        try:
            self.restore(dumps(), summary)
        except ContextWMError as exc:
            if summary.restored or summary.unchanged:
                raise type(exc)(
                    f"{exc.message} ({summary.restored} conversations were restored and"
                    f" {summary.unchanged} found unchanged before this: they stay)"
                ) from None
            raise
        return summary

    def restore(self, dumps: Iterable[ConversationDump], summary: RestoreSummary) -> None:
        """Writes each conversation as it was exported, counting in summary; the indexer
        embeds its items. Raises as restore_lines."""
        for dump in dumps:
            namespace_of(dump.namespace)
            check_conversation_id(dump.conversation_id)
            # Its vectors are made again here, from the model this server runs: a conversation
            # exported with vectors names that model at once (an export taken right after the
            # restore is the one restored, on a server of the same model); one exported before
            # any vector names none until the indexer gives it one, as the original would.
            exported = dump.conversation.get("embed_model")
            model = self._engine.vectors.model_name if exported is not None else None
            dump = dataclasses.replace(
                dump, conversation={**dump.conversation, "embed_model": model}, vectors=None
            )
            if self._store.get_conversation(dump.namespace, dump.conversation_id) is None:
                items = len(dump.tables.get("items", ()))
                self._engine.appends.room.check(dump.namespace, items)
            try:
                self._store.load_conversation(dump)
            except AlreadyExists:
                if not self._holds(dump):
                    raise AlreadyExists(
                        f"conversation {dump.conversation_id!r} already exists in namespace"
                        f" {dump.namespace!r} and differs from the one restored: delete it"
                        " first, or restore into another namespace"
                    ) from None
                summary.unchanged += 1
                continue
            summary.restored += 1
            summary.items += len(dump.tables.get("items", ()))
            self._engine.appends.on_append()  # the indexer: new items to embed

    def _holds(self, dump: ConversationDump) -> bool:
        """Whether the store holds this conversation with exactly these rows."""
        record = self._store.get_conversation(dump.namespace, dump.conversation_id)
        stored = None if record is None else self._store.dump_conversation(record.key)
        if stored is None:
            return False
        # The model is left out: the stored copy may have been embedded since it was restored.
        return stored.tables == dump.tables and {**stored.conversation, "embed_model": None} == {
            **dump.conversation,
            "embed_model": None,
        }
