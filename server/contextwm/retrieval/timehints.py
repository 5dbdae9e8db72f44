"""Reads the time a query names ("last week", "in May", "before the migration") as a UTC range."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TypeAlias

__all__ = [
    "EVENT_INSTANT",
    "EventLocator",
    "TimeHint",
    "names_time",
    "parse_time_hint",
    "strip_time_phrase",
]


@dataclass(frozen=True, slots=True)
class TimeHint:
    """A time range read from a query, on the conversation's own clock.

    ``since`` is inclusive and ``until`` exclusive, both timezone-aware UTC; None means the
    range is open on that side. ``prefer_recent`` / ``prefer_oldest`` come with no range at
    all ("recently", "at the start"): they ask the ranking to favour one end of the history.
    """

    since: datetime | None
    until: datetime | None
    phrase: str
    prefer_recent: bool = False
    prefer_oldest: bool = False


# A located event is the instant of the item that names it; a range that ends at it keeps
# that item (and whatever shares its time), since a question about what came before an
# event needs the event too ("how long before the anniversary ...").
EVENT_INSTANT = timedelta(milliseconds=1)

EventLocator: TypeAlias = Callable[[str], datetime | None]
"""Given an event phrase ("migration"), returns when it happened in the conversation, or None."""


# ---------------------------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_MONTH_NUMBERS: dict[str, int] = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_WEEKDAYS: dict[str, int] = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
    "sunday": 6,
}  # fmt: skip
_NUMBER_WORDS: dict[str, int] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip

# Every hint contains one of these words or a digit, so a query with neither is answered from
# one findall and a set test: that is the fast path taken by most retrievals.
_TRIGGERS = frozenset([*_MONTH_NUMBERS, *_WEEKDAYS]) | _words(
    """today yesterday ago minute minutes min mins hour hours hr hrs day days week weeks
    weekend weekends month months year years morning afternoon evening night last recent
    recently lately latest newest start beginning outset first originally initially early
    earliest begin since before after until till between prior earlier later"""
)

# Words after which a bare month name ("in May") or year ("in 2024") is a date: without one,
# "march through the files" or "the 2024 roadmap" would read as time.
_MONTH_PREPS = _words("in during since before after by until till from through throughout")
_YEAR_PREPS = _MONTH_PREPS
_WEEKDAY_PREPS = _words("on since before after by until till from")
_WEEKEND_PREPS = _words("over on at during since before after until till from")
# A preposition right before a phrase belongs to it: stripping "last week" from "what did we
# decide in the last week" should not leave a dangling "in".
_LEAD_PREPS = _words("in on at during from over within throughout")
# "may" followed by a pronoun or verb is the modal ("in May I think", "may I ask"): it is left
# alone even after "in", as the cheaper mistake is a missed hint, not a wrong range.
_MAY_BLOCK = _words(
    """i we you he she it they be been have has had not also need want ask help get take see
    come go do use make try well just still never only"""
)

# Event phrases end at punctuation, at these words, or after _EVENT_MAX_WORDS words.
_EVENT_STOP = _words(
    """and or but so because while when where why how what which who whom whose did does do
    if then than since before after until till between"""
)
_EVENT_MAX_WORDS = 6
# Leading words the locator should not see: "after we had deployed the cache" -> "deployed the
# cache".
_EVENT_FILLER = _words(
    "the a an we i you they he she our my your their his her its us had have has did"
)
# An event is named by a noun phrase or a clause: its first word is one of these, or a name
# ("Sarah's wedding"). Anything else after a bound word ("before failing", "after formatting",
# "since retrying") says in what order steps go, not when: read as an event, whichever item
# mentioned the word would cut the range, and the question's evidence with it.
_EVENT_OPENERS = _EVENT_FILLER | _words("this that these those each every")
# Objects too vague to locate: "before that", "after it".
_EVENT_VAGUE = _words(
    """that this it then now ever everything anything something all them those these me him
    her us you one"""
)

_DAY_PARTS: dict[str, tuple[int, int]] = {
    "morning": (0, 12),
    "afternoon": (12, 18),
    "evening": (18, 24),
    "night": (18, 30),  # runs into the small hours of the next day
}


def _alternation(words: Iterable[str]) -> str:
    # Longest first so a regex never settles on "sep" inside "september"; \b follows anyway.
    return "|".join(sorted(words, key=len, reverse=True))


_MONTH_ALT = _alternation(_MONTH_NUMBERS)
_MONTH = rf"(?P<month>{_MONTH_ALT})\b"
_WEEKDAY = rf"(?P<wd>{_alternation(_WEEKDAYS)})\b"
_NUM = (
    r"(?P<num>\d{1,4}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|an"
    r"|a couple(?: of)?|couple(?: of)?|a few|few|several|a)"
)
_UNIT = r"(?P<unit>minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)\b"
_YEAR = r"(?P<year>(?:19|20)\d\d)\b(?![-/.:]\d)"  # not the head of 2024-02-30 or 2024.1


def _rx(pattern: str) -> re.Pattern[str]:
    """Compiles an atom pattern; a literal space in it stands for any run of whitespace."""
    return re.compile(pattern.replace(" ", r"\s+"), re.IGNORECASE)


_TOKEN_RE = re.compile(r"\b(?:[A-Za-z]+|\d+)")
_WORD_RE = re.compile(r"[a-z]+")
_DIGIT_RE = re.compile(r"\d")
_NEXT_WORD_RE = re.compile(r"\s+([A-Za-z]+)")
_EVENT_WORD_RE = re.compile(r"\s*([^\W_][\w'’-]*(?:\.\w+)*)")
_POSSESSIVE_RE = re.compile(r"['’]s\b")
_BOUND_RE = _rx(
    r"(?P<kw>since|before|after|until|till|by|prior to|earlier than|later than|up until) "
)
_RANGE_RE = _rx(r"(?P<kw>between|from) ")
_AND_RE = _rx(r" and ")
_TO_RE = _rx(r" (?:to|until|till|through|thru) ")


# ---------------------------------------------------------------------------------------------
# Calendar arithmetic (all UTC: the conversation clock has no local timezone)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Span:
    """A resolved expression; ``earlier`` is the same words read one year back, for ranges."""

    since: datetime | None
    until: datetime | None
    prefer_recent: bool = False
    prefer_oldest: bool = False
    earlier: _Span | None = None


@dataclass(frozen=True, slots=True)
class _Ctx:
    """What every resolver needs: the query and the conversation's clock."""

    text: str
    now: datetime
    today: date
    first: datetime | None
    locate_event: EventLocator | None


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _day(day: date) -> _Span:
    return _Span(_midnight(day), _midnight(day + timedelta(days=1)))


def _iso_week(day: date) -> _Span:
    monday = day - timedelta(days=day.weekday())
    return _Span(_midnight(monday), _midnight(monday + timedelta(days=7)))


def _add_months(year: int, month: int, delta: int) -> tuple[int, int]:
    y, m0 = divmod(year * 12 + month - 1 + delta, 12)
    return y, m0 + 1


def _month(year: int, month: int) -> _Span:
    ny, nm = _add_months(year, month, 1)
    return _Span(datetime(year, month, 1, tzinfo=UTC), datetime(ny, nm, 1, tzinfo=UTC))


def _month_part(year: int, month: int, part: str | None) -> _Span:
    """A whole month, or its early (1-10), mid (11-20) or late (21-end) part."""
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(*_add_months(year, month, 1), 1, tzinfo=UTC)
    if part == "early":
        return _Span(start, start + timedelta(days=10))
    if part == "mid":
        return _Span(start + timedelta(days=10), start + timedelta(days=20))
    if part == "late":
        return _Span(start + timedelta(days=20), end)
    return _Span(start, end)


def _year(year: int) -> _Span:
    return _Span(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def _day_part(day: date, part: str) -> _Span:
    start, end = _DAY_PARTS[part]
    return _Span(_midnight(day) + timedelta(hours=start), _midnight(day) + timedelta(hours=end))


def _unit(text: str) -> str:
    t = text.lower()
    if t.startswith("mi"):
        return "minute"
    if t.startswith("h"):
        return "hour"
    if t.startswith("d"):
        return "day"
    if t.startswith("w"):
        return "week"
    return "month" if t.startswith("mo") else "year"


def _count(text: str) -> tuple[int, int]:
    """The fewest and most units a count means: "a few" is 2 to 4, "several" 3 to 7."""
    t = " ".join(text.lower().split())
    if t.isdigit():
        return int(t), int(t)
    if "couple" in t:
        return 2, 2
    if "few" in t:
        return 2, 4
    if t == "several":
        return 3, 7
    n = _NUMBER_WORDS[t]
    return n, n


_FIXED_UNITS = {
    "minute": timedelta(minutes=1),
    "hour": timedelta(hours=1),
    "day": timedelta(days=1),
    "week": timedelta(weeks=1),
}


def _shift(moment: datetime, unit: str, n: int) -> datetime:
    """moment moved n units (negative: back); months and years clamp the day (Mar 31 -> Feb 28)."""
    step = _FIXED_UNITS.get(unit)
    if step is not None:
        return moment + n * step
    y, m = _add_months(moment.year, moment.month, n * 12 if unit == "year" else n)
    last = (date(*_add_months(y, m, 1), 1) - timedelta(days=1)).day
    return moment.replace(year=y, month=m, day=min(moment.day, last))


def _ago(ctx: _Ctx, unit: str, n: int) -> _Span:
    """The window n units back: the calendar day, ISO week, month or year; an hour or a few
    minutes around the instant for the short units, never reaching past now."""
    if unit in ("minute", "hour"):
        moment = _shift(ctx.now, unit, -n)
        half = (
            timedelta(minutes=30)
            if unit == "hour"
            else max(timedelta(minutes=1), timedelta(seconds=30 * n))
        )
        return _Span(moment - half, min(moment + half, ctx.now))
    if unit == "day":
        return _day(ctx.today - timedelta(days=n))
    if unit == "week":
        return _iso_week(ctx.today - timedelta(days=7 * n))
    if unit == "month":
        return _month(*_add_months(ctx.now.year, ctx.now.month, -n))
    return _year(ctx.now.year - n)


def _recent_date(month: int, day: int, latest: date) -> date | None:
    """The most recent valid month/day on or before latest (Feb 29 looks back up to 8 years)."""
    for year in range(latest.year, max(latest.year - 8, 0), -1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue
        if candidate <= latest:
            return candidate
    return None


def _yearless_day(ctx: _Ctx, month: int, day: int) -> _Span | None:
    found = _recent_date(month, day, ctx.today)
    if found is None:
        return None
    before = _recent_date(month, day, date(found.year - 1, 12, 31)) if found.year > 1 else None
    span = _day(found)
    earlier = _day(before) if before is not None else None
    return _Span(span.since, span.until, earlier=earlier)


def _as_utc(moment: datetime) -> datetime:
    # A locator returning a naive time is taken to mean UTC, the clock the store keeps.
    if moment.tzinfo is None or moment.utcoffset() is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


# ---------------------------------------------------------------------------------------------
# Atoms: one regex per phrase family, tried only at tokens that can start it
# ---------------------------------------------------------------------------------------------

_Resolver: TypeAlias = Callable[[re.Match[str], _Ctx, str, bool], _Span | None]
"""(match, context, the word right before the match, inside since/before/between?) -> span."""


@dataclass(frozen=True, slots=True)
class _Atom:
    """A phrase family: its pattern, the first words it can start with ("#": a digit)."""

    pattern: re.Pattern[str]
    starts: frozenset[str]
    resolve: _Resolver


def _month_word_ok(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool, anchored: bool) -> bool:
    """Whether the month word in m is a month: anchored by a day, year or modifier, or after a
    preposition; "may" must also be capitalised or follow in/on/during, and not be the modal."""
    word = m["month"]
    if word.lower() == "may":
        if not word[0].isupper() and prev not in ("in", "on", "during"):
            return False
        following = _NEXT_WORD_RE.match(ctx.text, m.end("month"))
        if following is not None and following.group(1).lower() in _MAY_BLOCK:
            return False
    return anchored or bound or prev in _MONTH_PREPS


def _r_ago(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    fewest, most = _count(m["num"])
    unit = _unit(m["unit"])
    newest, oldest = _ago(ctx, unit, fewest), _ago(ctx, unit, most)
    return _Span(oldest.since, newest.until)


def _r_rolling(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    unit = _unit(m["unit"])
    which = m["which"].lower()
    if m["num"] is not None:
        n = _count(m["num"])[1]
    elif m["unit"].lower().endswith("s"):
        return None  # "the last days of the project": no count, no range
    elif which != "past" and unit in ("week", "month", "year"):
        return _ago(ctx, unit, 1)  # "last week" is the calendar week, "the past week" 7 days
    elif which != "past" and unit == "minute":
        return None  # "at the last minute" is an idiom
    else:
        n = 1
    return _Span(_shift(ctx.now, unit, -n), None)


def _r_this(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    unit = m["unit"].lower()
    if unit == "week":
        start = _iso_week(ctx.today).since
    elif unit == "month":
        start = datetime(ctx.now.year, ctx.now.month, 1, tzinfo=UTC)
    else:
        start = datetime(ctx.now.year, 1, 1, tzinfo=UTC)
    return _Span(start, None)


def _r_today(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    return _Span(_midnight(ctx.today), None)


def _r_yesterday(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    day = ctx.today - timedelta(days=1)
    return _day_part(day, m["part"].lower()) if m["part"] else _day(day)


def _r_day_before_yesterday(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    return _day(ctx.today - timedelta(days=2))


def _r_this_part(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    return _day_part(ctx.today, m["part"].lower())


def _r_last_night(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    return _day_part(ctx.today - timedelta(days=1), "night")


def _r_before_last(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    return _ago(ctx, m["unit"].lower(), 2)


def _r_weekday(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    if m["mod"] is None and not bound and prev not in _WEEKDAY_PREPS:
        return None  # "Black Friday", "Monday's standup format"
    # Always strictly before today, also for "on <today's weekday>": today has its own word,
    # so "on Wednesday" asked on a Wednesday means last week's.
    back = (ctx.today.weekday() - _WEEKDAYS[m["wd"].lower()] - 1) % 7 + 1
    return _day(ctx.today - timedelta(days=back))


def _r_weekend(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    if m["the"] is not None and not bound and prev not in _WEEKEND_PREPS:
        return None
    monday = ctx.today - timedelta(days=ctx.today.weekday())
    if m["the"] is not None and ctx.today.weekday() >= 5:
        return _Span(_midnight(monday + timedelta(days=5)), None)  # "over the weekend", on one
    return _Span(_midnight(monday - timedelta(days=2)), _midnight(monday))


_EDGE_PARTS = {"start": "early", "beginning": "early", "middle": "mid", "end": "late"}


def _r_month(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    part = m["part"].lower() if m["part"] else _EDGE_PARTS.get((m["edge"] or "").lower())
    anchored = bool(m["year"] or part or m["mod"])
    if not _month_word_ok(m, ctx, prev, bound, anchored):
        return None
    month = _MONTH_NUMBERS[m["month"].lower()]
    if m["year"]:
        return _month_part(int(m["year"]), month, part)
    if m["mod"]:
        # "last May": the latest May before the current month ("last March" in March: a year ago)
        year = ctx.now.year if month < ctx.now.month else ctx.now.year - 1
        return _month_part(year, month, part)
    # "in May": the latest May that has begun, so in February "in May" is last year's (and on
    # March 12 "late March" is last year's too).
    year = ctx.now.year
    span = _month_part(year, month, part)
    if span.since is not None and span.since > ctx.now:
        year -= 1
        span = _month_part(year, month, part)
    return _Span(span.since, span.until, earlier=_month_part(year - 1, month, part))


def _r_month_day(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    if not _month_word_ok(m, ctx, prev, bound, anchored=True):
        return None
    month, day = _MONTH_NUMBERS[m["month"].lower()], int(m["day"])
    if m["year"]:
        return _day(date(int(m["year"]), month, day))
    return _yearless_day(ctx, month, day)


def _r_iso(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    return _day(date(int(m["y"]), int(m["m"]), int(m["d"])))


def _r_iso_month(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    return _month(int(m["y"]), int(m["m"]))


def _r_year(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    year = int(m["year"])
    # A bare number is a year only after a preposition, and never a future one ("in 2048 bytes").
    if (not bound and prev not in _YEAR_PREPS) or year > ctx.now.year:
        return None
    return _year(year)


def _r_recent(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    return _Span(None, None, prefer_recent=True)


def _r_oldest(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    return _Span(None, None, prefer_oldest=True)


def _r_first_window(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    if ctx.first is None:
        return None
    n = _count(m["num"])[1] if m["num"] else 1
    return _Span(ctx.first, _shift(ctx.first, _unit(m["unit"]), n))


def _r_conversation_day(m: re.Match[str], ctx: _Ctx, prev: str, bound: bool) -> _Span | None:
    if ctx.first is None:
        return None
    text = m["n"].lower()
    n = int(text) if text.isdigit() else _NUMBER_WORDS[text]
    if n < 1:
        return None
    return _day(ctx.first.date() + timedelta(days=n - 1))


_MODS = r"(?P<mod>last|this past|past|previous)"
_COUNT_WORDS = "|".join(w for w in _NUMBER_WORDS if len(w) > 2)
_SHIFTERS = _words("last this past previous")
_NUM_STARTS = frozenset([*_NUMBER_WORDS, "#", "couple", "few", "several"])

_ATOMS: tuple[_Atom, ...] = (
    _Atom(_rx(rf"{_NUM} {_UNIT} ago\b"), _NUM_STARTS, _r_ago),
    _Atom(
        _rx(rf"(?:the )?(?P<which>past|last|previous) (?:{_NUM} )?{_UNIT}"),
        _words("the past last previous"),
        _r_rolling,
    ),
    _Atom(
        _rx(r"(?:earlier )?(?:this|the current) (?P<unit>week|month|year)\b"),
        _words("earlier this the"),
        _r_this,
    ),
    _Atom(_rx(r"(?:earlier )?today\b"), frozenset(["earlier", "today"]), _r_today),
    _Atom(
        _rx(r"yesterday(?: (?P<part>morning|afternoon|evening|night))?\b"),
        frozenset(["yesterday"]),
        _r_yesterday,
    ),
    _Atom(
        _rx(r"(?:the )?day before yesterday\b"),
        frozenset(["the", "day"]),
        _r_day_before_yesterday,
    ),
    _Atom(_rx(r"this (?P<part>morning|afternoon|evening)\b"), frozenset(["this"]), _r_this_part),
    _Atom(_rx(r"last night\b"), frozenset(["last"]), _r_last_night),
    _Atom(
        _rx(r"(?:the )?(?P<unit>week|month|year) before last\b"),
        _words("the week month year"),
        _r_before_last,
    ),
    _Atom(_rx(rf"(?:{_MODS} )?{_WEEKDAY}"), _SHIFTERS | frozenset(_WEEKDAYS), _r_weekday),
    _Atom(
        _rx(rf"(?:(?:the )?{_MODS}|(?P<the>the)) weekend\b"),
        _SHIFTERS | frozenset(["the"]),
        _r_weekend,
    ),
    _Atom(
        _rx(
            r"(?:(?P<part>early|mid|late)(?: |-)|(?:the )?(?P<edge>start|beginning|end|middle) of "
            rf"|{_MODS} )?{_MONTH}(?: {_YEAR})?"
        ),
        _SHIFTERS
        | frozenset(_MONTH_NUMBERS)
        | _words("early mid late the start beginning end middle"),
        _r_month,
    ),
    _Atom(
        _rx(rf"{_MONTH}(?:\.)? (?P<day>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,? {_YEAR})?"),
        frozenset(_MONTH_NUMBERS),
        _r_month_day,
    ),
    _Atom(
        _rx(rf"(?:the )?(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?: of)? {_MONTH}(?:,? {_YEAR})?"),
        frozenset(["the", "#"]),
        _r_month_day,
    ),
    _Atom(
        _rx(
            r"(?P<y>(?:19|20)\d\d)(?P<sep>[-/])(?P<m>\d{1,2})(?P=sep)(?P<d>\d{1,2})"
            r"(?:(?:T|\s)\d{1,2}:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?\b"
        ),
        frozenset(["#"]),
        _r_iso,
    ),
    _Atom(
        _rx(r"(?P<y>(?:19|20)\d\d)-(?P<m>0?[1-9]|1[0-2])\b(?![-/.]\d)"),
        frozenset(["#"]),
        _r_iso_month,
    ),
    _Atom(_rx(_YEAR), frozenset(["#"]), _r_year),
    _Atom(
        _rx(
            r"(?:most recent(?:ly)?|recently|recent|lately|latest|newest|(?:the )?last time"
            r"|the other day)\b"
        ),
        _words("most recently recent lately latest newest the last"),
        _r_recent,
    ),
    _Atom(
        _rx(
            r"(?:(?:at|in) the (?:very )?(?:start|beginning|outset)"
            r"(?: of (?:the|this|our) (?:conversation|chat|session|thread|discussion))?"
            rf"(?! of (?:the )?(?:{_MONTH_ALT}|week|month|year|day|last|this|\d))"
            r"|at first|(?:the )?(?:very )?first time|originally|initially|early on|earliest"
            r"|to begin with|from the (?:very )?(?:start|beginning|outset))\b"
        ),
        _words("at in first the very originally initially early earliest to from"),
        _r_oldest,
    ),
    _Atom(
        _rx(rf"(?:in|during|within|over) the (?:very )?first (?:{_NUM} )?{_UNIT}"),
        _words("in during within over"),
        _r_first_window,
    ),
    _Atom(
        _rx(rf"on day (?P<n>\d{{1,3}}|{_COUNT_WORDS})\b"),
        frozenset(["on"]),
        _r_conversation_day,
    ),
)


def _index(atoms: tuple[_Atom, ...]) -> dict[str, tuple[_Atom, ...]]:
    by_start: dict[str, list[_Atom]] = {}
    for atom in atoms:
        for word in atom.starts:
            by_start.setdefault(word, []).append(atom)
    return {word: tuple(found) for word, found in by_start.items()}


_ATOMS_BY_START = _index(_ATOMS)


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def _atom_at(ctx: _Ctx, pos: int, prev: str, bound: bool) -> tuple[_Span, int] | None:
    """The longest phrase starting exactly at pos that resolves, with where it ends."""
    token = _TOKEN_RE.match(ctx.text, pos)
    if token is None:
        return None
    word = token.group().lower()
    best: tuple[_Span, int] | None = None
    for atom in _ATOMS_BY_START.get("#" if word.isdigit() else word, ()):
        m = atom.pattern.match(ctx.text, pos)
        if m is None or (best is not None and m.end() <= best[1]):
            continue
        try:
            span = atom.resolve(m, ctx, prev, bound)
        except (ValueError, OverflowError):
            span = None  # "2024-02-30", "9999 years ago": not a date we can hold
        if span is not None:
            best = (span, m.end())
    return best


def _event_at(ctx: _Ctx, pos: int, extra_stop: frozenset[str]) -> tuple[datetime, int] | None:
    """Locates the event phrase at pos ("the migration") with the caller's locator."""
    if ctx.locate_event is None:
        return None
    words: list[str] = []
    end = pos
    while len(words) < _EVENT_MAX_WORDS:
        wm = _EVENT_WORD_RE.match(ctx.text, end)
        if wm is None:
            break
        word = wm.group(1)
        lowered = word.lower()
        if lowered in _EVENT_STOP or lowered in extra_stop:
            break
        # "after the deploy yesterday": the event ends where a date begins
        found = _atom_at(ctx, wm.start(1), words[-1].lower() if words else "", bound=False)
        if found is not None and found[0].since is not None:
            break
        words.append(word)
        end = wm.end()
    if not words or not (words[0].lower() in _EVENT_OPENERS or words[0][0].isupper()):
        return None
    skip = 0
    while skip < len(words) and words[skip].lower() in _EVENT_FILLER:
        skip += 1
    core = words[skip:]
    if not core or all(w.lower() in _EVENT_VAGUE for w in core):
        return None
    when = ctx.locate_event(" ".join(core))
    return None if when is None else (_as_utc(when), end)


def _make_hint(span: _Span, phrase: str) -> TimeHint | None:
    if span.since is not None and span.until is not None and span.since >= span.until:
        return None
    return TimeHint(span.since, span.until, phrase, span.prefer_recent, span.prefer_oldest)


def _bound_hint(ctx: _Ctx, m: re.Match[str]) -> tuple[TimeHint | None, int]:
    """since / before / after / until X, X a date or a located event; with how far it read."""
    kw = " ".join(m["kw"].lower().split())
    obj = _atom_at(ctx, m.end(), kw.split()[-1], bound=True)
    if obj is not None:
        span, end = obj
        if span.since is None:
            return None, m.start()  # "since recently": let "recently" be read on its own
        if kw == "since":
            since, until = span.since, None
        elif kw in ("before", "prior to", "earlier than"):
            since, until = None, span.since
        elif kw in ("after", "later than"):
            since, until = span.until, None
        else:  # until, till, by, up until: through the end of X
            since, until = None, span.until
        if since is None and until is None:
            return None, end  # "after today", "until today": no bound; don't reread "today"
        return _make_hint(_Span(since, until), ctx.text[m.start() : end]), end
    if kw == "by":
        return None, m.start()  # "by the lead": "by" takes dates only
    event = _event_at(ctx, m.end(), frozenset())
    if event is None:
        return None, m.start()
    when, end = event
    if kw in ("since", "after", "later than"):
        return TimeHint(when, None, ctx.text[m.start() : end]), end
    return TimeHint(None, when + EVENT_INSTANT, ctx.text[m.start() : end]), end


def _side(
    ctx: _Ctx, pos: int, prev: str, extra_stop: frozenset[str]
) -> tuple[_Span, int, bool] | None:
    """One end of a between/from range: a date span, or an event as an instant."""
    obj = _atom_at(ctx, pos, prev, bound=True)
    if obj is not None:
        return (obj[0], obj[1], True) if obj[0].since is not None else None
    event = _event_at(ctx, pos, extra_stop)
    return None if event is None else (_Span(event[0], event[0] + EVENT_INSTANT), event[1], False)


_TO_STOP = _words("to until till through thru")


def _range_hint(ctx: _Ctx, m: re.Match[str]) -> tuple[TimeHint | None, int]:
    """between X and Y / from X to Y: from the earlier start to the later end."""
    kw = m["kw"].lower()
    left = _side(ctx, m.end(), kw, _TO_STOP if kw == "from" else frozenset())
    if left is None:
        return None, m.start()
    sep = (_AND_RE if kw == "between" else _TO_RE).match(ctx.text, left[1])
    if sep is None:
        return None, m.start()
    right = _side(ctx, sep.end(), "and", frozenset())
    # "from the cache to the disk" is not a range: "from" needs at least one real date.
    if right is None or (kw == "from" and not (left[2] or right[2])):
        return None, m.start()
    first, second = left[0], right[0]
    assert first.since is not None and second.since is not None
    if first.since > second.since and first.earlier is not None:
        first = first.earlier  # "between November and February", asked in March
    assert first.since is not None
    since = min(first.since, second.since)
    until = None
    if first.until is not None and second.until is not None:
        until = max(first.until, second.until)
    return _make_hint(_Span(since, until), ctx.text[m.start() : right[1]]), right[1]


def _require_utc(moment: datetime, name: str) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got {moment!r}")
    return moment.astimezone(UTC)


# A clock any conversation's could be, for names_time: the phrases it reads do not depend
# on the date, only the range they name does.
_PROBE_NOW = datetime(2030, 6, 15, 12, tzinfo=UTC)
_PROBE_FIRST = datetime(2000, 1, 1, tzinfo=UTC)


def names_time(query: str) -> bool:
    """Whether query may name a time on some conversation's clock: False means that
    parse_time_hint finds nothing in it on any clock, whatever events it looks up."""
    return (
        parse_time_hint(
            query,
            _PROBE_NOW,
            locate_event=lambda _: _PROBE_NOW - timedelta(days=30),
            first=_PROBE_FIRST,
        )
        is not None
    )


def parse_time_hint(
    query: str,
    now: datetime,
    *,
    locate_event: EventLocator | None = None,
    first: datetime | None = None,
) -> TimeHint | None:
    """Reads the first time expression in query; None when the query names no time.

    Calendar words are read on the conversation's clock in UTC: "last week" is the previous ISO
    week (Monday to Monday), "3 days ago" that calendar day, "in May" the latest May that has
    begun, "last Tuesday" / "on Tuesday" the latest Tuesday strictly before today. "before the
    migration" asks locate_event for "migration" and bounds the range at its answer.

    Args:
        query: The retrieval query, in any case and with any punctuation.
        now: Timestamp of the conversation's newest item (timezone-aware); not wall time, so
            historic conversations read "yesterday" as they would have when live.
        locate_event: Optional lookup of an event phrase ("deployed the cache") to the time it
            happened; without it, or when it returns None, an event bound yields no hint.
        first: Timestamp of the conversation's first item (timezone-aware), for "in the first
            hour" and "on day 2".

    Returns:
        The hint for the first time expression in query, or None if there is none.

    Raises:
        ValueError: now or first is naive.
    """
    now_utc = _require_utc(now, "now")
    first_utc = None if first is None else _require_utc(first, "first")
    if _TRIGGERS.isdisjoint(_WORD_RE.findall(query.lower())) and not _DIGIT_RE.search(query):
        return None
    ctx = _Ctx(query, now_utc, now_utc.date(), first_utc, locate_event)
    prev, prev_start, prev_end = "", 0, -1
    consumed = 0
    for token in _TOKEN_RE.finditer(query):
        pos, word = token.start(), token.group().lower()
        if prev_end >= 0 and not query[prev_end:pos].isspace():
            prev = ""  # "in, May" or "don't": no preposition right before this word
        if pos >= consumed:
            hint, consumed = _hint_at(ctx, pos, word, prev, prev_start)
            if hint is not None:
                return hint
        prev, prev_start, prev_end = word, pos, token.end()
    return None


def _hint_at(
    ctx: _Ctx, pos: int, word: str, prev: str, prev_start: int
) -> tuple[TimeHint | None, int]:
    """The hint starting at the token at pos, and how far the text is spoken for."""
    if word in (
        "since",
        "before",
        "after",
        "until",
        "till",
        "by",
        "prior",
        "earlier",
        "later",
        "up",
    ):
        bound = _BOUND_RE.match(ctx.text, pos)
        if bound is not None:
            hint, consumed = _bound_hint(ctx, bound)
            if hint is not None or consumed > pos:
                return hint, consumed
    elif word in ("between", "from"):
        ranged = _RANGE_RE.match(ctx.text, pos)
        if ranged is not None:
            hint, consumed = _range_hint(ctx, ranged)
            if hint is not None:
                return hint, consumed
    found = _atom_at(ctx, pos, prev, bound=False)
    if found is None:
        return None, pos
    span, end = found
    start = prev_start if prev in _LEAD_PREPS else pos
    possessive = _POSSESSIVE_RE.match(ctx.text, end)
    if possessive is not None:
        end = possessive.end()
    return _make_hint(span, ctx.text[start:end]), end


_SPACE_RE = re.compile(r"\s+")
_SPACE_BEFORE_PUNCT_RE = re.compile(r"\s+([,.;:?!])")
_DANGLING_RE = re.compile(r"[,;:](?=[,.;:?!]|$)|^[,;:.]\s*")


def strip_time_phrase(query: str, hint: TimeHint) -> str:
    """The query without the matched phrase (so lexical/dense search isn't polluted by it).

    Args:
        query: The query hint was read from.
        hint: A hint returned by parse_time_hint for query.

    Returns:
        query with the first occurrence of hint.phrase removed, whitespace collapsed and any
        punctuation the removal left dangling tidied; query unchanged if the phrase is absent.
    """
    at = query.find(hint.phrase) if hint.phrase else -1
    if at < 0:
        return query
    rest = query[:at] + " " + query[at + len(hint.phrase) :]
    rest = _SPACE_RE.sub(" ", rest).strip()
    rest = _SPACE_BEFORE_PUNCT_RE.sub(r"\1", rest)
    return _DANGLING_RE.sub("", rest).strip()
