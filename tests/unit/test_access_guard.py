"""The guard's decisions, the namespaces a request touches, and the sweep that ends streams
whose key stopped working (pure logic: keys from a dict)."""

from __future__ import annotations

import pytest
from contextwm.access.guard import NO_KEY, Guard
from contextwm.access.streams import OpenStreams
from contextwm.domain.access import ApiKey, Role, covers
from contextwm.domain.errors import PermissionDenied, Unauthenticated
from contextwm.transport.access import method_role, namespaces_of
from contextwm_client.v1 import contextwm_pb2 as pb


class DictKeys:
    def __init__(self) -> None:
        self.by_token: dict[str, ApiKey] = {}

    def authenticate(self, token: str) -> ApiKey:
        key = self.by_token.get(token)
        if key is None:
            raise Unauthenticated("the API key is not known to this server")
        return key


def key(role: Role, *scopes: str) -> ApiKey:
    return ApiKey("k1", "test", role, scopes, created_at=0.0)


def test_scopes_are_exact_names_prefixes_ending_in_a_slash_or_everything() -> None:
    assert covers(("team-a",), "team-a") and not covers(("team-a",), "team-a/x")
    assert covers(("team-a/",), "team-a/x") and covers(("team-a/",), "team-a/x/y")
    assert not covers(("team-a/",), "team-a") and not covers(("team-a/",), "team-ab/x")
    assert covers(("*",), "anything") and not covers((), "default")


def test_without_required_keys_a_call_without_one_runs_but_one_with_a_key_is_held_to_it() -> None:
    keys = DictKeys()
    keys.by_token["r"] = key(Role.READ, "a")
    guard = Guard(keys, required=False)
    assert guard.caller(None) is None
    Guard.admit(None, "Append", Role.WRITE, ["b"])  # no key: unchecked
    reader = guard.caller("r")
    with pytest.raises(PermissionDenied, match="has the read role; Append needs write"):
        Guard.admit(reader, "Append", Role.WRITE, ["a"])
    with pytest.raises(Unauthenticated, match="not known"):
        guard.caller("forged")


def test_required_keys_refuse_a_call_without_one_and_say_how_to_send_it() -> None:
    with pytest.raises(Unauthenticated) as caught:
        Guard(DictKeys(), required=True).caller(None)
    assert caught.value.message == NO_KEY and "authorization: Bearer" in NO_KEY


@pytest.mark.parametrize(
    ("the_key", "namespaces", "refusal"),
    [
        (key(Role.READ, "a"), ["a"], None),
        (key(Role.READ, "a"), ["a", "b"], "may not use namespace 'b'"),
        (key(Role.ADMIN, "a"), None, "spans every namespace"),
        (key(Role.READ, "*"), None, "spans every namespace"),
        (key(Role.ADMIN, "*"), None, None),
    ],
)
def test_a_key_is_admitted_only_inside_its_scope(
    the_key: ApiKey, namespaces: list[str] | None, refusal: str | None
) -> None:
    if refusal is None:
        Guard.admit(the_key, "GetStats", Role.READ, namespaces)
        return
    with pytest.raises(PermissionDenied, match=refusal):
        Guard.admit(the_key, "GetStats", Role.READ, namespaces)


def test_requests_name_their_namespaces() -> None:
    assert namespaces_of(pb.AppendRequest(conversation_id="c")) == ["default"]
    assert namespaces_of(pb.SearchRequest(namespace="team-a/x")) == ["team-a/x"]
    assert namespaces_of(pb.GetStatsRequest(all_namespaces=True)) is None
    assert namespaces_of(pb.ListKeysRequest()) is None
    assert namespaces_of(pb.RestoreExportRequest()) is None
    assert namespaces_of(pb.RestoreExportRequest(namespace="x")) == ["x"]
    items = [pb.ImportItem(namespace=n) for n in ("b", "", "b")]
    assert namespaces_of(pb.ImportRequest(items=items)) == ["b", "default"]


def test_roles_come_from_the_proto() -> None:
    assert method_role("GetContext") is Role.READ
    assert method_role("Append") is Role.WRITE
    assert method_role("CreateKey") is Role.ADMIN
    assert method_role("NoSuchMethod") is None


def test_the_sweep_ends_the_streams_of_keys_that_stopped_working_and_only_those() -> None:
    keys = DictKeys()
    keys.by_token.update({"live": key(Role.READ, "a"), "doomed": key(Role.READ, "a")})
    streams = OpenStreams(Guard(keys, required=True))
    live, doomed = streams.open("live"), streams.open("doomed")
    closed: list[str] = []
    doomed.add_closer(lambda: closed.append("doomed"))
    live.add_closer(lambda: closed.append("live"))
    streams.sweep()
    assert closed == []
    del keys.by_token["doomed"]
    streams.sweep()
    assert closed == ["doomed"]
    live.check()
    with pytest.raises(Unauthenticated, match="not known"):
        doomed.check()
    late: list[str] = []
    doomed.add_closer(lambda: late.append("at once"))  # ended already: called now
    assert late == ["at once"]
    doomed.close()
    live.close()
    streams.sweep()  # nothing open: nothing asked
