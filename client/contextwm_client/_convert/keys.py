"""Converters of API keys."""

from __future__ import annotations

from contextwm_client._convert.common import from_proto_timestamp
from contextwm_client._types import ApiKey, CreatedKey
from contextwm_client.v1 import contextwm_pb2 as pb


def from_proto_api_key(message: pb.ApiKey) -> ApiKey:
    """Converts an ApiKey message to an ApiKey."""
    return ApiKey(
        key_id=message.key_id,
        name=message.name,
        role=message.role,
        namespaces=tuple(message.namespaces),
        created_at=from_proto_timestamp(message.created_at),
        expires_at=(
            from_proto_timestamp(message.expires_at) if message.HasField("expires_at") else None
        ),
        revoked_at=(
            from_proto_timestamp(message.revoked_at) if message.HasField("revoked_at") else None
        ),
    )


def from_proto_created_key(message: pb.CreatedKey) -> CreatedKey:
    """Converts a CreatedKey message to a CreatedKey."""
    return CreatedKey(key=from_proto_api_key(message.key), token=message.token)
