"""Tests for contextwm.window.importance.detect_flags: positive and negative examples per flag."""

from __future__ import annotations

import pytest
from contextwm.domain.items import Flag
from contextwm.window.importance import detect_flags
from hypothesis import given, settings
from hypothesis import strategies as st

ROLES = ["user", "assistant", "system", "tool", "file", "error"]


@pytest.mark.parametrize(
    ("role", "content"),
    [
        ("tool", "Traceback (most recent call last):\n  File 'x.py', line 1"),
        ("tool", "ValueError: invalid literal for int()"),
        ("assistant", "The build failed on CI."),
        ("tool", "FATAL: connection refused"),
        ("tool", "java.lang.NullPointerException at Main.java:3"),
        ("user", "I keep getting an error when I run it"),
        ("tool", "Segfault in worker 3"),
        ("error", "something unexpected"),  # the error role is always an error
    ],
)
def test_error_detected(role: str, content: str) -> None:
    assert detect_flags(role, content) & Flag.ERROR


@pytest.mark.parametrize(
    "content",
    [
        "All 42 tests passed.",
        "Everything works now, thanks",
        "Let me look at the mirror configuration",
        "errorless",  # a word that merely starts with error
    ],
)
def test_error_not_detected(content: str) -> None:
    assert not detect_flags("assistant", content) & Flag.ERROR


def test_words_ending_in_error_are_not_errors() -> None:
    assert not detect_flags("user", "The new intern is a terror at ping-pong") & Flag.ERROR


@pytest.mark.parametrize(
    "content",
    [
        "Here you go:\n```python\nprint(1)\n```",
        "~~~\nls -la\n~~~",
        "def add(a, b):\n    return a + b",
        "import os\nfrom pathlib import Path",
        "const x = 1;\nlet y = 2;",
        'fn main() {\n    println!("hi");\n}',
        "SELECT * FROM items\nINSERT INTO t VALUES (1);",
    ],
)
def test_code_detected(content: str) -> None:
    assert detect_flags("assistant", content) & Flag.CODE


@pytest.mark.parametrize(
    "content",
    [
        "I will return the book tomorrow.",
        "import os",  # one line of code is not enough
        "We talked about classes and functions in general.",
        "Plain prose.\nMore prose, over two lines.",
    ],
)
def test_code_not_detected(content: str) -> None:
    assert not detect_flags("assistant", content) & Flag.CODE


@pytest.mark.parametrize(
    ("role", "content"),
    [
        ("user", "How do I configure the cache"),  # question word, no question mark
        ("user", "is it safe to delete the index"),
        ("user", "Where is the config?"),
        ("assistant", "Did that fix it?"),
        ("assistant", "Which one?\nThe first or the second."),
    ],
)
def test_question_detected(role: str, content: str) -> None:
    assert detect_flags(role, content) & Flag.QUESTION


@pytest.mark.parametrize(
    ("role", "content"),
    [
        ("user", "Thanks, that is all."),
        ("user", "Howard said the build is green."),  # starts with "how" but not the word
        ("assistant", "How it works: the indexer embeds items in batches."),
        ("tool", "what?"),  # only dialog roles ask questions
        ("system", "Why: see the design notes?"),
        ("user", "Why " + "so " * 200),  # long messages need a question mark
    ],
)
def test_question_not_detected(role: str, content: str) -> None:
    assert not detect_flags(role, content) & Flag.QUESTION


@pytest.mark.parametrize(
    "content",
    [
        "Fixed it by pinning numpy.",
        "The root cause was a stale lock file.",
        "Here is a workaround: set HF_HUB_OFFLINE=1.",
        "That worked after the restart.",
        "It now works on both machines.",
    ],
)
def test_solution_detected(content: str) -> None:
    assert detect_flags("assistant", content) & Flag.SOLUTION


@pytest.mark.parametrize(
    ("role", "content"),
    [
        ("assistant", "I am not sure yet, let me look."),
        ("user", "I fixed it myself."),  # only the assistant proposes solutions
        ("tool", "resolved 3 hosts"),
        ("assistant", "The prefix is unresolved."),
    ],
)
def test_solution_not_detected(role: str, content: str) -> None:
    assert not detect_flags(role, content) & Flag.SOLUTION


def test_flags_combine() -> None:
    flags = detect_flags(
        "assistant", "The root cause was a KeyError:\n```\nd.get(k)\n```\nDoes it work now?"
    )
    assert flags == Flag.ERROR | Flag.CODE | Flag.SOLUTION | Flag.QUESTION


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ROLES), st.text(max_size=300))
def test_never_pins_and_only_dialog_roles_ask_or_solve(role: str, content: str) -> None:
    flags = detect_flags(role, content)
    assert not flags & Flag.PINNED
    if role not in {"user", "assistant"}:
        assert not flags & (Flag.QUESTION | Flag.SOLUTION)
    if role != "assistant":
        assert not flags & Flag.SOLUTION
    if role == "error":
        assert flags & Flag.ERROR
