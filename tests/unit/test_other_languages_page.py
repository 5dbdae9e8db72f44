"""The Go example of docs/other-languages.md names only what the proto defines, as
protoc-gen-go names it.

Nothing here compiles Go: the names are read from the snippet and held against the proto's
descriptors (the Node.js snippet runs for real in tests/integration/test_e2e_node_client.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from contextwm_client.v1 import contextwm_pb2
from google.protobuf.descriptor import Descriptor

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "other-languages.md").read_text()
FILE = contextwm_pb2.DESCRIPTOR
SERVICE = FILE.services_by_name["ContextService"]


def go_name(proto_name: str) -> str:
    """protoc-gen-go's name for a field: conversation_id -> ConversationId."""
    return "".join(part[:1].upper() + part[1:] for part in proto_name.split("_"))


def literals(code: str) -> list[tuple[str, list[str]]]:
    """(message, top-level keys) of every `contextwmv1.Message{...}` literal in Go code."""
    code = re.sub(r'"[^"\n]*"', '""', code)  # a colon inside a string is no key
    found = []
    for match in re.finditer(r"contextwmv1\.(\w+)\{", code):
        depth, keys = 0, []
        for i in range(match.end() - 1, len(code)):
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            if depth == 0:
                break
            if depth == 1 and (key := re.match(r"[\s{,](\w+):", code[i:])):
                keys.append(key.group(1))
        found.append((match.group(1), keys))
    return found


def test_go_example_uses_the_protos_messages_fields_and_methods() -> None:
    (code,) = re.findall(r"```go\n(.*?)```", PAGE, flags=re.S)
    found = literals(code)
    assert {m for m, _ in found} == {
        "AppendRequest",
        "NewItem",
        "GetContextRequest",
        "GetConversationRequest",
    }
    for message, keys in found:
        descriptor: Descriptor = FILE.message_types_by_name[message]
        assert keys, message
        assert set(keys) <= {go_name(f.name) for f in descriptor.fields}, message
    assert f"New{SERVICE.name}Client(" in code
    called = set(re.findall(r"cwm\.(\w+)\(ctx,", code))
    assert called == {"Append", "GetContext", "GetConversation"}
    assert called <= set(SERVICE.methods_by_name)
    # Getter chains: appended (AppendResponse).Result.Seq, enhanced (EnhancedContext).Text.
    result = SERVICE.methods_by_name["Append"].output_type.fields_by_name["result"].message_type
    assert "appended.GetResult().GetSeq()" in code
    assert result is not None and "seq" in result.fields_by_name
    assert "enhanced.GetText()" in code
    assert "text" in SERVICE.methods_by_name["GetContext"].output_type.fields_by_name


def test_go_generation_maps_the_proto_file_it_compiles() -> None:
    """Without a go_package option, the M option must name the file exactly as protoc sees it."""
    assert not FILE.GetOptions().HasField("go_package")
    (commands,) = [b for b in re.findall(r"```sh\n(.*?)```", PAGE, flags=re.S) if "protoc " in b]
    proto = FILE.name  # "contextwm/v1/contextwm.proto", relative to -I proto
    assert (ROOT / "proto" / proto).is_file()
    assert f"pkg='{proto}=" in commands
    assert "-I proto " in commands and commands.rstrip().split("#")[0].strip().endswith(proto)
    assert commands.count('"M$pkg"') == 2  # both plugins need the mapping
