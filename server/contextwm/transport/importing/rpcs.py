"""The bulk import RPC of ContextService."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.conversations.imports import Imports
from contextwm.transport.importing.convert import from_proto_import_item, to_proto_import_response


class ImportRpcs:
    """Needs self._imports, set by the servicer."""

    _imports: Imports

    def Import(
        self, request_iterator: Iterator[pb.ImportRequest], context: grpc.ServicerContext
    ) -> Iterator[pb.ImportResponse]:
        # A generator: the import pulls each chunk off the stream only when it is ready for
        # it, which is what holds a fast sender back (HTTP/2 flow control does the rest).
        chunks = ([from_proto_import_item(i) for i in r.items] for r in request_iterator)
        for summary in self._imports.run(chunks):
            yield to_proto_import_response(summary)
