"""The API key RPCs of ContextService."""

from __future__ import annotations

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.access.keys import Keys
from contextwm.domain.access import Role
from contextwm.domain.errors import InvalidArgument
from contextwm.transport.access import note_target_key
from contextwm.transport.keys.convert import to_proto_api_key
from contextwm.transport.timestamps import from_proto_timestamp


class KeyRpcs:
    """Needs self._keys, set by the servicer."""

    _keys: Keys

    def CreateKey(
        self, request: pb.CreateKeyRequest, context: grpc.ServicerContext
    ) -> pb.CreatedKey:
        try:
            role = Role.parse(request.role)
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
        expires = (
            from_proto_timestamp(request.expires_at) if request.HasField("expires_at") else None
        )
        key, token = self._keys.create(request.name, role, list(request.namespaces), expires)
        note_target_key(key.key_id)
        return pb.CreatedKey(key=to_proto_api_key(key), token=token)

    def ListKeys(
        self, request: pb.ListKeysRequest, context: grpc.ServicerContext
    ) -> pb.ListKeysResponse:
        return pb.ListKeysResponse(keys=[to_proto_api_key(k) for k in self._keys.list()])

    def RevokeKey(self, request: pb.RevokeKeyRequest, context: grpc.ServicerContext) -> pb.ApiKey:
        return to_proto_api_key(self._keys.revoke(request.key_id))

    def RotateKey(
        self, request: pb.RotateKeyRequest, context: grpc.ServicerContext
    ) -> pb.CreatedKey:
        key, token = self._keys.rotate(request.key_id)
        return pb.CreatedKey(key=to_proto_api_key(key), token=token)
