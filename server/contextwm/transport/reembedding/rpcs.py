"""The re-embedding RPC of ContextService."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.reembedding.reembedder import Reembedder
from contextwm.transport.reembedding.convert import (
    from_proto_reembed_request,
    to_proto_reembed_progress,
)


class ReembedRpcs:
    """Needs self._reembedder, set by the servicer."""

    _reembedder: Reembedder

    def Reembed(
        self, request: pb.ReembedRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.ReembedProgress]:
        scope = from_proto_reembed_request(request)
        # Set when the call ends for any reason, a client's cancel included: the run stops
        # after the batch in hand (what it stored stays, for the next run to resume from).
        cancelled = threading.Event()
        if not context.add_callback(cancelled.set):
            cancelled.set()  # the call is over already
        for progress in self._reembedder.run(scope, cancelled):
            yield to_proto_reembed_progress(progress)
