"""A client with no generated code: it learns contextwm.v1.ContextService from the server's
reflection service, builds its requests from the descriptors the server sent, and calls
Append, ListItems, GetContext and a NOT_FOUND case as raw gRPC methods.

This module imports neither contextwm_client nor its stubs. The in-process server has them
loaded (they register in protobuf's default descriptor pool), so the client keeps its own
pool, filled only from reflection, and the test checks that its messages come from there.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from contextwm.app import Service
from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

ROOT = Path(__file__).resolve().parents[2]
PROTO = ROOT / "proto" / "contextwm" / "v1" / "contextwm.proto"
SERVICE = "contextwm.v1.ContextService"


class ReflectionClient:
    """Calls a service's unary methods with JSON-shaped dicts, by what reflection reports."""

    def __init__(self, channel: grpc.Channel, service: str) -> None:
        self._channel = channel
        self.database = ProtoReflectionDescriptorDatabase(channel)
        # A pool of its own, filled lazily from the server: never protobuf's default pool.
        self.pool = descriptor_pool.DescriptorPool(self.database)
        self.service: ServiceDescriptor = self.pool.FindServiceByName(service)

    def message_class(self, method: str, *, response: bool = False) -> type[Message]:
        descriptor = self.service.methods_by_name[method]
        return message_factory.GetMessageClass(
            descriptor.output_type if response else descriptor.input_type
        )

    def call(self, method: str, request: dict[str, Any]) -> dict[str, Any]:
        """Calls `method` with `request` in proto3 JSON form; returns the response the same way."""
        descriptor: MethodDescriptor = self.service.methods_by_name[method]
        assert not descriptor.client_streaming and not descriptor.server_streaming
        request_class = self.message_class(method)
        response_class = self.message_class(method, response=True)
        rpc = self._channel.unary_unary(
            f"/{self.service.full_name}/{descriptor.name}",
            request_serializer=request_class.SerializeToString,
            response_deserializer=response_class.FromString,
        )
        reply = rpc(json_format.ParseDict(request, request_class()), timeout=30)
        assert isinstance(reply, response_class)
        return json_format.MessageToDict(reply, preserving_proto_field_name=True)


@pytest.fixture
def reflection(service: Service) -> Iterator[ReflectionClient]:
    with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        yield ReflectionClient(channel, SERVICE)


def test_reflection_lists_the_services_and_every_method_of_the_proto(
    reflection: ReflectionClient,
) -> None:
    assert SERVICE in reflection.database.get_services()
    listed = {m.name: m for m in reflection.service.methods}
    # The same methods as the proto file declares, in name and shape.
    declared = re.findall(
        r"^\s*rpc (\w+)\((stream )?(\w+)\) returns \((stream )?(\w+)\)",
        PROTO.read_text(),
        flags=re.M,
    )
    assert len(declared) == len(listed) > 20
    for name, client_stream, request, stream, response in declared:
        method = listed[name]
        assert method.input_type.full_name == f"contextwm.v1.{request}"
        assert method.output_type.full_name == f"contextwm.v1.{response}"
        assert method.client_streaming == bool(client_stream)
        assert method.server_streaming == bool(stream)
    # Built from the server's descriptors, not from stubs loaded in this process.
    request_class = reflection.message_class("Append")
    assert request_class.DESCRIPTOR.file.pool is reflection.pool
    assert reflection.pool is not descriptor_pool.Default()


def test_this_client_imports_no_generated_code() -> None:
    tree = ast.parse(Path(__file__).read_text())
    modules = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    modules += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert "grpc_reflection.v1alpha.proto_reflection_descriptor_database" in modules
    for module in modules:
        assert not module.startswith("contextwm_client"), module
        assert not module.endswith(("_pb2", "_pb2_grpc")), module


def test_append_list_and_context_through_reflection_alone(reflection: ReflectionClient) -> None:
    appended = []
    for role, content, when in [
        ("user", "Where is the staging vault passphrase kept?", "2025-03-03T09:00:00Z"),
        ("assistant", "In the ops wiki under Vault, page 3: Quillfeather.", "2025-03-03T09:01:00Z"),
    ]:
        response = reflection.call(
            "Append",
            {
                "conversation_id": "by-reflection",
                "item": {
                    "role": role,
                    "content": content,
                    "timestamp": when,  # a google.protobuf.Timestamp, itself found by reflection
                    "metadata": {"client": "reflection"},
                },
            },
        )
        appended.append(response)
    # int64 fields are strings in proto3 JSON.
    assert [r["result"]["seq"] for r in appended] == ["1", "2"]
    assert appended[-1]["window"]["item_count"] == 2

    listing = reflection.call("ListItems", {"conversation_id": "by-reflection"})
    items = listing["items"]
    assert [(i["seq"], i["role"]) for i in items] == [("1", "user"), ("2", "assistant")]
    assert items[1]["content"] == "In the ops wiki under Vault, page 3: Quillfeather."
    assert items[0]["timestamp"] == "2025-03-03T09:00:00Z"
    assert items[0]["state"] == "ITEM_STATE_WINDOW"
    assert all(i["metadata"] == {"client": "reflection"} for i in items)

    context = reflection.call(
        "GetContext",
        {"conversation_id": "by-reflection", "query": "vault passphrase", "max_tokens": 256},
    )
    assert "## Mon 3 Mar 2025" in context["text"]
    assert "Quillfeather" in context["text"]
    assert context["query"] == "vault passphrase"
    assert 0 < context["tokens"]["total"] <= context["tokens"]["budget"] == 256
    assert [s["item"]["seq"] for s in context["recent"]] == ["1", "2"]


def test_not_found_and_invalid_argument_through_reflection(reflection: ReflectionClient) -> None:
    with pytest.raises(grpc.RpcError) as info:
        reflection.call("GetConversation", {"conversation_id": "nobody-here"})
    error: Any = info.value
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert error.details() == "conversation 'nobody-here' not found in namespace 'default'"
    # The server validates what a stub-less client may get wrong: a budget is required.
    reflection.call("Append", {"conversation_id": "c", "item": {"role": "user", "content": "hi"}})
    with pytest.raises(grpc.RpcError) as info:
        reflection.call("GetContext", {"conversation_id": "c", "query": "hi"})
    error = info.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "max_tokens" in error.details()
    # A field the server's descriptors do not have is refused before anything is sent.
    with pytest.raises(json_format.ParseError, match="no_such_field"):
        reflection.call("GetConversation", {"conversation_id": "c", "no_such_field": 1})
