"""Converters of the bulk import call."""

from __future__ import annotations

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.conversations.imports import ChunkSummary, ImportEntry
from contextwm.domain.errors import ContextWMError, InvalidArgument
from contextwm.transport.conversations.convert import from_proto_new_item


def from_proto_import_item(msg: pb.ImportItem) -> ImportEntry:
    """An item that does not convert carries its error: it fails alone, the import goes on."""
    try:
        if not msg.HasField("item"):
            raise InvalidArgument("item is required")
        item = from_proto_new_item(msg.item)
    except ContextWMError as e:
        return ImportEntry(msg.namespace, msg.conversation_id, None, msg.source, e)
    return ImportEntry(msg.namespace, msg.conversation_id, item, msg.source)


def to_proto_import_response(summary: ChunkSummary) -> pb.ImportResponse:
    return pb.ImportResponse(
        appended=summary.appended,
        duplicates=summary.duplicates,
        conversations=len(summary.conversations),
        evicted=summary.evicted,
        failures=[
            pb.ImportFailure(
                index=f.index, source=f.source, code=f.error.code.name, message=f.error.message
            )
            for f in summary.failures
        ],
        failed=summary.failed,
        items=summary.items,
        out_of_order=summary.out_of_order,
    )
