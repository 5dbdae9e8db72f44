"""The default enhanced context through gRPC: relevance shares the budget between window and
archive, the newest items are kept, history is rendered under day headings, and time words
are read against the moment the question is asked."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import bpe_openai
import pytest
from contextwm_client import Client, ConversationSettings, InvalidArgumentError, NewItem

ENC = bpe_openai.get_encoding("cl100k_base")
DAY0 = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)  # a Monday

FILLER = [
    "The quarterly report needs two more charts before Friday.",
    "I switched the office plants to a weekly watering schedule.",
    "Our cat knocked the coffee mug off the desk again.",
    "The new keyboard has a much nicer key travel.",
    "Traffic on the ring road was terrible this morning.",
    "We should order more printer paper for the team.",
]
FACTS = [
    "The staging database for project Heron runs on host db-heron-7.",
    "Project Heron deploys every Tuesday from the release branch.",
    "The Heron on-call rota is kept in the ops wiki under Heron/oncall.",
    "Heron's error budget is 0.5 percent of requests per month.",
]


def _archive_facts_then_filler(client: Client, conv: str, filler: int = 60) -> None:
    """The facts first (archived by the filler after them), then unrelated filler."""
    client.create_conversation(
        conv, settings=ConversationSettings(window_max_items=20, detect_importance=False)
    )
    items = [NewItem(f, role="user", timestamp=DAY0) for f in FACTS]
    items += [
        NewItem(
            f"{FILLER[k % len(FILLER)]} (note {k})",
            role=("user", "assistant")[k % 2],
            timestamp=DAY0 + timedelta(days=1 + k // 10),
        )
        for k in range(filler)
    ]
    client.append_batch(conv, items)


def _facts_returned(ctx) -> set[int]:  # type: ignore[no-untyped-def]
    return {s.seq for s in (*ctx.recent, *ctx.history)} & set(range(1, len(FACTS) + 1))


def test_relevance_gives_the_budget_to_the_archive_when_the_answer_is_there(
    client: Client,
) -> None:
    _archive_facts_then_filler(client, "heron")
    question = "what do we know about project Heron: its database host, deploys, on-call?"
    default = client.get_context("heron", question, max_tokens=200)
    fixed_split = client.get_context("heron", question, max_tokens=200, recent_share=0.7)
    assert _facts_returned(default) == {1, 2, 3, 4}
    assert len(_facts_returned(fixed_split)) < 4  # its share went to the filler
    assert default.tokens.history > default.tokens.recent
    # The newest items are kept whatever the query (recent_min_items defaults to 2), within a
    # quarter of the budget: at 200 tokens one fits with its headings, at 400 both.
    newest = client.get_conversation("heron").last_seq
    assert newest in {s.seq for s in default.recent}
    roomier = client.get_context("heron", question, max_tokens=400)
    assert {newest - 1, newest} <= {s.seq for s in roomier.recent}
    for ctx in (default, fixed_split):
        assert ctx.total_tokens <= 200
        assert len(ENC.encode_ordinary(ctx.text)) == ctx.total_tokens
        assert ctx.tokens.recent + ctx.tokens.history + ctx.tokens.query <= ctx.total_tokens


def test_a_relevant_window_item_beats_newer_irrelevant_ones(client: Client) -> None:
    client.create_conversation(
        "desk", settings=ConversationSettings(recent_min_items=0, detect_importance=False)
    )
    items = [NewItem("The spare office key is taped under the third drawer.", role="user")]
    items += [NewItem(f"{FILLER[k % len(FILLER)]} ({k})") for k in range(30)]
    client.append_batch("desk", items)
    ctx = client.get_context("desk", "where is the spare office key?", max_tokens=60)
    assert ctx.history == ()  # everything is in the window
    assert 1 in {s.seq for s in ctx.recent}
    assert ctx.tokens.recent_omitted > 20  # the newer filler did not fit


def test_recent_min_items_keeps_the_newest_within_a_quarter_of_the_budget(
    client: Client,
) -> None:
    _archive_facts_then_filler(client, "keep")
    question = "which host runs the Heron staging database?"
    last = client.get_conversation("keep").last_seq
    client.update_conversation("keep", ConversationSettings(recent_min_items=0))
    none_kept = client.get_context("keep", question, max_tokens=60)
    client.update_conversation("keep", ConversationSettings(recent_min_items=3))
    three = client.get_context("keep", question, max_tokens=400)
    assert 1 in {s.seq for s in none_kept.history} and 1 in {s.seq for s in three.history}
    assert {last - 2, last - 1, last} <= {s.seq for s in three.recent}
    assert not {last - 2, last - 1, last} & {s.seq for s in none_kept.recent}
    # Kept items never take more than a quarter of the budget: at 60 tokens none fits (each
    # would cost about 30 with its headings), and the answer takes the budget.
    tight = client.get_context("keep", question, max_tokens=60)
    assert 1 in {s.seq for s in tight.history}
    assert not {last - 2, last - 1, last} & {s.seq for s in tight.recent}
    with pytest.raises(InvalidArgumentError, match="recent_min_items"):
        client.update_conversation("keep", ConversationSettings(recent_min_items=-1))


def test_history_is_rendered_under_one_heading_per_day(client: Client) -> None:
    _archive_facts_then_filler(client, "days")
    client.append_batch(
        "days",
        [NewItem("Heron's staging host moved to db-heron-9.", timestamp=DAY0 + timedelta(days=30))],
    )
    ctx = client.get_context("days", "Heron staging database host", max_tokens=400)
    history = ctx.text.split("# Relevant Historical Context\n\n", 1)[1].split("\n\n# ", 1)[0]
    headings = re.findall(r"^## \w{3} \d{1,2} \w{3}(?: \d{4})?$", history, flags=re.M)
    assert headings[0] == "## Mon 4 Mar 2024"  # the first names the year; the rest do not
    assert all(h.count(" ") == 3 for h in headings[1:])
    assert len(headings) == len(set(headings))  # one per day
    assert "user: The staging database for project Heron runs on host db-heron-7." in history
    assert "[2024-" not in ctx.text  # no timestamp on every line
    days = {s.timestamp.date() for s in ctx.history}
    assert len(headings) == len(days)


def test_as_of_reads_time_words_against_the_moment_asked(client: Client) -> None:
    client.create_conversation("trips", settings=ConversationSettings(window_max_items=2))
    notes = [
        (datetime(2024, 1, 8, tzinfo=UTC), "I went skiing in the Alps with Marta."),
        (datetime(2024, 2, 12, tzinfo=UTC), "I went to a jazz concert with Marta."),
        (datetime(2024, 3, 18, tzinfo=UTC), "I went hiking on the coast with Marta."),
        (datetime(2024, 3, 20, tzinfo=UTC), "Booked a dentist appointment."),
        (datetime(2024, 3, 21, tzinfo=UTC), "Paid the electricity bill."),
    ]
    client.append_batch("trips", [NewItem(t, timestamp=when) for when, t in notes])
    question = "what did I do with Marta two months ago?"
    asked = datetime(2024, 4, 15, tzinfo=UTC)
    ctx = client.get_context("trips", question, max_tokens=200, as_of=asked)
    assert ctx.time_range is not None
    assert ctx.time_range.since == datetime(2024, 2, 1, tzinfo=UTC)
    assert ctx.time_range.until == datetime(2024, 3, 1, tzinfo=UTC)
    best = max((*ctx.history, *ctx.recent), key=lambda s: s.score)
    assert best.seq == 2 and best.parts.time == 1.0
    # Without as_of, the conversation's own clock (its newest item, 21 March) is "now".
    own = client.get_context("trips", question, max_tokens=200)
    assert own.time_range is not None
    assert own.time_range.since == datetime(2024, 1, 1, tzinfo=UTC)
    hits = client.search(question, conversation_id="trips", as_of=asked, include_window=True)
    assert hits.hits[0].seq == 2
    with pytest.raises(InvalidArgumentError, match="as_of"):
        client.get_context("trips", question, max_tokens=200, as_of=datetime(1960, 1, 1))
    with pytest.raises(InvalidArgumentError, match="as_of"):
        client.search(question, conversation_id="trips", as_of=datetime(1960, 1, 1))


def test_a_short_answer_comes_with_the_question_it_answers(client: Client) -> None:
    client.create_conversation(
        "qa", settings=ConversationSettings(window_max_items=10, recent_min_items=0)
    )
    items = [
        NewItem("Which port does the Kestrel billing service listen on?", role="user"),
        NewItem("8443.", role="assistant"),
        NewItem("Which region hosts the Kestrel billing replicas?", role="user"),
        NewItem(
            "They run in " + "a region we chose for its latency and cost. " * 30, role="assistant"
        ),
    ]
    items += [NewItem(f"{FILLER[k % len(FILLER)]} ({k})", role="user") for k in range(30)]
    client.append_batch("qa", items)
    ctx = client.get_context("qa", "Kestrel billing service port", max_tokens=150)
    by_seq = {s.seq: s for s in (*ctx.recent, *ctx.history)}
    assert {1, 2} <= by_seq.keys()
    answer = by_seq[2]
    if answer.neighbor_of == 1:  # brought by its question rather than ranked on its own
        assert answer.score == pytest.approx(0.5 * by_seq[1].score)
    # The long answer to the other question is not worth its tokens at this budget.
    assert 4 not in by_seq


def test_every_returned_item_carries_its_score_parts(client: Client) -> None:
    _archive_facts_then_filler(client, "parts")
    ctx = client.get_context("parts", "Heron error budget", max_tokens=500)
    hit = next(s for s in ctx.history if s.seq == 4)
    assert hit.parts.lexical > 0 and hit.parts.similarity > 0.2
    assert 0 < hit.parts.recency < 1
    assert hit.score > 0
    for s in (*ctx.recent, *ctx.history):
        assert 0 <= s.parts.recency <= 1
        assert -1 <= s.parts.similarity <= 1
        if s.seq not in {f for f in range(1, 5)}:
            assert s.parts.similarity != 0.0  # measured for every item that has a vector


def test_words_every_turn_shares_do_not_decide(client: Client) -> None:
    # Speaker names on every turn carry no evidence; the rare word does.
    client.create_conversation("chat", settings=ConversationSettings(window_max_items=20))
    turns = [f"Caroline: {FILLER[k % len(FILLER)]} ({k})" for k in range(40)]
    turns[7] = "Caroline: I finally adopted a greyhound called Pixel last weekend."
    client.append_batch("chat", [NewItem(t) for t in turns])
    ctx = client.get_context("chat", "What is the name of Caroline's greyhound?", max_tokens=80)
    best = max((*ctx.history, *ctx.recent), key=lambda s: s.score)
    assert best.seq == 8


def test_the_words_of_the_best_hits_find_turns_that_share_none_with_the_question(
    client: Client,
) -> None:
    # Only the first turn answers in the question's words; the outage report names what it
    # named, and nothing the question asks. Unrelated chatter comes between and after.
    client.create_conversation("heron-db", settings=ConversationSettings(window_max_items=10))
    items = [NewItem("The Heron project's database is called Bluefin.", timestamp=DAY0)]
    items += [
        NewItem(f"{FILLER[k % len(FILLER)]} (aside {k})", timestamp=DAY0 + timedelta(hours=k))
        for k in range(40)
    ]
    items.append(
        NewItem(
            "Bluefin fell over twice last night; bring it back with the --safe switch.",
            timestamp=DAY0 + timedelta(days=3),
        )
    )
    items += [
        NewItem(f"{FILLER[k % len(FILLER)]} (later {k})", timestamp=DAY0 + timedelta(days=4))
        for k in range(20)
    ]
    client.append_batch("heron-db", items)
    question = "what do we know about Heron's database?"
    ctx = client.get_context("heron-db", question, max_tokens=200)
    found = {s.item.seq: s for s in ctx.history}
    assert {1, 42} <= found.keys()
    assert ctx.total_tokens <= 200
    # It shares no word with the question, yet it has a lexical score: Bluefin's.
    assert found[42].parts.lexical > 0.0
    # Search ranks by the words asked alone: there it has none.
    hits = client.search(question, conversation_id="heron-db", include_window=True, top_k=20)
    assert all(h.parts.lexical == 0.0 for h in hits.hits if h.item.seq == 42)


def test_a_feedback_word_s_new_turns_are_found_by_it_after_it_was_weighed(
    client: Client,
) -> None:
    # The first call weighs, and keeps, the postings of "bluefin" (a word of its best hit, not
    # of the question); a later turn holding it must still be found by it.
    client.create_conversation("fish", settings=ConversationSettings(window_max_items=10))
    items = [NewItem("The Heron project's database is called Bluefin.", timestamp=DAY0)]
    items += [NewItem(f"{FILLER[k % len(FILLER)]} (aside {k})") for k in range(20)]
    items.append(NewItem("Bluefin moved to the new disks in May."))
    items += [NewItem(f"{FILLER[k % len(FILLER)]} (more {k})") for k in range(20)]
    client.append_batch("fish", items)
    question = "what do we know about Heron's database?"
    first = client.get_context("fish", question, max_tokens=400)
    assert {s.item.seq: s.parts.lexical for s in first.history}.get(22, 0.0) > 0.0
    client.append_batch(
        "fish",
        [NewItem("Bluefin ran out of space at noon.")]
        + [NewItem(f"{FILLER[k % len(FILLER)]} (later {k})") for k in range(12)],
    )
    later = client.get_context("fish", question, max_tokens=400)
    found = {s.item.seq: s for s in (*later.history, *later.recent)}
    assert 43 in found and found[43].parts.lexical > 0.0
