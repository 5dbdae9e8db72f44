"""The API key RPCs of ContextService. Mixed into the servicer; no business logic here."""

from __future__ import annotations

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.access.keys import Keys
from contextwm.domain.access import ApiKey, Role
from contextwm.domain.errors import InvalidArgument
from contextwm.transport.access import note_target_key
from contextwm.transport.convert import from_proto_timestamp, to_proto_timestamp


def to_proto_api_key(key: ApiKey) -> pb.ApiKey:
    out = pb.ApiKey(
        key_id=key.key_id,
        name=key.name,
        role=key.role.name.lower(),
        namespaces=list(key.namespaces),
        created_at=to_proto_timestamp(key.created_at),
    )
    if key.expires_at is not None:
        out.expires_at.CopyFrom(to_proto_timestamp(key.expires_at))
    if key.revoked_at is not None:
        out.revoked_at.CopyFrom(to_proto_timestamp(key.revoked_at))
    return out


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
