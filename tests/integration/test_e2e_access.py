"""API keys through real gRPC: every ContextService method, found by walking the proto's
descriptors (so a method added later is tried too), is refused without a key, with a bad,
revoked or expired key, with a key for another namespace and with a read key where it needs
more; a refusal for another namespace reads the same whether or not the conversation exists;
open streams end when their key is revoked."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from contextwm.access.keys import Keys
from contextwm.app import Service
from contextwm.domain.access import Role
from contextwm_client import Client, PermissionDeniedError
from contextwm_client.v1 import contextwm_pb2 as pb
from google.protobuf.descriptor import MethodDescriptor

SERVICE = pb.DESCRIPTOR.services_by_name["ContextService"]
METHODS = list(SERVICE.methods)
ROLE_OF = {pb.ACCESS_READ: Role.READ, pb.ACCESS_WRITE: Role.WRITE, pb.ACCESS_ADMIN: Role.ADMIN}
HOME, OTHER = "team-a/agents", "team-b"


def role_of(method: MethodDescriptor) -> Role:
    return ROLE_OF[method.GetOptions().Extensions[pb.access]]


def request_for(method: MethodDescriptor, namespace: str, conversation_id: str = "c") -> Any:
    """The method's request, naming this namespace and conversation where it has them."""
    cls = getattr(pb, method.input_type.name)
    request = cls()
    fields = method.input_type.fields_by_name
    if isinstance(request, pb.ImportRequest):
        item = pb.ImportItem(namespace=namespace, conversation_id=conversation_id)
        item.item.content = "an imported item"
        request.items.append(item)
    if "namespace" in fields:
        request.namespace = namespace
    if "conversation_id" in fields:
        request.conversation_id = conversation_id
    return request


def call(
    channel: grpc.Channel, method: MethodDescriptor, request: Any, token: str | None
) -> tuple[grpc.StatusCode, str]:
    """Makes the call with this bearer token (None: no metadata); its status and message."""
    path = f"/{SERVICE.full_name}/{method.name}"
    response_type = getattr(pb, method.output_type.name)
    kinds: dict[tuple[bool, bool], Any] = {
        (False, False): channel.unary_unary,
        (False, True): channel.unary_stream,
        (True, False): channel.stream_unary,
        (True, True): channel.stream_stream,
    }
    stub = kinds[(method.client_streaming, method.server_streaming)](
        path,
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=response_type.FromString,
    )
    metadata = None if token is None else (("authorization", f"Bearer {token}"),)
    argument = iter([request]) if method.client_streaming else request
    try:
        result = stub(argument, metadata=metadata, timeout=20)
        if method.server_streaming:
            for _ in result:
                pass
    except grpc.RpcError as exc:
        return exc.code(), exc.details() or ""
    return grpc.StatusCode.OK, ""


@pytest.fixture
def keyed(start_service: Any) -> Iterator[tuple[Service, Keys, grpc.Channel]]:
    service = start_service(require_api_keys=True)
    keys = Keys(service.store, time.time)
    with grpc.insecure_channel(f"127.0.0.1:{service.port}") as channel:
        yield service, keys, channel


def test_every_method_declares_its_access() -> None:
    undeclared = [m.name for m in METHODS if m.GetOptions().Extensions[pb.access] not in ROLE_OF]
    assert undeclared == []


def test_every_method_refuses_callers_without_a_working_key(
    keyed: tuple[Service, Keys, grpc.Channel],
) -> None:
    _, keys, channel = keyed
    revoked_key, revoked = keys.create("revoked", Role.ADMIN, ["*"])
    keys.revoke(revoked_key.key_id)
    # Made by a clock an hour behind: it expired a second ago by the server's.
    _, expired = Keys(keys_store(keys), lambda: time.time() - 3600).create(
        "expired", Role.ADMIN, ["*"], expires_at=time.time() - 1
    )
    _, forged = keys.create("forged", Role.ADMIN, ["*"])
    forged = forged[:-4] + ("0000" if not forged.endswith("0000") else "1111")
    _, elsewhere = keys.create("elsewhere", Role.ADMIN, [OTHER])
    _, reader = keys.create("reader", Role.READ, ["team-a/"])
    unauthenticated = {
        "no key": None,
        "malformed key": "not-a-key",
        "unknown key": forged,
        "revoked key": revoked,
        "expired key": expired,
    }
    wrong: list[str] = []
    for method in METHODS:
        request = request_for(method, HOME)
        for case, token in unauthenticated.items():
            code, _ = call(channel, method, request, token)
            if code != grpc.StatusCode.UNAUTHENTICATED:
                wrong.append(f"{method.name} with {case}: {code.name}")
        code, message = call(channel, method, request, elsewhere)
        if code != grpc.StatusCode.PERMISSION_DENIED:
            wrong.append(f"{method.name} with another namespace's key: {code.name} {message}")
        if role_of(method) > Role.READ:
            code, message = call(channel, method, request, reader)
            if code != grpc.StatusCode.PERMISSION_DENIED:
                wrong.append(f"{method.name} with a read key: {code.name} {message}")
    assert wrong == []


def keys_store(keys: Keys) -> Any:
    return keys._store  # the store the server reads keys from


def test_another_namespaces_conversation_is_refused_alike_whether_or_not_it_exists(
    keyed: tuple[Service, Keys, grpc.Channel],
) -> None:
    service, keys, channel = keyed
    _, admin = keys.create("admin", Role.ADMIN, ["*"])
    _, stranger = keys.create("stranger", Role.ADMIN, [HOME])
    with Client(f"127.0.0.1:{service.port}", api_key=admin) as c:
        c.append("exists", "a secret of team b", namespace=OTHER)
    differing = []
    for method in METHODS:
        if "namespace" not in method.input_type.fields_by_name:
            continue
        answers = {
            call(channel, method, request_for(method, OTHER, conversation_id), stranger)
            for conversation_id in ("exists", "missing")
        }
        (code, _), *rest = answers
        if rest or code != grpc.StatusCode.PERMISSION_DENIED:
            differing.append(f"{method.name}: {answers}")
    assert differing == []


def test_a_scoped_key_works_inside_its_scope_and_nowhere_else(
    keyed: tuple[Service, Keys, grpc.Channel],
) -> None:
    service, keys, _ = keyed
    _, writer = keys.create("writer", Role.WRITE, ["team-a/"])
    target = f"127.0.0.1:{service.port}"
    with Client(target, api_key=writer) as c:
        assert c.append("c", "deploy with port 8443", namespace=HOME).seq == 1
        hits = c.search("port", namespace=HOME, include_window=True)  # namespace-wide
        assert [h.content for h in hits.hits] == ["deploy with port 8443"]
        with pytest.raises(PermissionDeniedError, match="may not use namespace 'team-b'"):
            c.search("port", namespace=OTHER)
        with pytest.raises(PermissionDeniedError, match="may not use namespace 'team-a'"):
            c.append("c", "the prefix is team-a/, not team-a", namespace="team-a")
        with pytest.raises(PermissionDeniedError, match="spans every namespace"):
            c.get_stats(all_namespaces=True)
        with pytest.raises(PermissionDeniedError, match="needs admin"):
            c.list_keys()


def test_a_watch_stream_ends_when_its_key_is_revoked(
    keyed: tuple[Service, Keys, grpc.Channel],
) -> None:
    service, keys, channel = keyed
    _, admin = keys.create("admin", Role.ADMIN, ["*"])
    reader_key, reader = keys.create("reader", Role.READ, [HOME])
    target = f"127.0.0.1:{service.port}"
    with Client(target, api_key=admin) as c:
        c.append("c", "first", namespace=HOME)
    watch = channel.unary_stream(
        f"/{SERVICE.full_name}/Watch",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=pb.Event.FromString,
    )
    stream: Any = watch(
        pb.WatchRequest(namespace=HOME, conversation_id="c"),
        metadata=(("authorization", f"Bearer {reader}"),),
        timeout=30,
    )
    assert next(stream).id >= 1  # open, and replaying
    ended: dict[str, Any] = {}

    def drain() -> None:
        try:
            for _ in stream:
                pass
        except grpc.RpcError as exc:
            ended["code"], ended["details"] = exc.code(), exc.details()
        ended["at"] = time.monotonic()

    reader_thread = threading.Thread(target=drain)
    reader_thread.start()
    with Client(target, api_key=admin) as c:
        revoked_at = time.monotonic()
        c.revoke_key(reader_key.key_id)
    reader_thread.join(10)
    assert ended.get("code") == grpc.StatusCode.UNAUTHENTICATED, ended
    assert f"API key {reader_key.key_id} was revoked" in ended["details"]
    assert ended["at"] - revoked_at < 5


def test_keys_are_managed_over_grpc_and_tokens_shown_once(
    keyed: tuple[Service, Keys, grpc.Channel],
) -> None:
    service, keys, _ = keyed
    _, admin = keys.create("admin", Role.ADMIN, ["*"])
    target = f"127.0.0.1:{service.port}"
    with Client(target, api_key=admin) as c:
        created = c.create_key("ci", "read", ["team-a/"])
        assert created.key.role == "read" and created.key.namespaces == ("team-a/",)
        listed = {k.key_id: k for k in c.list_keys()}
        assert created.key.key_id in listed and "token" not in repr(listed[created.key.key_id])
        rotated = c.rotate_key(created.key.key_id)
        assert rotated.key.key_id == created.key.key_id and rotated.token != created.token
    with Client(target, api_key=rotated.token) as c:
        assert c.list_conversations(namespace=HOME) is not None
    with (
        Client(target, api_key=created.token) as c,
        pytest.raises(Exception, match="not known"),
    ):
        c.list_conversations(namespace=HOME)


def test_a_scoped_key_restores_its_own_export_of_several_chunks(
    keyed: tuple[Service, Keys, grpc.Channel],
) -> None:
    service, keys, channel = keyed
    _, writer = keys.create("writer", Role.WRITE, [OTHER])
    with Client(f"127.0.0.1:{service.port}", api_key=writer, namespace=OTHER) as c:
        # Over a mebibyte of lines: the restore streams them in more than one chunk.
        c.append_batch("big", [{"content": f"{n} " + "x" * 110_000} for n in range(12)])
        lines = list(c.export("big"))
        c.erase_conversation("big")
        assert c.restore_export(lines, namespace=OTHER).restored == 1
        assert len(list(c.iter_items("big"))) == 12
    # Another client's way: the namespace in the first chunk only, which names the stream's.
    restore = channel.stream_unary(
        f"/{SERVICE.full_name}/RestoreExport",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=pb.RestoreExportResponse.FromString,
    )
    chunks = [
        pb.RestoreExportRequest(namespace="tenant-c", lines=lines[:5]),
        pb.RestoreExportRequest(lines=lines[5:]),
    ]
    _, into_c = keys.create("tenant-c writer", Role.WRITE, ["tenant-c"])
    answer = restore(iter(chunks), metadata=(("authorization", f"Bearer {into_c}"),), timeout=60)
    assert answer.restored == 1


def test_a_read_key_changes_nothing_stored(start_service: Any, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("the tide turns at six\n")
    service = start_service(require_api_keys=True, workspace_root=str(tmp_path))
    keys = Keys(service.store, time.time)
    _, writer = keys.create("writer", Role.WRITE, [HOME])
    _, reader = keys.create("reader", Role.READ, [HOME])
    target = f"127.0.0.1:{service.port}"
    with Client(target, api_key=writer, namespace=HOME) as w:
        w.append("c", "hello")
        w.read_file_chunk("c", "notes.txt")  # the writer's read moves the view and records
        before = (w.get_conversation("c").total_items, w.get_session("c"), w.get_usage("c"))
        with Client(target, api_key=reader, namespace=HOME) as r:
            assert r.get_usage("c").reported_tokens == 0  # reading the usage is a read
            for change in (
                lambda: r.read_file_chunk("c", "notes.txt"),
                lambda: r.read_file_chunk("c", "notes.txt", record=False),
                lambda: r.scroll_file("c", line=1),
                lambda: r.get_usage("c", reported_input_tokens=123_456),
            ):
                with pytest.raises(PermissionDeniedError, match="needs write"):
                    change()
            assert r.search_files("c", "tide").total_matches == 1  # searching is a read
        after = (w.get_conversation("c").total_items, w.get_session("c"), w.get_usage("c"))
        assert after == before
        assert w.get_usage("c", reported_input_tokens=123_456).reported_tokens == 123_456
