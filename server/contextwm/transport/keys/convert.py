"""Converters of the API key messages."""

from __future__ import annotations

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.domain.access import ApiKey
from contextwm.transport.timestamps import to_proto_timestamp


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
