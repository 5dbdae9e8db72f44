"""The literal strings every match of a regex must contain, found from its parse tree.

A search over many files spends its time where the regex engine cannot skip ahead: `re` has
no inner-literal optimisation, so `\\w+_count` tries `\\w+` at every position. When every
match must contain one of a few strings (`_count` here), a plain string search finds the
few lines worth running the regex on, as ripgrep does.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

# The longest such string set used, and the shortest string in it worth searching for:
# a one- or two-character string is found on most lines and saves nothing.
MAX_ALTERNATIVES = 64
MIN_LENGTH = 3

# The parser of `re` itself (re._parser, Python 3.11+): private, so it is loaded once, and a
# Python without it, or a pattern it reads differently, simply gets no literals.
try:
    _parser: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - every supported Python has it
    _parser = None


def required_literals(source: str, flags: int) -> tuple[str, ...]:
    """Strings one of which occurs in every match of the regex; () when none is known.

    The strings are as written: a case-insensitive pattern needs a case-insensitive search
    for them. Only what the regex spells out counts: runs of literal characters (across
    anchors such as `^` and `\\b`, which take no characters), small character sets like
    `[=+]`, and groups and alternations made of those; a run is cut at anything else.

    Args:
        source: the regex, in Python `re` syntax.
        flags: the flags it is compiled with (re.IGNORECASE and the like).
    """
    if _parser is None:
        return ()
    try:
        parsed = _parser.parse(source, flags)
        factors = _required(list(parsed))
    except Exception:  # the private parser's own errors and shapes: no literals, no harm
        return ()
    usable = [f for f in factors if f and min(map(len, f)) >= MIN_LENGTH]
    if not usable:
        return ()
    best = max(usable, key=lambda f: (min(map(len, f)), -len(f)))
    return tuple(sorted(best))


def _required(items: Iterable[tuple[Any, Any]]) -> list[set[str]]:
    """Sets of strings, each set holding one string every match of `items` contains."""
    c = _parser
    factors: list[set[str]] = []
    current = {""}
    for op, av in items:
        exact = _exact([(op, av)])
        if exact is not None:
            grown = {a + b for a in current for b in exact}
            if len(grown) <= MAX_ALTERNATIVES:
                current = grown
                continue
            exact = None
        if op is c.AT:  # ^ $ \b \A: zero width, so the strings on both sides stay adjacent
            continue
        factors.append(current)
        current = {""}
        if op is c.SUBPATTERN and not av[1] and not av[2]:  # a plain group: its own parts
            factors += _required(av[3])
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[0] >= 1:  # repeated at least once
            factors += _required(av[2])
    factors.append(current)
    return [f for f in factors if "" not in f]


def _exact(items: Iterable[tuple[Any, Any]]) -> set[str] | None:
    """Every string `items` can match, when it is made only of literals, small sets of
    literal characters, plain groups and alternations of those; None otherwise."""
    c = _parser
    out = {""}
    for op, av in items:
        if op is c.LITERAL:
            pieces = {chr(av)}
        elif op is c.IN and all(o is c.LITERAL for o, _ in av):
            pieces = {chr(v) for _, v in av}
        elif op is c.SUBPATTERN and not av[1] and not av[2]:  # no scoped flags
            inner = _exact(av[3])
            if inner is None:
                return None
            pieces = inner
        elif op is c.BRANCH:
            pieces = set()
            for alternative in av[1]:
                inner = _exact(alternative)
                if inner is None:
                    return None
                pieces |= inner
        else:
            return None
        out = {a + b for a in out for b in pieces}
        if len(out) > MAX_ALTERNATIVES:
            return None
    return out
