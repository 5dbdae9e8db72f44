"""The LangGraph store on a real server. The contract tests run one body against LangGraph's
own InMemoryStore and against ContextWMStore and expect the same answers (put, get, update,
delete, filters, list_namespaces, batches, namespace checks); the rest is what only
contextwm does: search by meaning and words, and how values map onto items."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from contextwm.app import Service
from contextwm_client import AppendBatchResult, Client, NewItem
from contextwm_client.integrations.langchain import ContextWMStore
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

NS = "memories"  # the contextwm namespace the store owns


@pytest.fixture(params=["in_memory", "contextwm"])
def store(request: pytest.FixtureRequest) -> Iterator[BaseStore]:
    """LangGraph's reference store, then ours: the contract tests run on both."""
    if request.param == "in_memory":
        yield InMemoryStore()
    else:
        client: Client = request.getfixturevalue("client")
        yield ContextWMStore(client, namespace=NS)


@pytest.fixture
def cwm_store(client: Client) -> ContextWMStore:
    return ContextWMStore(client, namespace=NS)


def keys(items: Sequence[Any]) -> list[str]:
    return sorted(i.key for i in items)


# ---------------------------------------------------------------- the contract, on both


def test_put_get_update_and_delete(store: BaseStore) -> None:
    ns = ("users", "alice", "memories")
    assert store.get(ns, "tea") is None
    store.put(ns, "tea", {"memory": "Alice drinks green tea", "confidence": 0.9})
    first = store.get(ns, "tea")
    assert first is not None
    assert (first.namespace, first.key) == (ns, "tea")
    assert first.value == {"memory": "Alice drinks green tea", "confidence": 0.9}
    assert first.created_at <= first.updated_at

    store.put(ns, "tea", {"memory": "Alice switched to black tea"})
    second = store.get(ns, "tea")
    assert second is not None
    assert second.value == {"memory": "Alice switched to black tea"}
    assert second.updated_at >= first.updated_at

    store.delete(ns, "tea")
    assert store.get(ns, "tea") is None
    store.delete(ns, "tea")  # deleting what is gone is no error
    store.delete(("nobody",), "nothing")


def test_values_keep_their_json_types(store: BaseStore) -> None:
    value = {
        "text": "x",
        "n": 3,
        "f": 1.5,
        "ok": True,
        "none": None,
        "list": [1, "a"],
        "d": {"k": [{}]},
    }
    store.put(("docs",), "v", value)
    got = store.get(("docs",), "v")
    assert got is not None and got.value == value


def test_namespaces_and_keys_are_kept_apart(store: BaseStore) -> None:
    store.put(("users", "alice"), "k", {"who": "alice"})
    store.put(("users", "bob"), "k", {"who": "bob"})
    store.put(("users",), "k", {"who": "users"})
    alice, bob, users = (
        store.get(ns, "k") for ns in [("users", "alice"), ("users", "bob"), ("users",)]
    )
    assert alice is not None and alice.value == {"who": "alice"}
    assert bob is not None and bob.value == {"who": "bob"}
    assert users is not None and users.value == {"who": "users"}


def test_search_without_a_query_filters_under_the_prefix(store: BaseStore) -> None:
    store.put(
        ("users", "alice", "memories"),
        "tea",
        {"kind": "preference", "score": 5, "meta": {"source": "chat"}},
    )
    store.put(
        ("users", "alice", "memories"),
        "job",
        {"kind": "fact", "score": 2, "meta": {"source": "form"}},
    )
    store.put(("users", "alice", "notes"), "todo", {"kind": "preference", "score": 9})
    store.put(("users", "bob", "memories"), "tea", {"kind": "preference", "score": 1})
    store.put(("teams",), "t", {"kind": "preference", "score": 7})

    assert keys(store.search(("users", "alice"))) == ["job", "tea", "todo"]
    assert keys(store.search(("users", "alice", "memories"))) == ["job", "tea"]
    assert len(store.search(())) == 5
    assert store.search(("users", "carol")) == []
    assert store.search(("users", "ali")) == []  # labels match whole, not by their start
    by_kind = store.search(("users",), filter={"kind": "preference"})
    assert sorted((i.namespace, i.key) for i in by_kind) == [
        (("users", "alice", "memories"), "tea"),
        (("users", "alice", "notes"), "todo"),
        (("users", "bob", "memories"), "tea"),
    ]
    assert keys(store.search((), filter={"score": {"$gt": 4}})) == ["t", "tea", "todo"]
    assert keys(store.search((), filter={"score": {"$gte": 2, "$lt": 7}})) == ["job", "tea"]
    assert keys(store.search((), filter={"kind": {"$ne": "preference"}})) == ["job"]
    assert keys(store.search((), filter={"meta": {"source": "chat"}})) == ["tea"]
    assert keys(store.search((), filter={"kind": "preference", "score": 1})) == ["tea"]
    assert all(i.score is None for i in store.search(()))
    assert len(store.search((), limit=2)) == 2
    assert len(store.search((), limit=2, offset=4)) == 1


def test_list_namespaces(store: BaseStore) -> None:
    for ns in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("x",),
    ]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [
        ("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
        ("a", "c", "f"), ("x",),
    ]  # fmt: skip
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f"),
    ]  # fmt: skip
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("i",)) == [("a", "b", "d", "i")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("x",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]


def test_batch_answers_each_operation_in_order(store: BaseStore) -> None:
    store.put(("docs",), "a", {"n": 1})
    results = store.batch(
        [
            GetOp(("docs",), "a"),
            PutOp(("docs",), "b", {"n": 2}),
            SearchOp(("docs",), filter={"n": 1}),
            ListNamespacesOp(),
            PutOp(("docs",), "a", None),
        ]
    )
    got, put, found, namespaces, deleted = results
    assert got is not None and got.value == {"n": 1}  # type: ignore[union-attr]
    assert put is None and deleted is None
    assert keys(found) == ["a"]  # type: ignore[arg-type]
    assert namespaces == [("docs",)]
    assert store.get(("docs",), "a") is None
    b = store.get(("docs",), "b")
    assert b is not None and b.value == {"n": 2}


def test_the_async_methods_do_the_same(store: BaseStore) -> None:
    async def run() -> tuple[Any, ...]:
        await store.aput(("docs",), "a", {"n": 1})
        got = await store.aget(("docs",), "a")
        found = await store.asearch(("docs",))
        names = await store.alist_namespaces()
        await store.adelete(("docs",), "a")
        return got, found, names, await store.aget(("docs",), "a")

    got, found, names, gone = asyncio.run(run())
    assert got.value == {"n": 1}
    assert keys(found) == ["a"]
    assert names == [("docs",)]
    assert gone is None


@pytest.mark.parametrize(
    "namespace", [(), ("langgraph", "x"), ("a.b",), ("",), ("a", "")], ids=repr
)
def test_bad_namespaces_are_refused(store: BaseStore, namespace: tuple[str, ...]) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "k", {"v": 1})


def test_bad_namespaces_in_ops_given_to_batch_are_refused(cwm_store: ContextWMStore) -> None:
    # LangGraph asks this of stores that join labels into text (InMemoryStore does not).
    with pytest.raises(InvalidNamespaceError):
        cwm_store.batch([GetOp(("a.b",), "k")])
    with pytest.raises(InvalidNamespaceError):
        cwm_store.batch([SearchOp(("a", ""))])
    with pytest.raises(InvalidNamespaceError):
        cwm_store.batch([GetOp((), "k")])


def test_a_namespace_whose_values_are_all_deleted_is_no_longer_listed(
    cwm_store: ContextWMStore,
) -> None:
    # As in LangGraph's database stores (InMemoryStore keeps listing it).
    cwm_store.put(("x",), "k", {"v": 1})
    cwm_store.put(("y",), "k", {"v": 1})
    cwm_store.delete(("x",), "k")
    assert cwm_store.list_namespaces() == [("y",)]


def test_a_ttl_is_refused(store: BaseStore) -> None:
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("docs",), "k", {"v": 1}, ttl=5)


# ---------------------------------------------------------------- what contextwm adds


def fill(store: ContextWMStore) -> None:
    alice = ("users", "alice", "memories")
    store.put(
        alice, "tea", {"memory": "Alice drinks green tea every morning", "kind": "preference"}
    )
    store.put(
        alice, "job", {"memory": "Alice works as a nurse at the city hospital", "kind": "fact"}
    )
    store.put(alice, "pet", {"memory": "Alice has a cat called Miso", "kind": "fact"})
    store.put(
        ("users", "bob", "memories"),
        "tea",
        {"memory": "Bob hates tea and drinks coffee", "kind": "preference"},
    )


def test_search_with_a_query_is_contextwms_ranked_within_the_prefix(
    cwm_store: ContextWMStore,
) -> None:
    fill(cwm_store)
    hits = cwm_store.search(("users", "alice"), query="what does she drink in the morning?")
    assert hits[0].key == "tea" and hits[0].namespace == ("users", "alice", "memories")
    assert all(h.namespace[:2] == ("users", "alice") for h in hits)  # never bob's tea
    scores = [h.score for h in hits]
    assert all(s is not None for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    # By meaning, without a shared word: "occupation" is not in any value.
    assert cwm_store.search(("users", "alice"), query="occupation", limit=1)[0].key == "job"
    # The words of a value count too: a name it holds.
    assert cwm_store.search(("users",), query="Miso", limit=1)[0].key == "pet"
    # Filters and paging apply to the ranked hits.
    facts = cwm_store.search(("users",), query="tea", filter={"kind": "preference"})
    assert {(h.namespace[1], h.key) for h in facts} == {("alice", "tea"), ("bob", "tea")}
    first, second = (cwm_store.search(("users",), query="tea", limit=1, offset=n) for n in (0, 1))
    both = cwm_store.search(("users",), query="tea", limit=2)
    assert [(h.namespace, h.key) for h in [*first, *second]] == [(h.namespace, h.key) for h in both]


def test_search_without_a_query_lists_the_most_recently_put_first(
    cwm_store: ContextWMStore,
) -> None:
    for key in ("a", "b", "c"):
        cwm_store.put(("docs",), key, {"v": key})
    assert [i.key for i in cwm_store.search(("docs",))] == ["c", "b", "a"]
    cwm_store.put(("docs",), "a", {"v": "again"})
    assert [i.key for i in cwm_store.search(("docs",))] == ["a", "c", "b"]
    assert [i.key for i in cwm_store.search(("docs",), limit=1, offset=1)] == ["c"]


def test_a_value_put_with_index_false_is_found_by_key_and_filter_not_by_query(
    cwm_store: ContextWMStore,
) -> None:
    cwm_store.put(("docs",), "secret", {"text": "the vault code is 4711"}, index=False)
    cwm_store.put(("docs",), "open", {"text": "the office opens at nine"})
    assert [h.key for h in cwm_store.search(("docs",), query="vault code 4711")] != ["secret"]
    assert "secret" not in {h.key for h in cwm_store.search(("docs",), query="vault code 4711")}
    assert keys(cwm_store.search(("docs",))) == ["open", "secret"]
    got = cwm_store.get(("docs",), "secret")
    assert got is not None and got.value == {"text": "the vault code is 4711"}


def test_the_text_of_a_value_is_its_indexed_fields(client: Client) -> None:
    store = ContextWMStore(client, namespace=NS, fields=["memory"])
    store.put(("u",), "a", {"memory": "likes jazz", "kind": "preference"})
    store.put(
        ("u",),
        "b",
        {"memory": "likes jazz", "facts": [{"t": "plays sax"}, {"t": "in Oslo"}]},
        index=["facts[*].t"],
    )
    store.put(("u",), "c", {"memory": "likes jazz", "kind": "x"}, index=["$"])
    contents = {
        i.metadata["langgraph.key"]: i.content for i in client.iter_items("u", namespace=NS)
    }
    assert contents == {
        "a": "likes jazz",
        "b": "plays sax\nin Oslo",
        "c": "memory: likes jazz\nkind: x",
    }


def test_values_map_onto_one_conversation_per_namespace_and_one_item_per_value(
    client: Client, cwm_store: ContextWMStore
) -> None:
    fill(cwm_store)
    conversations = {
        c.conversation_id: c.total_items for c in client.iter_conversations(namespace=NS)
    }
    assert conversations == {"users.alice.memories": 3, "users.bob.memories": 1}
    (bob,) = client.iter_items("users.bob.memories", namespace=NS)
    assert bob.content == "memory: Bob hates tea and drinks coffee\nkind: preference"
    assert bob.metadata["langgraph.key"] == "tea"
    assert bob.metadata["langgraph.value"] == (
        '{"memory":"Bob hates tea and drinks coffee","kind":"preference"}'
    )
    assert [bob.metadata[f"langgraph.ns.{i}"] for i in range(3)] == ["users", "bob", "memories"]
    assert bob.metadata["langgraph.indexed"] == "true"


def test_an_update_erases_the_older_version_and_keeps_the_creation_time(
    client: Client, cwm_store: ContextWMStore
) -> None:
    ns = ("users", "alice")
    cwm_store.put(ns, "city", {"memory": "Alice lives in Lisbon"})
    created = cwm_store.get(ns, "city")
    cwm_store.put(ns, "city", {"memory": "Alice moved to Porto"})
    updated = cwm_store.get(ns, "city")
    assert created is not None and updated is not None
    assert updated.created_at == created.created_at
    assert updated.updated_at > created.updated_at
    (item,) = client.iter_items("users.alice", namespace=NS)  # every state: one item left
    assert item.content == "memory: Alice moved to Porto"
    assert client.search("Lisbon", include_window=True, mode="lexical", namespace=NS).hits == ()
    cwm_store.delete(ns, "city")
    assert list(client.iter_items("users.alice", namespace=NS)) == []


def test_the_newest_version_wins_when_an_older_one_was_left(
    client: Client, cwm_store: ContextWMStore
) -> None:
    """A put cut off after its append leaves two versions: reads take the newest, and the
    next put erases both."""
    cwm_store.put(("u",), "k", {"v": "old"})
    (old,) = client.iter_items("u", namespace=NS)
    newer = dict(old.metadata, **{"langgraph.value": '{"v":"new"}', "langgraph.version": "v2"})
    client.append("u", "new", metadata=newer, namespace=NS)
    got = cwm_store.get(("u",), "k")
    assert got is not None and got.value == {"v": "new"}
    assert [i.value for i in cwm_store.search(("u",))] == [{"v": "new"}]
    cwm_store.put(("u",), "k", {"v": "newest"})
    assert [i.content for i in client.iter_items("u", namespace=NS)] == ["v: newest"]


class CountingClient(Client):
    """A real client that counts its AppendBatch calls."""

    def __init__(self, target: str) -> None:
        super().__init__(target)
        self.append_batch_calls = 0

    def append_batch(
        self,
        conversation_id: str,
        items: Sequence[NewItem | Mapping[str, Any]],
        *,
        namespace: str | None = None,
        batch_size: int = 1000,
    ) -> AppendBatchResult:
        self.append_batch_calls += 1
        return super().append_batch(
            conversation_id, items, namespace=namespace, batch_size=batch_size
        )


def test_puts_in_a_row_are_one_append_per_namespace_and_reads_see_them(service: Service) -> None:
    with CountingClient(f"127.0.0.1:{service.port}") as counting:
        store = ContextWMStore(counting, namespace=NS)
        results = store.batch(
            [
                PutOp(("a",), "1", {"v": 1}),
                PutOp(("a",), "2", {"v": 2}),
                PutOp(("a",), "1", {"v": "last"}),  # the same key again: the last one counts
                PutOp(("b",), "1", {"v": 3}),
                GetOp(("a",), "1"),  # after the puts: sees them
                PutOp(("a",), "2", None),
                GetOp(("a",), "2"),
            ]
        )
        assert counting.append_batch_calls == 2  # one for ("a",), one for ("b",)
        got, gone = results[4], results[6]
        assert got is not None and got.value == {"v": "last"}  # type: ignore[union-attr]
        assert gone is None
        assert counting.get_conversation("a", namespace=NS).total_items == 1


def test_other_conversations_of_the_namespace_stay_out_of_searches(
    client: Client, cwm_store: ContextWMStore
) -> None:
    client.append("chat", "I drink green tea", namespace=NS)
    cwm_store.put(("u",), "tea", {"memory": "green tea"})
    assert [h.key for h in cwm_store.search((), query="green tea")] == ["tea"]
    assert [h.key for h in cwm_store.search(())] == ["tea"]
