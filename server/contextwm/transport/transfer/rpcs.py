"""The export and restore RPCs of ContextService."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.transfer.service import Transfers

# Bytes of lines per ExportChunk: well under gRPC's 4 MiB message limit, large enough that
# per-message costs vanish. A line longer than this goes alone.
CHUNK_BYTES = 1 << 20


class TransferRpcs:
    """Needs self._transfers, set by the servicer."""

    _transfers: Transfers

    def Export(
        self, request: pb.ExportRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.ExportChunk]:
        lines: list[str] = []
        size = 0
        for line in self._transfers.export(request.namespace, request.conversation_id):
            if lines and size + len(line) > CHUNK_BYTES:
                yield pb.ExportChunk(lines=lines)
                lines, size = [], 0
            lines.append(line)
            size += len(line)
        if lines:
            yield pb.ExportChunk(lines=lines)

    def RestoreExport(
        self, request_iterator: Iterator[pb.RestoreExportRequest], context: grpc.ServicerContext
    ) -> pb.RestoreExportResponse:
        first = next(request_iterator, None)
        if first is None:
            return pb.RestoreExportResponse()

        def lines() -> Iterator[str]:
            yield from first.lines
            for request in request_iterator:
                yield from request.lines

        summary = self._transfers.restore_lines(lines(), first.namespace or None)
        return pb.RestoreExportResponse(
            restored=summary.restored, unchanged=summary.unchanged, items=summary.items
        )
