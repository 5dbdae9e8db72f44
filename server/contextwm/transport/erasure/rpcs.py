"""The erasure RPCs of ContextService: Forget and DeleteConversation, each with a receipt."""

from __future__ import annotations

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.erasure.service import Erasure
from contextwm.transport.erasure.convert import from_proto_forget, to_proto_receipt


class ErasureRpcs:
    """Needs self._erasure, set by the servicer."""

    _erasure: Erasure

    def Forget(self, request: pb.ForgetRequest, context: grpc.ServicerContext) -> pb.ErasureReceipt:
        receipt = self._erasure.forget(
            request.namespace, request.conversation_id, from_proto_forget(request)
        )
        return to_proto_receipt(receipt)

    def DeleteConversation(
        self, request: pb.DeleteConversationRequest, context: grpc.ServicerContext
    ) -> pb.DeleteConversationResponse:
        receipt = self._erasure.delete_conversation(request.namespace, request.conversation_id)
        return pb.DeleteConversationResponse(
            deleted_items=receipt.counts.items, receipt=to_proto_receipt(receipt)
        )
