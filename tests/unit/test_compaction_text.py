"""Tests for contextwm.llm_context.compaction_text: summary request, extractive summary, marker."""

from __future__ import annotations

import re

import pytest
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.domain.facts import Fact, FactKind
from contextwm.domain.items import Flag, Item, ItemState
from contextwm.llm_context.compaction_text import (
    EXTRACTIVE_LABEL,
    SUMMARY_REQUEST,
    extractive_summary,
    marker_text,
    summary_request,
)
from contextwm.llm_context.ledger import Ledger
from hypothesis import given, settings
from hypothesis import strategies as st

COUNTER = token_counter("cl100k_base")
BIG = 100_000
LEDGER = Ledger([Fact(FactKind.INSTRUCTION, "Never push to main.", 1)]).render(COUNTER, 1000)


def item(
    seq: int,
    role: str,
    content: str,
    flags: Flag = Flag.NONE,
    kind: str = "message",
) -> Item:
    return Item(
        conversation_id="c",
        seq=seq,
        role=role,
        content=content,
        timestamp=0.0,
        token_count=COUNTER.count(content),
        flags=flags,
        metadata={},
        file=None,
        state=ItemState.WINDOW,
        kind=kind,
    )


def sections(text: str) -> list[str]:
    return re.findall(r"^## .+$", text, flags=re.MULTILINE)


# The summary request


def test_summary_request_asks_for_the_four_parts_in_its_own_tag() -> None:
    assert SUMMARY_REQUEST.startswith("<context-compaction-request>\n")
    assert SUMMARY_REQUEST.endswith("\n</context-compaction-request>")
    text = SUMMARY_REQUEST.lower()
    positions = [text.index(p) for p in ("original task", "progress made", "working memory")]
    positions.append(text.index("next steps"))
    assert positions == sorted(positions)
    for phrase in (
        "files created",
        "tools",
        "problems",
        "current state",
        "structure",
        "dependencies",
        "conventions",
        "decisions",
        "pending",
        "known issues",
        "replace the conversation history",
        "paths",
        "commands",
        "snippets",
        "do not call any tools",
        "plain text",
        "verbatim",
    ):
        assert phrase in text, phrase


def test_summary_request_is_in_our_own_words() -> None:
    """None of the phrases of the prompt the summary request was modelled on."""
    assert "system-context-management" not in SUMMARY_REQUEST
    assert "Be thorough and specific" not in SUMMARY_REQUEST
    assert "What have you accomplished so far?" not in SUMMARY_REQUEST


def test_summary_request_appends_the_ledger_after_a_blank_line() -> None:
    assert summary_request(LEDGER) == SUMMARY_REQUEST + "\n\n" + LEDGER
    assert summary_request("").endswith("</context-compaction-request>")
    assert summary_request("") == SUMMARY_REQUEST


# The marker


def test_marker_shape() -> None:
    text = marker_text(3, "  The summary.\nSecond line.  ", LEDGER, extractive=False)
    lines = text.splitlines()
    assert lines[0] == '<context-compaction number="3">'
    assert lines[1:3] == ["The summary.", "Second line."]
    assert lines[3] == ""
    assert "\n".join(lines[4:-2]) == LEDGER
    assert lines[-2] == "</context-compaction>"
    last = lines[-1].lower()
    assert "compacted" in last and "archived" in last and "search" in last
    assert "continue" in last and "summary above" in last


def test_marker_extractive_and_without_ledger() -> None:
    text = marker_text(1, "S", "", extractive=True)
    assert text.splitlines()[:3] == [
        '<context-compaction number="1" extractive="true">',
        "S",
        "</context-compaction>",
    ]
    assert len(text.splitlines()) == 4


# The extractive summary


def conversation() -> list[Item]:
    return [
        item(1, "user", "Build a CLI that converts CSV to JSON."),
        item(2, "assistant", "Sure, starting with the parser."),
        item(3, "user", "Use only the standard library."),
        item(4, "tool", "Traceback ...\nValueError: bad row", Flag.ERROR),
        item(5, "assistant", "Fixed it by skipping empty rows.", Flag.SOLUTION),
        item(6, "user", "Add a --pretty flag."),
        item(7, "assistant", "Keep the output stable.", Flag.PINNED),
        item(8, "user", "Now write tests."),
        item(9, "user", "And a README."),
    ]


def test_extractive_sections_and_quotes() -> None:
    text = extractive_summary(conversation(), COUNTER, BIG)
    assert text.splitlines()[0] == EXTRACTIVE_LABEL
    assert sections(text) == [
        "## First user request",
        "## Pinned items",
        "## Errors and solutions",
        "## Latest user requests",
    ]
    assert "[seq 1, user] Build a CLI that converts CSV to JSON." in text
    assert "[seq 7, assistant] Keep the output stable." in text
    assert "[seq 4, tool] Traceback ...\nValueError: bad row" in text
    assert "[seq 5, assistant] Fixed it by skipping empty rows." in text
    latest = text.split("## Latest user requests\n")[1]
    assert latest == (
        "[seq 6, user] Add a --pretty flag.\n\n[seq 8, user] Now write tests.\n\n"
        "[seq 9, user] And a README."
    )
    assert "seq 3," not in text and "seq 2," not in text  # neither among the last three nor flagged


def test_latest_requests_never_repeat_the_first() -> None:
    two = extractive_summary([item(1, "user", "A"), item(2, "user", "B")], COUNTER, BIG)
    assert two.count("[seq 1, user] A") == 1
    assert two.split("## Latest user requests\n")[1] == "[seq 2, user] B"
    one = extractive_summary([item(1, "user", "A")], COUNTER, BIG)
    assert sections(one) == ["## First user request"]


def test_an_item_is_quoted_once() -> None:
    items = [
        item(1, "user", "First", Flag.PINNED | Flag.ERROR),
        item(2, "user", "Second", Flag.PINNED),
        item(3, "assistant", "Solved", Flag.PINNED | Flag.SOLUTION),
    ]
    text = extractive_summary(items, COUNTER, BIG)
    for seq in (1, 2, 3):
        assert text.count(f"[seq {seq},") == 1
    assert sections(text) == ["## First user request", "## Pinned items", "## Latest user requests"]


def test_earlier_summary_is_the_latest_marker_unwrapped() -> None:
    old = marker_text(1, "Old summary one.", "", extractive=False)
    newer = marker_text(2, "The task: a CSV tool.\nDone: parser.", LEDGER, extractive=True)
    items = [
        item(1, "system", old, kind="compaction"),
        item(5, "system", newer, kind="compaction"),
        item(6, "user", "Continue please."),
    ]
    text = extractive_summary(items, COUNTER, BIG)
    assert sections(text) == ["## Earlier summary", "## First user request"]
    body = text.split("## Earlier summary\n")[1].split("\n\n## ")[0]
    assert body == "The task: a CSV tool.\nDone: parser."  # no tags, no old ledger


def test_earlier_summary_that_is_plain_text() -> None:
    items = [item(1, "system", "  Plain summary.  ", kind="compaction")]
    text = extractive_summary(items, COUNTER, BIG)
    assert text == EXTRACTIVE_LABEL + "\n\n## Earlier summary\nPlain summary."


def test_long_items_keep_start_and_end() -> None:
    content = "START " + "word " * 2000 + " END"
    text = extractive_summary([item(1, "user", content)], COUNTER, BIG)
    quote = text.split("## First user request\n")[1]
    assert quote.startswith("[seq 1, user] START word")
    assert quote.endswith("word  END")
    assert "…" in quote
    assert len(quote) == len("[seq 1, user] ") + 1200
    shorter = extractive_summary([item(1, "user", content)], COUNTER, BIG, clip_chars=300)
    assert len(shorter.split("## First user request\n")[1]) == len("[seq 1, user] ") + 300


def test_label_only_or_empty() -> None:
    label = COUNTER.count(EXTRACTIVE_LABEL)
    assert extractive_summary(conversation(), COUNTER, label - 1) == ""
    assert extractive_summary(conversation(), COUNTER, label) == EXTRACTIVE_LABEL
    assert extractive_summary([], COUNTER, BIG) == EXTRACTIVE_LABEL
    assert extractive_summary([item(1, "tool", "ok")], COUNTER, BIG) == EXTRACTIVE_LABEL


def test_items_drop_by_priority() -> None:
    # One entry per kind; each budget step lets one more entry in, in priority order.
    items = [
        item(1, "system", "Earlier summary text.", kind="compaction"),
        item(2, "user", "First request."),
        item(3, "assistant", "Pinned note.", Flag.PINNED),
        item(4, "tool", "KeyError: 'x'", Flag.ERROR),
        item(5, "user", "Latest request."),
    ]
    order = ["Latest request.", "First request.", "Pinned note.", "Earlier summary", "KeyError"]
    full = extractive_summary(items, COUNTER, BIG)
    budgets = sorted({COUNTER.count(extractive_summary(items, COUNTER, b)) for b in range(200)})
    kept_counts = []
    for budget in budgets:
        text = extractive_summary(items, COUNTER, budget)
        present = [p in text for p in order]
        assert present == sorted(present, reverse=True), (budget, text)  # a priority prefix
        kept_counts.append(sum(present))
    assert kept_counts[-1] == 5 and extractive_summary(items, COUNTER, budgets[-1]) == full
    assert set(kept_counts) == {0, 1, 2, 3, 4, 5}


@pytest.mark.parametrize("flag", [Flag.ERROR, Flag.SOLUTION, Flag.PINNED])
def test_most_recent_flagged_items_win(flag: Flag) -> None:
    errors = [item(i, "tool", f"Error number {i}: " + "x " * 40, flag) for i in range(1, 9)]
    full = extractive_summary(errors, COUNTER, BIG)
    text = extractive_summary(errors, COUNTER, COUNTER.count(full) // 2)
    kept = [i for i in range(1, 9) if f"Error number {i}:" in text]
    assert kept and len(kept) < 8
    assert kept == list(range(9 - len(kept), 9))
    # Shown oldest first, in seq order, whatever the priority.
    assert text.index(f"Error number {kept[0]}:") < text.index(f"Error number {kept[-1]}:")


def test_latest_request_is_clipped_harder_when_it_cannot_fit_whole() -> None:
    request = "Please refactor the module. " + "detail " * 1000 + "Thanks."
    items = [item(1, "user", "Start."), item(2, "user", request)]
    budget = COUNTER.count(EXTRACTIVE_LABEL) + 60
    text = extractive_summary(items, COUNTER, budget)
    assert COUNTER.count(text) <= budget
    assert "[seq 2, user] Please refactor" in text and "Thanks." in text
    assert "…" in text


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["user", "assistant", "tool", "system", "error"]),
            st.text(max_size=400),
            st.sampled_from([Flag.NONE, Flag.PINNED, Flag.ERROR, Flag.SOLUTION, Flag.CODE]),
            st.sampled_from(["message", "message", "compaction"]),
        ),
        max_size=12,
    ),
    st.integers(0, 600),
)
def test_extractive_budget(rows: list[tuple[str, str, Flag, str]], max_tokens: int) -> None:
    items = [item(i, role, text, flags, kind) for i, (role, text, flags, kind) in enumerate(rows)]
    text = extractive_summary(items, COUNTER, max_tokens)
    assert COUNTER.count(text) <= max_tokens
    if max_tokens < COUNTER.count(EXTRACTIVE_LABEL):
        assert text == ""
    else:
        assert text.startswith(EXTRACTIVE_LABEL)
    users = [i for i in items if i.role == "user" and i.kind == "message" and i.content.strip()]
    roomy = extractive_summary(items, COUNTER, BIG)
    if users:
        # With room, the newest user request is always quoted.
        assert f"[seq {users[-1].seq}, user] " in roomy


@pytest.mark.parametrize("budget", [40, 80, 160])
def test_tight_budgets_keep_the_newest_request_first(budget: int) -> None:
    text = extractive_summary(conversation(), COUNTER, budget)
    assert COUNTER.count(text) <= budget
    if "[seq" in text:
        assert "[seq 9, user] And a README." in text
