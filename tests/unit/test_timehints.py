"""Tests for contextwm.retrieval.timehints: phrase families, negatives, events, stripping."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from contextwm.retrieval.timehints import (
    EVENT_INSTANT,
    TimeHint,
    names_time,
    parse_time_hint,
    strip_time_phrase,
)
from hypothesis import given, settings
from hypothesis import strategies as st

# Wednesday: the ISO week runs Mon 2025-03-10 .. Mon 2025-03-17.
NOW = datetime(2025, 3, 12, 15, 30, tzinfo=UTC)
FIRST = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


# query, expected since, expected until, expected phrase
RANGES: list[tuple[str, datetime | None, datetime | None, str]] = [
    # days
    ("what did we say today?", utc(2025, 3, 12), None, "today"),
    ("earlier today we fixed it", utc(2025, 3, 12), None, "earlier today"),
    ("the bug from yesterday", utc(2025, 3, 11), utc(2025, 3, 12), "from yesterday"),
    ("YESTERDAY", utc(2025, 3, 11), utc(2025, 3, 12), "YESTERDAY"),
    ("the day before yesterday", utc(2025, 3, 10), utc(2025, 3, 11), "the day before yesterday"),
    ("yesterday morning", utc(2025, 3, 11), utc(2025, 3, 11, 12), "yesterday morning"),
    ("yesterday evening", utc(2025, 3, 11, 18), utc(2025, 3, 12), "yesterday evening"),
    ("this morning", utc(2025, 3, 12), utc(2025, 3, 12, 12), "this morning"),
    ("last night", utc(2025, 3, 11, 18), utc(2025, 3, 12, 6), "last night"),
    # calendar weeks, months, years
    ("what did we decide last week?", utc(2025, 3, 3), utc(2025, 3, 10), "last week"),
    ("the previous week", utc(2025, 3, 3), utc(2025, 3, 10), "the previous week"),
    ("this week", utc(2025, 3, 10), None, "this week"),
    ("earlier this week", utc(2025, 3, 10), None, "earlier this week"),
    ("the week before last", utc(2025, 2, 24), utc(2025, 3, 3), "the week before last"),
    ("last weekend", utc(2025, 3, 8), utc(2025, 3, 10), "last weekend"),
    ("over the weekend", utc(2025, 3, 8), utc(2025, 3, 10), "over the weekend"),
    ("last month", utc(2025, 2, 1), utc(2025, 3, 1), "last month"),
    ("this month", utc(2025, 3, 1), None, "this month"),
    ("the month before last", utc(2025, 1, 1), utc(2025, 2, 1), "the month before last"),
    ("last year", utc(2024, 1, 1), utc(2025, 1, 1), "last year"),
    ("this year", utc(2025, 1, 1), None, "this year"),
    ("the last week of work", utc(2025, 3, 3), utc(2025, 3, 10), "the last week"),
    # N units ago
    ("3 days ago", utc(2025, 3, 9), utc(2025, 3, 10), "3 days ago"),
    ("three days ago", utc(2025, 3, 9), utc(2025, 3, 10), "three days ago"),
    ("a day ago", utc(2025, 3, 11), utc(2025, 3, 12), "a day ago"),
    ("2 weeks ago", utc(2025, 2, 24), utc(2025, 3, 3), "2 weeks ago"),
    ("two weeks ago", utc(2025, 2, 24), utc(2025, 3, 3), "two weeks ago"),
    ("a couple of weeks ago", utc(2025, 2, 24), utc(2025, 3, 3), "a couple of weeks ago"),
    ("two months ago", utc(2025, 1, 1), utc(2025, 2, 1), "two months ago"),
    ("4 months ago", utc(2024, 11, 1), utc(2024, 12, 1), "4 months ago"),
    ("twelve months ago", utc(2024, 3, 1), utc(2024, 4, 1), "twelve months ago"),
    ("a year ago", utc(2024, 1, 1), utc(2025, 1, 1), "a year ago"),
    ("3 hours ago", utc(2025, 3, 12, 12), utc(2025, 3, 12, 13), "3 hours ago"),
    ("an hour ago", utc(2025, 3, 12, 14), utc(2025, 3, 12, 15), "an hour ago"),
    ("10 minutes ago", utc(2025, 3, 12, 15, 15), utc(2025, 3, 12, 15, 25), "10 minutes ago"),
    ("a few days ago", utc(2025, 3, 8), utc(2025, 3, 11), "a few days ago"),
    # rolling windows
    ("in the last 3 days", utc(2025, 3, 9, 15, 30), None, "in the last 3 days"),
    ("the past week", utc(2025, 3, 5, 15, 30), None, "the past week"),
    ("over the past few days", utc(2025, 3, 8, 15, 30), None, "over the past few days"),
    ("in the last hour", utc(2025, 3, 12, 14, 30), None, "in the last hour"),
    ("past 24 hours", utc(2025, 3, 11, 15, 30), None, "past 24 hours"),
    ("the last two months", utc(2025, 1, 12, 15, 30), None, "the last two months"),
    # months and years
    ("what happened in May", utc(2024, 5, 1), utc(2024, 6, 1), "in May"),
    ("in may", utc(2024, 5, 1), utc(2024, 6, 1), "in may"),
    ("in March", utc(2025, 3, 1), utc(2025, 4, 1), "in March"),
    ("during January", utc(2025, 1, 1), utc(2025, 2, 1), "during January"),
    ("in Sept", utc(2024, 9, 1), utc(2024, 10, 1), "in Sept"),
    ("in May 2023", utc(2023, 5, 1), utc(2023, 6, 1), "in May 2023"),
    ("the March 2024 incident", utc(2024, 3, 1), utc(2024, 4, 1), "March 2024"),
    ("last May", utc(2024, 5, 1), utc(2024, 6, 1), "last May"),
    ("last March", utc(2024, 3, 1), utc(2024, 4, 1), "last March"),
    ("in early May", utc(2024, 5, 1), utc(2024, 5, 11), "in early May"),
    ("mid-April", utc(2024, 4, 11), utc(2024, 4, 21), "mid-April"),
    ("late February", utc(2025, 2, 21), utc(2025, 3, 1), "late February"),
    ("at the end of January", utc(2025, 1, 21), utc(2025, 2, 1), "at the end of January"),
    ("at the start of March", utc(2025, 3, 1), utc(2025, 3, 11), "at the start of March"),
    ("in 2024", utc(2024, 1, 1), utc(2025, 1, 1), "in 2024"),
    ("the 2024-03 report", utc(2024, 3, 1), utc(2024, 4, 1), "2024-03"),
    # single dates
    ("on 2024-03-05", utc(2024, 3, 5), utc(2024, 3, 6), "on 2024-03-05"),
    ("logs from 2024/03/05 10:15", utc(2024, 3, 5), utc(2024, 3, 6), "from 2024/03/05 10:15"),
    ("on March 5", utc(2025, 3, 5), utc(2025, 3, 6), "on March 5"),
    ("on March 12", utc(2025, 3, 12), utc(2025, 3, 13), "on March 12"),
    ("on March 20", utc(2024, 3, 20), utc(2024, 3, 21), "on March 20"),
    ("on 5 March 2024", utc(2024, 3, 5), utc(2024, 3, 6), "on 5 March 2024"),
    ("March 5th, 2024", utc(2024, 3, 5), utc(2024, 3, 6), "March 5th, 2024"),
    ("the 5th of March", utc(2025, 3, 5), utc(2025, 3, 6), "the 5th of March"),
    ("Mar. 3", utc(2025, 3, 3), utc(2025, 3, 4), "Mar. 3"),
    ("on Feb 29", utc(2024, 2, 29), utc(2024, 3, 1), "on Feb 29"),
    # weekdays: strictly before today, also for today's own weekday
    ("last Monday", utc(2025, 3, 10), utc(2025, 3, 11), "last Monday"),
    ("last Tuesday", utc(2025, 3, 11), utc(2025, 3, 12), "last Tuesday"),
    ("on Wednesday", utc(2025, 3, 5), utc(2025, 3, 6), "on Wednesday"),
    ("on Thursday", utc(2025, 3, 6), utc(2025, 3, 7), "on Thursday"),
    ("this past Sunday", utc(2025, 3, 9), utc(2025, 3, 10), "this past Sunday"),
    # open bounds
    ("since Monday", utc(2025, 3, 10), None, "since Monday"),
    ("since yesterday", utc(2025, 3, 11), None, "since yesterday"),
    ("since last week", utc(2025, 3, 3), None, "since last week"),
    ("since May", utc(2024, 5, 1), None, "since May"),
    ("since 2024", utc(2024, 1, 1), None, "since 2024"),
    ("before May 2024", None, utc(2024, 5, 1), "before May 2024"),
    ("before yesterday", None, utc(2025, 3, 11), "before yesterday"),
    ("prior to last week", None, utc(2025, 3, 3), "prior to last week"),
    ("after May", utc(2024, 6, 1), None, "after May"),
    ("after yesterday", utc(2025, 3, 12), None, "after yesterday"),
    ("until yesterday", None, utc(2025, 3, 12), "until yesterday"),
    ("by March 2024", None, utc(2024, 4, 1), "by March 2024"),
    # ranges
    ("between May and July", utc(2024, 5, 1), utc(2024, 8, 1), "between May and July"),
    ("between March and May", utc(2024, 3, 1), utc(2024, 6, 1), "between March and May"),
    ("between November and January", utc(2024, 11, 1), utc(2025, 2, 1),
     "between November and January"),
    ("between 2024-03-05 and 2024-03-07", utc(2024, 3, 5), utc(2024, 3, 8),
     "between 2024-03-05 and 2024-03-07"),
    ("from May to July", utc(2024, 5, 1), utc(2024, 8, 1), "from May to July"),
    ("between yesterday and today", utc(2025, 3, 11), None, "between yesterday and today"),
]  # fmt: skip


@pytest.mark.parametrize(("query", "since", "until", "phrase"), RANGES)
def test_ranges(query: str, since: datetime | None, until: datetime | None, phrase: str) -> None:
    hint = parse_time_hint(query, NOW)
    assert hint == TimeHint(since, until, phrase)


def test_month_not_yet_begun_is_last_years() -> None:
    feb = datetime(2025, 2, 10, 8, 0, tzinfo=UTC)
    assert parse_time_hint("in May", feb) == TimeHint(utc(2024, 5, 1), utc(2024, 6, 1), "in May")
    assert parse_time_hint("in February", feb) == TimeHint(
        utc(2025, 2, 1), utc(2025, 3, 1), "in February"
    )


def test_weekday_asked_on_monday_and_weekend_asked_on_sunday() -> None:
    monday = datetime(2025, 3, 10, 9, 0, tzinfo=UTC)
    assert parse_time_hint("since Monday", monday) == TimeHint(
        utc(2025, 3, 3), None, "since Monday"
    )
    sunday = datetime(2025, 3, 16, 9, 0, tzinfo=UTC)
    assert parse_time_hint("last weekend", sunday) == TimeHint(
        utc(2025, 3, 8), utc(2025, 3, 10), "last weekend"
    )
    assert parse_time_hint("over the weekend", sunday) == TimeHint(
        utc(2025, 3, 15), None, "over the weekend"
    )


PREFERENCES: list[tuple[str, str, bool, bool]] = [
    ("what changed recently?", "recently", True, False),
    ("the most recent decision", "most recent", True, False),
    ("the latest version", "latest", True, False),
    ("what did we say last time", "last time", True, False),
    ("what did we agree at the start?", "at the start", False, True),
    ("at the beginning of the conversation", "at the beginning of the conversation", False, True),
    ("what was the plan originally", "originally", False, True),
    ("initially we used sqlite", "initially", False, True),
    ("at first it worked", "at first", False, True),
    ("is this the first time", "the first time", False, True),
]


@pytest.mark.parametrize(("query", "phrase", "recent", "oldest"), PREFERENCES)
def test_preferences_carry_no_range(query: str, phrase: str, recent: bool, oldest: bool) -> None:
    assert parse_time_hint(query, NOW) == TimeHint(None, None, phrase, recent, oldest)


def test_conversation_relative_phrases_need_first() -> None:
    assert parse_time_hint("in the first 10 minutes", NOW, first=FIRST) == TimeHint(
        FIRST, FIRST + timedelta(minutes=10), "in the first 10 minutes"
    )
    assert parse_time_hint("what broke on day 2", NOW, first=FIRST) == TimeHint(
        utc(2025, 3, 2), utc(2025, 3, 3), "on day 2"
    )
    assert parse_time_hint("in the first hour", NOW) is None


NEGATIVES = [
    "may I ask what the parser does",
    "May the tests pass",
    "I may have broken it",
    "in May I think we",  # "May I": the modal, even after "in"
    "during may we",
    "since may",  # lower-case "may" needs in/on/during
    "open the second file",
    "wait a second",
    "march through the files",
    "what did Jan say about the index",
    "Black Friday sale",
    "have we seen this error before?",
    "what happened before",
    "the 2024 roadmap",
    "in 2048 bytes",
    "since 2024-02-30",
    "release 2024.1.5 notes",
    "error 404 in the parser",
    "what is the last step",
    "the first file",
    "at the last minute",
    "the last days of the project",
    "after today",
    "until today",
    "from the cache to the disk",
    "",
    "   ?!",
]


@pytest.mark.parametrize("query", NEGATIVES)
def test_no_hint(query: str) -> None:
    assert parse_time_hint(query, NOW) is None


class FakeLocator:
    """Answers from a table and records what it was asked."""

    def __init__(self, events: dict[str, datetime | None]) -> None:
        self.events = events
        self.asked: list[str] = []

    def __call__(self, phrase: str) -> datetime | None:
        self.asked.append(phrase)
        return self.events.get(phrase)


MIGRATION = utc(2025, 3, 5, 10)
DEPLOY = utc(2025, 3, 9, 14)
CACHE = utc(2025, 3, 7, 8)


def _hint(since: datetime | None, until: datetime | None, phrase: str) -> TimeHint:
    return TimeHint(since, until, phrase)


# query, expected hint, the last phrase the locator was asked about
EVENTS: list[tuple[str, TimeHint, str]] = [
    ("before the migration",
     _hint(None, MIGRATION + EVENT_INSTANT, "before the migration"), "migration"),
    ("what did we decide before the migration?",
     _hint(None, MIGRATION + EVENT_INSTANT, "before the migration"), "migration"),
    ("after we deployed the cache, did latency drop?",
     _hint(CACHE, None, "after we deployed the cache"), "deployed the cache"),
    ("after we had deployed the cache",
     _hint(CACHE, None, "after we had deployed the cache"), "deployed the cache"),
    ("since the migration", _hint(MIGRATION, None, "since the migration"), "migration"),
    ("after the deploy yesterday", _hint(DEPLOY, None, "after the deploy"), "deploy"),
    ("between the migration and the deploy",
     _hint(MIGRATION, DEPLOY + EVENT_INSTANT, "between the migration and the deploy"), "deploy"),
    ("between the deploy and the migration",
     _hint(MIGRATION, DEPLOY + EVENT_INSTANT, "between the deploy and the migration"),
     "migration"),
]  # fmt: skip


@pytest.mark.parametrize(("query", "expected", "last_asked"), EVENTS)
def test_events_resolved_by_locator(query: str, expected: TimeHint, last_asked: str) -> None:
    locator = FakeLocator({"migration": MIGRATION, "deploy": DEPLOY, "deployed the cache": CACHE})
    assert parse_time_hint(query, NOW, locate_event=locator) == expected
    assert locator.asked[-1] == last_asked


def test_unlocated_event_gives_no_hint() -> None:
    locator = FakeLocator({})
    assert parse_time_hint("before the migration", NOW, locate_event=locator) is None
    assert locator.asked == ["migration"]
    assert parse_time_hint("between the migration and May", NOW, locate_event=locator) is None


def test_event_without_locator_gives_no_hint_but_later_dates_still_read() -> None:
    assert parse_time_hint("before the migration", NOW) is None
    assert parse_time_hint("before the migration last week", NOW) == TimeHint(
        utc(2025, 3, 3), utc(2025, 3, 10), "last week"
    )


def test_vague_objects_and_by_are_not_sent_to_the_locator() -> None:
    locator = FakeLocator({})
    for query in ("before that", "after it", "fixed by the lead", "have we seen this before?"):
        assert parse_time_hint(query, NOW, locate_event=locator) is None
    assert locator.asked == []


def test_dates_win_over_events_and_locator_times_become_utc() -> None:
    locator = FakeLocator(
        {"launch": datetime(2025, 3, 5, 12, 0, tzinfo=timezone(timedelta(hours=2)))}
    )
    assert parse_time_hint("before May 2024", NOW, locate_event=locator) == TimeHint(
        None, utc(2024, 5, 1), "before May 2024"
    )
    assert locator.asked == []
    hint = parse_time_hint("after the launch", NOW, locate_event=locator)
    assert hint == TimeHint(utc(2025, 3, 5, 10), None, "after the launch")


def test_non_utc_now_is_converted_and_naive_now_is_rejected() -> None:
    paris = NOW.astimezone(timezone(timedelta(hours=1)))
    hint = parse_time_hint("yesterday", paris)
    assert hint == TimeHint(utc(2025, 3, 11), utc(2025, 3, 12), "yesterday")
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_time_hint("yesterday", datetime(2025, 3, 12))
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_time_hint("yesterday", NOW, first=datetime(2025, 3, 1))


STRIPS = [
    ("what did we decide last week?", "what did we decide?"),
    ("the bug from yesterday", "the bug"),
    ("what happened in May", "what happened"),
    ("yesterday's failing test", "failing test"),
    ("In May, we picked faiss", "we picked faiss"),
    ("notes, yesterday, about the cache", "notes, about the cache"),
    ("what did we agree at the start?", "what did we agree?"),
    ("since Monday what broke", "what broke"),
]


@pytest.mark.parametrize(("query", "expected"), STRIPS)
def test_strip_time_phrase(query: str, expected: str) -> None:
    hint = parse_time_hint(query, NOW)
    assert hint is not None
    assert strip_time_phrase(query, hint) == expected


def test_strip_event_phrase_and_absent_phrase() -> None:
    locator = FakeLocator({"migration": MIGRATION})
    query = "before the migration, what was the schema?"
    hint = parse_time_hint(query, NOW, locate_event=locator)
    assert hint is not None
    assert strip_time_phrase(query, hint) == "what was the schema?"
    assert strip_time_phrase("unrelated  text", hint) == "unrelated  text"


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
]  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
NUMBER_WORDS = [
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve",
]  # fmt: skip
FIXED = [
    "today", "earlier today", "yesterday", "the day before yesterday", "yesterday afternoon",
    "this morning", "last night", "last week", "this week", "earlier this week",
    "the week before last", "last weekend", "last month", "this month", "the month before last",
    "last year", "this year", "the year before last", "the past week", "in the last hour",
]  # fmt: skip
UNITS = ["minute", "hour", "day", "week", "month", "year"]

NOWS = st.datetimes(
    min_value=datetime(1995, 1, 1), max_value=datetime(2090, 12, 31), timezones=st.just(UTC)
)


@st.composite
def past_phrases(draw: st.DrawFn, now: datetime) -> str:
    """A phrase from one of the families that only ever point at or before now."""
    today = now.date()
    year = draw(st.integers(1970, now.year - 1))
    back = draw(st.integers(0, 3000))
    day = today - timedelta(days=back)
    count = draw(st.integers(1, 12))
    number = draw(st.sampled_from([str(count), NUMBER_WORDS[count - 1]]))
    unit = draw(st.sampled_from(UNITS))
    month = draw(st.sampled_from(MONTHS))
    weekday = draw(st.sampled_from(WEEKDAYS))
    plain = draw(
        st.sampled_from(
            [
                draw(st.sampled_from(FIXED)),
                f"{number} {unit}{'s' if count > 1 else ''} ago",
                f"a few {unit}s ago",
                f"in the last {number} {unit}s",
                f"in {month}",
                f"during {month}",
                f"in late {month}",
                f"last {month}",
                f"in {month} {year}",
                f"last {weekday}",
                f"on {weekday}",
                f"on {day.isoformat()}",
                f"on {MONTHS[day.month - 1]} {min(day.day, 28)}",
                f"on {day.day} {MONTHS[day.month - 1]} {day.year}",
                f"in {year}",
            ]
        )
    )
    anchor = draw(
        st.sampled_from(
            ["yesterday", "last week", f"{month} {year}", day.isoformat(), "3 days ago", weekday]
        )
    )
    other = day - timedelta(days=draw(st.integers(0, 400)))
    return draw(
        st.sampled_from(
            [
                plain,
                f"since {anchor}",
                f"before {anchor}",
                f"between {other.isoformat()} and {day.isoformat()}",
            ]
        )
    )


@settings(max_examples=300)
@given(data=st.data(), now=NOWS)
def test_past_phrases_give_valid_utc_ranges(data: st.DataObject, now: datetime) -> None:
    phrase = data.draw(past_phrases(now))
    hint = parse_time_hint(f"notes about the parser {phrase}", now)
    assert hint is not None, phrase
    assert hint.since is not None or hint.until is not None
    for bound in (hint.since, hint.until):
        assert bound is None or (bound.tzinfo is not None and bound.utcoffset() == timedelta(0))
    if hint.since is not None and hint.until is not None:
        assert hint.since < hint.until
    if hint.since is not None:
        assert hint.since <= now
    assert strip_time_phrase(f"notes about the parser {phrase}", hint) == "notes about the parser"


@given(
    now=NOWS,
    query=st.text(alphabet=st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=60),
)
def test_any_text_gives_none_or_a_well_formed_hint(now: datetime, query: str) -> None:
    hint = parse_time_hint(query, now)
    if hint is not None:
        assert hint.phrase and hint.phrase in query
        if hint.since is not None and hint.until is not None:
            assert hint.since < hint.until


@given(now=NOWS, day=st.dates(min_value=date(1970, 1, 1), max_value=date(2099, 12, 31)))
def test_iso_dates_are_that_day(now: datetime, day: date) -> None:
    hint = parse_time_hint(f"what happened on {day.isoformat()}?", now)
    assert hint is not None
    assert hint.since == datetime(day.year, day.month, day.day, tzinfo=UTC)
    assert hint.until == hint.since + timedelta(days=1)


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("how often do the vault credentials rotate?", False),
        ("the 3 retries of the 2 services", False),  # digits that are no date
        ("what did we discuss last week?", True),
        ("before the migration", True),  # an event: found on some clock
        ("in May", True),
    ],
)
def test_names_time_tells_queries_no_clock_reads_a_time_in(query: str, named: bool) -> None:
    assert names_time(query) is named


# A locator that finds every phrase: what a bound reads depends on the words alone.
def _anything(phrase: str) -> datetime | None:
    return MIGRATION


@pytest.mark.parametrize(
    "query",
    [
        "how often does the CI job retry the flaky parser tests before failing?",
        "does it retry before giving up",
        "run the linter after formatting",
        "since retrying did not help, what else?",
        "how many retries before 3 failures",
    ],
)
def test_a_bare_bound_word_without_a_time_or_a_named_event_gives_no_hint(query: str) -> None:
    locator = FakeLocator({})
    assert parse_time_hint(query, NOW, locate_event=locator) is None
    assert locator.asked == []
    assert parse_time_hint(query, NOW, locate_event=_anything) is None
    assert not names_time(query)


@pytest.mark.parametrize(
    ("query", "since", "until"),
    [
        ("what did we decide before last week?", None, utc(2025, 3, 3)),
        ("the flaky tests before May 3", None, utc(2024, 5, 3)),
        ("what broke since Monday", utc(2025, 3, 10), None),
        ("failing tests after yesterday", utc(2025, 3, 12), None),
        ("what failed before the migration", None, MIGRATION + EVENT_INSTANT),
        ("after we deployed the cache", MIGRATION, None),
        ("what changed since Sarah's wedding", MIGRATION, None),
    ],
)
def test_a_bound_word_with_a_time_or_a_named_event_still_gives_a_hint(
    query: str, since: datetime | None, until: datetime | None
) -> None:
    hint = parse_time_hint(query, NOW, locate_event=_anything)
    assert hint is not None and (hint.since, hint.until) == (since, until)
