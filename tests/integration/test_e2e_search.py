"""Search over a conversation's archive (optionally window) or a whole namespace."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

import pytest
from contextwm.ports.embedder import Embedder
from contextwm_client import (
    Client,
    ConversationSettings,
    InvalidArgumentError,
    NewItem,
    NotFoundError,
)

# The paths that differ by store: each test runs on SQLite, then PostgreSQL.
pytestmark = pytest.mark.both_stores

T0 = datetime(2024, 1, 1, tzinfo=UTC)
Mode = Literal["hybrid", "dense", "lexical"]


def _fill(client: Client, conv: str, namespace: str = "default") -> None:
    client.create_conversation(
        conv, settings=ConversationSettings(window_max_items=2), namespace=namespace
    )
    client.append_batch(
        conv,
        [
            NewItem(
                "The invoice service crashed with an OutOfMemoryError.",
                role="tool",
                timestamp=T0,
                metadata={"host": "a1"},
            ),
            NewItem(
                "We fixed the invoice crash by raising the heap limit.",
                role="assistant",
                timestamp=T0 + timedelta(days=10),
                metadata={"host": "a1"},
            ),
            NewItem(
                "Invoice totals are rounded to two decimals.",
                role="user",
                timestamp=T0 + timedelta(days=20),
                metadata={"host": "b2"},
                flags=("pinned",),
            ),
            NewItem(
                "Filler about the weather today.", role="user", timestamp=T0 + timedelta(days=30)
            ),
            NewItem(
                "More filler about lunch.", role="assistant", timestamp=T0 + timedelta(days=31)
            ),
        ],
        namespace=namespace,
    )


def test_archive_only_unless_window_is_asked_for(client: Client) -> None:
    _fill(client, "s")
    archived = {i.seq for i in client.iter_items("s", states=["archived"])}
    hits = client.search("invoice", conversation_id="s", top_k=10).hits
    assert hits and {h.seq for h in hits} <= archived
    window_hits = client.search("weather lunch", conversation_id="s", include_window=True).hits
    assert {h.seq for h in window_hits} & {4, 5}
    assert all(h.item.conversation_id == "s" for h in hits)


def test_top_k_and_filters(client: Client) -> None:
    _fill(client, "s")
    assert (
        len(client.search("invoice", conversation_id="s", include_window=True, top_k=1).hits) == 1
    )
    by_role = client.search("invoice", conversation_id="s", include_window=True, roles=["tool"])
    assert [h.seq for h in by_role.hits] == [1]
    by_flag = client.search("invoice", conversation_id="s", include_window=True, flags=["pinned"])
    assert [h.seq for h in by_flag.hits] == [3]
    by_time = client.search(
        "invoice",
        conversation_id="s",
        include_window=True,
        since=T0 + timedelta(days=5),
        until=T0 + timedelta(days=15),
    )
    assert [h.seq for h in by_time.hits] == [2]
    by_meta = client.search(
        "invoice", conversation_id="s", include_window=True, metadata={"host": "a1"}
    )
    assert sorted(h.seq for h in by_meta.hits) == [1, 2]
    assert all(dict(h.metadata)["host"] == "a1" for h in by_meta.hits)


def test_namespace_wide_search_and_isolation(client: Client) -> None:
    _fill(client, "one", namespace="tenant-a")
    _fill(client, "two", namespace="tenant-a")
    _fill(client, "other", namespace="tenant-b")
    hits = client.search(
        "invoice crash heap", top_k=20, include_window=True, namespace="tenant-a"
    ).hits
    assert {h.item.conversation_id for h in hits} == {"one", "two"}
    b_hits = client.search("invoice crash heap", include_window=True, namespace="tenant-b").hits
    assert {h.item.conversation_id for h in b_hits} == {"other"}
    assert client.search("invoice", namespace="tenant-c").hits == ()
    with pytest.raises(NotFoundError):
        client.search("invoice", conversation_id="one", namespace="tenant-b")


def test_bad_search_requests(client: Client) -> None:
    _fill(client, "s")
    with pytest.raises(InvalidArgumentError, match="query is empty"):
        client.search("  ", conversation_id="s")
    with pytest.raises(InvalidArgumentError, match="top_k"):
        client.search("invoice", conversation_id="s", top_k=5000)
    with pytest.raises(InvalidArgumentError, match="unknown importance flag"):
        client.search("invoice", conversation_id="s", flags=["shiny"])  # type: ignore[list-item]


_TOPICS = [
    "The deploy pipeline failed on the staging cluster again.",
    "Lunch was a mushroom risotto with too much salt.",
    "The quarterly budget review moved to Thursday afternoon.",
    "Our cat knocked the plant off the windowsill this morning.",
    "The database migration added an index on the orders table.",
    "I started reading a novel about a lighthouse keeper.",
    "The marathon training plan says ten kilometres on Sunday.",
    "We replaced the office printer after the paper jam saga.",
    "The garden needs watering twice a day in this heat.",
    "The new hire starts on the support team next week.",
]


def test_namespace_search_ranks_every_conversation_on_one_scale(client: Client) -> None:
    # 50 conversations of everyday chatter; two of them talk about a trip to Lisbon. Each
    # conversation's best hit used to be worth as much as any other's: off-topic chatter from
    # the 48 others outranked the literal matches.
    trips = {7: "trip-a", 31: "trip-b"}
    for n in range(50):
        cid = trips.get(n, f"chat-{n:02d}")
        texts = [_TOPICS[(n + k) % len(_TOPICS)] for k in range(10)]
        if n in trips:
            texts[2] = "We booked the flights to Lisbon for the conference in May."
            texts[5] = "The hotel in Lisbon is close to the tram line."
            texts[8] = "In Lisbon we should try the custard tarts in Belem."
        client.create_conversation(
            cid, settings=ConversationSettings(window_max_items=4), namespace="ns-scale"
        )
        client.append_batch(
            cid,
            [
                NewItem(t, role="user", timestamp=T0 + timedelta(minutes=k))
                for k, t in enumerate(texts)
            ],
            namespace="ns-scale",
        )
    hits = client.search("Lisbon", top_k=6, include_window=True, namespace="ns-scale").hits
    assert [h.item.conversation_id in {"trip-a", "trip-b"} for h in hits] == [True] * 6
    assert all("Lisbon" in h.item.content for h in hits)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    # A fact said in one conversation only is the best hit of all 50.
    client.append(
        "chat-23", "The vault credentials rotate every 45 days.", role="user", namespace="ns-scale"
    )
    top = client.search(
        "how often do the vault credentials rotate?",
        top_k=3,
        include_window=True,
        namespace="ns-scale",
    ).hits
    assert (top[0].item.conversation_id, top[0].item.content) == (
        "chat-23",
        "The vault credentials rotate every 45 days.",
    )


def test_time_words_can_be_left_unread(client: Client) -> None:
    _fill(client, "s")
    asked = T0 + timedelta(days=31)
    read = client.search("invoice crash ten days in", conversation_id="s", as_of=asked)
    assert read.time_range is None  # no time words: nothing to read
    last_month = client.search("invoice last month", conversation_id="s", as_of=asked)
    assert last_month.time_range is not None
    plain = client.search("invoice last month", conversation_id="s", as_of=asked, time_hints=False)
    assert plain.time_range is None
    assert all(h.parts.time == 0.0 for h in plain.hits)


def test_a_turn_beside_a_strong_hit_gains_from_it(client: Client) -> None:
    # The same turns twice; only where the reply stands differs. Beside the question it
    # answers, the reply (which names no topic) scores higher than far from it.
    question = "How did the pottery class with the kids go on Saturday?"
    reply = "They loved it and came home with three lopsided bowls!"
    filler = [_TOPICS[k % len(_TOPICS)] + f" ({k})" for k in range(20)]
    layouts = {"near": [*filler[:10], question, reply, *filler[10:]]}
    layouts["far"] = [question, *filler, reply]
    score = {}
    for name, texts in layouts.items():
        client.create_conversation(name)
        client.append_batch(name, [NewItem(t, role="user") for t in texts])
        hits = client.search("pottery class", conversation_id=name, top_k=30, include_window=True)
        score[name] = next(h.score for h in hits.hits if h.item.content == reply)
    assert score["near"] > score["far"] + 0.1


def test_namespace_search_stays_current_with_appends_evictions_and_deletions(
    client: Client, embedder: Embedder
) -> None:
    # Namespace search reads an in-memory index of the namespace's vectors, built by the first
    # search: everything after it reaches the index by its writers, never by a rebuild.
    ns = "ns-current"
    fact = "The staging database password rotates every 45 days."
    question = "how often is the staging db password changed?"

    def top(mode: Mode, *, include_window: bool = True) -> tuple[str, str]:
        hits = client.search(
            question, top_k=3, include_window=include_window, namespace=ns, mode=mode
        ).hits
        return (hits[0].item.conversation_id, hits[0].item.content) if hits else ("", "")

    def fill(cid: str, n: int, start: int) -> None:
        client.append_batch(
            cid,
            [NewItem(_TOPICS[(start + k) % len(_TOPICS)], role="user") for k in range(n)],
            namespace=ns,
        )

    for n in range(30):
        client.create_conversation(
            f"c{n:02d}", settings=ConversationSettings(window_max_items=3), namespace=ns
        )
        fill(f"c{n:02d}", 8, n)
    assert top("dense")[1] != fact  # builds the index; the fact is nowhere yet

    # Appended after the index was built: found in the window, by meaning alone too.
    client.append("c29", fact, role="user", namespace=ns)
    assert top("dense") == ("c29", fact)
    assert top("hybrid") == ("c29", fact)

    def archived() -> bool:
        return fact in {
            i.content for i in client.iter_items("c29", states=["archived"], namespace=ns)
        }

    # Outside the window only once evicted (the window keeps what scores highest, so the
    # fact may go at once): searched there only when it is.
    assert (top("dense", include_window=False) == ("c29", fact)) == archived()
    fill("c29", 5, 0)
    assert archived()
    assert top("dense", include_window=False) == ("c29", fact)
    assert top("hybrid", include_window=False) == ("c29", fact)

    # Deleted with its conversation: gone. The next conversation created may take its store
    # key (SQLite reuses the highest); its items at the same seqs must not bring the fact back.
    client.delete_conversation("c29", namespace=ns)
    client.create_conversation(
        "c99", settings=ConversationSettings(window_max_items=3), namespace=ns
    )
    fill("c99", 14, 3)
    modes: tuple[Mode, ...] = ("dense", "hybrid", "lexical")
    for mode in modes:
        assert top(mode)[0] != "c29"
        assert top(mode)[1] != fact
    hits = client.search(question, top_k=50, include_window=True, namespace=ns, mode="dense").hits
    assert all(h.item.conversation_id != "c29" for h in hits)
    # Each hit is ranked by its own words' vector, not by one a deleted item left behind.
    asked, *own = embedder.embed([question, *(h.item.content for h in hits)])
    assert [round(h.parts.similarity, 3) for h in hits] == [round(float(v @ asked), 3) for v in own]

    # Said again elsewhere: found there.
    client.append("c05", fact, role="user", namespace=ns)
    assert top("dense") == ("c05", fact)
    assert top("lexical") == ("c05", fact)


def test_an_event_that_places_the_time_is_still_searched_for(client: Client) -> None:
    # "after the accident" places the range after the turn about the accident; the question
    # is about the accident too, so its word stays in the search.
    start = datetime(2024, 3, 1, tzinfo=UTC)
    turns = [
        "I had a car accident on the highway this morning.",
        *[f"I feel wonderful and calm today, day {n}." for n in range(1, 6)],
        "The accident left me shaken for weeks.",
        *[f"I feel happy at the beach, day {n}." for n in range(6, 10)],
    ]
    for n, text in enumerate(turns):
        client.append("after", text, role="user", timestamp=start + timedelta(days=n))
    found = client.search(
        "How did I feel after the accident?", conversation_id="after", include_window=True
    )
    assert found.time_range is not None and found.time_range.since is not None
    assert found.hits[0].item.content == "The accident left me shaken for weeks."
