"""Tests for contextwm.llm_context.ledger: fact extraction, deduplication, the budgeted render."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.domain.facts import Fact, FactKind
from contextwm.domain.items import FileRef, Flag, Item, ItemState
from contextwm.llm_context.ledger import LEDGER_HEADING, Ledger, extract_facts
from hypothesis import given, settings
from hypothesis import strategies as st

COUNTER = token_counter("cl100k_base")
K = FactKind


def item(
    content: str = "",
    *,
    role: str = "user",
    seq: int = 1,
    flags: Flag = Flag.NONE,
    metadata: Mapping[str, str] | None = None,
    file: FileRef | None = None,
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
        metadata=metadata or {},
        file=file,
        state=ItemState.WINDOW,
        kind=kind,
    )


def of_kind(facts: list[Fact], kind: FactKind) -> list[Fact]:
    return [f for f in facts if f.kind is kind]


class CountingCounter:
    """The real counter, counting how often it is asked."""

    def __init__(self) -> None:
        self.calls = 0

    @property
    def encoding(self) -> str:
        return COUNTER.encoding

    def count(self, text: str) -> int:
        self.calls += 1
        return COUNTER.count(text)


# Files


@pytest.mark.parametrize(
    ("kind", "expected"), [("read", K.FILE_READ), ("write", K.FILE_WRITE), ("mention", None)]
)
def test_file_ref_kinds(kind: str, expected: FactKind | None) -> None:
    facts = extract_facts(item("body", role="file", seq=4, file=FileRef("src/a.py", kind)))
    files = [f for f in facts if f.kind in (K.FILE_READ, K.FILE_WRITE)]
    assert files == ([Fact(expected, "src/a.py", 4)] if expected else [])


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"path": "a.py", "tool": "read_file"}, K.FILE_READ),
        ({"path": "a.py", "tool": "view"}, K.FILE_READ),
        ({"file": "a.py", "tool": "cat"}, K.FILE_READ),
        ({"path": "a.py", "tool_name": "OpenFile"}, K.FILE_READ),
        ({"path": "a.py", "tool": "write_file"}, K.FILE_WRITE),
        ({"path": "a.py", "tool": "str_replace_editor"}, K.FILE_WRITE),
        ({"path": "a.py", "tool_name": "create_file"}, K.FILE_WRITE),  # not read for its "cat"
        ({"file": "a.py", "tool": "apply_patch"}, K.FILE_WRITE),
        ({"path": "a.py", "tool": "Edit"}, K.FILE_WRITE),
    ],
)
def test_file_from_metadata(metadata: dict[str, str], expected: FactKind) -> None:
    assert extract_facts(item("ok", role="tool", metadata=metadata)) == [Fact(expected, "a.py", 1)]


@pytest.mark.parametrize(
    "metadata",
    [
        {"path": "a.py", "tool": "grep"},  # neither a read nor a write tool
        {"path": "a.py"},  # no tool
        {"tool": "read_file"},  # no path
        {"path": "  ", "tool": "read_file"},
    ],
)
def test_no_file_from_metadata(metadata: dict[str, str]) -> None:
    assert extract_facts(item("ok", role="tool", metadata=metadata)) == []


def test_file_ref_and_metadata_of_the_same_read_give_one_fact() -> None:
    it = item(
        "x", role="tool", file=FileRef("a.py", "read"), metadata={"path": "a.py", "tool": "read"}
    )
    assert extract_facts(it) == [Fact(K.FILE_READ, "a.py", 1)]


# Commands


def test_command_from_metadata_with_exit_code() -> None:
    it = item("ok", role="tool", seq=3, metadata={"command": "make test", "exit_code": "2"})
    assert extract_facts(it) == [Fact(K.COMMAND, "make test", 3, "exit 2")]


@pytest.mark.parametrize(
    ("role", "content", "flags", "outcome"),
    [
        ("tool", "$ pytest -x\n3 passed\nExit code: 0", Flag.NONE, "exit 0"),
        ("assistant", "\n\n$ npm run build\nexit status 1", Flag.NONE, "exit 1"),
        ("tool", "$ cargo build\nerror[E0308]: mismatched types", Flag.ERROR, "failed"),
        ("tool", "$ ls -la\nREADME.md", Flag.NONE, ""),
        ("tool", "  $ ls  \nREADME.md", Flag.NONE, ""),
    ],
)
def test_command_from_dollar_line(role: str, content: str, flags: Flag, outcome: str) -> None:
    commands = of_kind(extract_facts(item(content, role=role, flags=flags)), K.COMMAND)
    first = content.strip().splitlines()[0].strip()
    assert commands == [Fact(K.COMMAND, first[2:].strip(), 1, outcome)]


def test_exit_code_metadata_wins_over_content_and_flag() -> None:
    it = item(
        "$ ./run.sh\nexit code 7",
        role="tool",
        flags=Flag.ERROR,
        metadata={"command": "./run.sh", "exit_code": "0"},
    )
    assert of_kind(extract_facts(it), K.COMMAND) == [Fact(K.COMMAND, "./run.sh", 1, "exit 0")]


def test_metadata_command_takes_its_outcome_from_the_content() -> None:
    it = item("done, exit status=3", role="tool", metadata={"command": "deploy"})
    assert extract_facts(it) == [Fact(K.COMMAND, "deploy", 1, "exit 3")]


@pytest.mark.parametrize(
    ("role", "content"),
    [
        ("user", "$ rm -rf build"),  # only tool and assistant output is read for commands
        ("system", "$ rm -rf build"),
        ("tool", "Output:\n$ ls"),  # not the first non-empty line
        ("tool", "$ls"),  # no space after the prompt
        ("tool", "$ "),  # a prompt with no command
        ("assistant", "It costs $ 5 per month"),
    ],
)
def test_no_command(role: str, content: str) -> None:
    assert of_kind(extract_facts(item(content, role=role)), K.COMMAND) == []


# Errors


def test_traceback_gives_its_exception_line() -> None:
    content = (
        "running...\nTraceback (most recent call last):\n"
        '  File "app.py", line 3, in <module>\n    raise Error("inner")\n'
        "ValueError: invalid literal for int() with base 10: 'x'\n"
    )
    facts = extract_facts(item(content, role="tool", flags=Flag.ERROR, seq=9))
    assert facts == [
        Fact(K.ERROR, "ValueError: invalid literal for int() with base 10: 'x'", 9),
    ]


def test_chained_traceback_gives_the_last_exception() -> None:
    content = (
        "Traceback (most recent call last):\n  File 'a.py', line 1\nKeyError: 'k'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n  File 'a.py', line 4\nRuntimeError: lookup failed"
    )
    facts = extract_facts(item(content, role="tool", flags=Flag.ERROR))
    assert [f.text for f in facts] == ["RuntimeError: lookup failed"]


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (
            "collected 3 items\n\nE   AssertionError: 1 != 2\nFAILED t.py",
            "E   AssertionError: 1 != 2",
        ),
        ("step 1 ok\nFAILED tests/test_x.py::test_y", "FAILED tests/test_x.py::test_y"),
        ("Compiling\nfatal: not a git repository", "fatal: not a git repository"),
        ("starting\ngoroutine 1 [running]:\npanic: runtime error", "panic: runtime error"),
        ("npm\nnpm error code E404", "npm error code E404"),
        ("\n\n  it went wrong somehow  \nsecond line", "it went wrong somehow"),  # no error word
    ],
)
def test_error_line(content: str, line: str) -> None:
    facts = extract_facts(item(content, role="error", flags=Flag.ERROR))
    assert facts == [Fact(K.ERROR, line, 1)]


def test_long_error_line_is_cut() -> None:
    facts = extract_facts(item("IOError: " + "x" * 500, role="tool", flags=Flag.ERROR))
    assert len(facts[0].text) == 300
    assert facts[0].text.startswith("IOError: xxx")
    assert facts[0].text.endswith("x…")


@pytest.mark.parametrize(
    ("role", "flags"),
    [("user", Flag.ERROR), ("tool", Flag.NONE), ("assistant", Flag.SOLUTION)],
)
def test_no_error_fact(role: str, flags: Flag) -> None:
    facts = extract_facts(item("ValueError: bad", role=role, flags=flags))
    assert of_kind(facts, K.ERROR) == []


# Instructions


@pytest.mark.parametrize(
    "content",
    [
        "Always run the tests with -x.",
        "Never push to main",
        "Don't touch the migrations folder",
        "Don’t touch the migrations folder",
        "From now on use pnpm instead of npm",
        "You must not change the public API.",
        "Make sure the linter passes",
        "Remember to update the changelog",
        "Avoid global state in the handlers.",
        "I prefer small commits",
        "Please use type hints everywhere",
        "Only use the standard library here",
        "Stop adding print statements",
        "Keep the functions short",
        "Please keep answers short",
        "Important: the staging database is shared",
        "NOTE: tests need Docker",
        "**Important:** the API key rotates daily",
        "do not rename the files",
    ],
)
def test_instruction_detected(content: str) -> None:
    assert extract_facts(item(content)) == [Fact(K.INSTRUCTION, content, 1)]


@pytest.mark.parametrize(
    "content",
    [
        "What does this function do?",
        "Thanks, looks good",
        "The build must have failed?",
        "Should I always use the cache?",
        "I keep getting a timeout",  # "keep" counts only at the start
        "The server won't stop when I press Ctrl-C",  # so does "stop"
        "It was nevertheless slow",  # "never" only as a word
        "Let me note this down: it works",  # "note:" only as a prefix
        "The alwaysOn flag is set",
    ],
)
def test_instruction_not_detected(content: str) -> None:
    assert extract_facts(item(content)) == []


def test_instructions_are_the_matching_sentences_verbatim() -> None:
    content = (
        "Thanks for the fix! Now please look at the parser. Never use regex for the "
        "nested parts, it breaks on quotes? Is that clear? From now on, ALWAYS add a test."
    )
    facts = extract_facts(item(content, seq=5))
    assert [f.text for f in facts] == ["From now on, ALWAYS add a test."]
    assert all(f.seq == 5 and f.kind is K.INSTRUCTION for f in facts)


def test_sentences_split_at_line_ends_and_bullets_stay_whole() -> None:
    content = (
        "Here are the rules\n"
        "- never commit secrets. They leak\n"
        "* Keep it simple\n"
        "2. Always write docstrings. Short ones.\n"
        "Use ruff\nand always format"
    )
    texts = [f.text for f in extract_facts(item(content))]
    assert texts == [
        "never commit secrets. They leak",
        "Keep it simple",
        "Always write docstrings. Short ones.",
        "and always format",
    ]


def test_long_instruction_is_cut_at_1000_characters() -> None:
    sentence = "Always " + "keep going " * 200
    facts = extract_facts(item(sentence))
    assert len(facts[0].text) == 1000
    assert facts[0].text == sentence.strip()[:999] + "…"


@pytest.mark.parametrize("role", ["assistant", "tool", "system", "file", "error"])
def test_only_users_give_instructions(role: str) -> None:
    assert of_kind(extract_facts(item("Always run the tests.", role=role)), K.INSTRUCTION) == []


def test_compaction_marker_gives_no_facts() -> None:
    content = "## Facts recorded by contextwm\n- Always run the tests.\n$ ls\nValueError: x"
    assert extract_facts(item(content, kind="compaction", flags=Flag.ERROR)) == []


def test_one_item_gives_several_kinds() -> None:
    it = item(
        "$ python app.py\nTraceback (most recent call last):\n  File 'app.py'\nOSError: disk",
        role="tool",
        seq=2,
        flags=Flag.ERROR,
        metadata={"path": "app.py", "tool": "run_and_read"},
    )
    assert extract_facts(it) == [
        Fact(K.FILE_READ, "app.py", 2),
        Fact(K.COMMAND, "python app.py", 2, "failed"),
        Fact(K.ERROR, "OSError: disk", 2),
    ]


# Ledger: deduplication and drop_after


def test_instructions_dedup_keeps_the_first_occurrence() -> None:
    ledger = Ledger([Fact(K.INSTRUCTION, "Never push", 5), Fact(K.INSTRUCTION, "Use pnpm", 3)])
    ledger.add([Fact(K.INSTRUCTION, "Never push", 9), Fact(K.INSTRUCTION, "Never push", 2)])
    assert ledger.facts() == [
        Fact(K.INSTRUCTION, "Never push", 2),
        Fact(K.INSTRUCTION, "Use pnpm", 3),
    ]


def test_near_identical_instructions_both_stay() -> None:
    ledger = Ledger([Fact(K.INSTRUCTION, "Never push", 1), Fact(K.INSTRUCTION, "Never push.", 2)])
    assert len(ledger.facts()) == 2


def test_files_dedup_by_kind_and_path_keeping_the_latest() -> None:
    ledger = Ledger(
        [
            Fact(K.FILE_READ, "a.py", 1),
            Fact(K.FILE_WRITE, "a.py", 2),
            Fact(K.FILE_READ, "a.py", 6),
            Fact(K.FILE_READ, "b.py", 4),
        ]
    )
    assert ledger.facts() == [
        Fact(K.FILE_WRITE, "a.py", 2),
        Fact(K.FILE_READ, "b.py", 4),
        Fact(K.FILE_READ, "a.py", 6),
    ]


def test_commands_and_errors_dedup_keeping_the_latest() -> None:
    ledger = Ledger()
    ledger.add([Fact(K.COMMAND, "make", 7, "exit 0"), Fact(K.ERROR, "E: x", 8)])
    ledger.add([Fact(K.COMMAND, "make", 3, "exit 2"), Fact(K.ERROR, "E: x", 1)])  # older, late
    ledger.add([Fact(K.COMMAND, "make test", 5, "exit 1")])
    assert ledger.facts() == [
        Fact(K.COMMAND, "make test", 5, "exit 1"),
        Fact(K.COMMAND, "make", 7, "exit 0"),
        Fact(K.ERROR, "E: x", 8),
    ]


def test_facts_is_a_copy() -> None:
    ledger = Ledger([Fact(K.COMMAND, "ls", 1)])
    ledger.facts().clear()
    assert ledger.facts() == [Fact(K.COMMAND, "ls", 1)]


def test_drop_after_forgets_later_facts_and_restores_older_outcomes() -> None:
    ledger = Ledger(
        [
            Fact(K.INSTRUCTION, "Never push", 1),
            Fact(K.COMMAND, "make", 2, "exit 2"),
            Fact(K.COMMAND, "make", 6, "exit 0"),
            Fact(K.INSTRUCTION, "Use pnpm", 7),
        ]
    )
    assert ledger.facts()[1] == Fact(K.COMMAND, "make", 6, "exit 0")  # warms the cached view
    ledger.drop_after(4)
    assert ledger.facts() == [
        Fact(K.INSTRUCTION, "Never push", 1),
        Fact(K.COMMAND, "make", 2, "exit 2"),
    ]
    ledger.drop_after(0)
    assert ledger.facts() == []


# Ledger.render


def test_render_layout() -> None:
    ledger = Ledger(
        [
            Fact(K.ERROR, "ValueError: x", 6),
            Fact(K.INSTRUCTION, "Always run the tests with -x.", 1),
            Fact(K.FILE_READ, "src/a.py", 2),
            Fact(K.FILE_WRITE, "src/b.py", 3),
            Fact(K.COMMAND, "pytest -x", 4, "exit 1"),
            Fact(K.COMMAND, "echo `date`", 5),
            Fact(K.FILE_READ, "README.md", 7),
        ]
    )
    assert ledger.render(COUNTER, 10_000) == (
        "## Facts recorded by contextwm\n"
        "### User instructions (verbatim)\n- Always run the tests with -x.\n"
        "### Files read\n- src/a.py\n- README.md\n"
        "### Files written\n- src/b.py\n"
        "### Commands\n- `pytest -x` -> exit 1\n- `` echo `date` ``\n"
        "### Errors\n- ValueError: x"
    )


def test_render_leaves_out_empty_sections() -> None:
    text = Ledger([Fact(K.COMMAND, "ls", 1, "exit 0")]).render(COUNTER, 1000)
    assert text == "## Facts recorded by contextwm\n### Commands\n- `ls` -> exit 0"


def test_render_keeps_a_multiline_command_on_one_line() -> None:
    text = Ledger([Fact(K.COMMAND, "cat <<EOF\nhello\nEOF", 1)]).render(COUNTER, 1000)
    assert text.splitlines()[-1] == "- `cat <<EOF ↵ hello ↵ EOF`"


@pytest.mark.parametrize("max_tokens", [-1, 0, 3, 8])
def test_render_empty_when_heading_and_one_fact_do_not_fit(max_tokens: int) -> None:
    assert Ledger([Fact(K.INSTRUCTION, "Never push to main", 1)]).render(COUNTER, max_tokens) == ""


def test_render_of_an_empty_ledger_is_empty() -> None:
    assert Ledger().render(COUNTER, 10_000) == ""


def test_render_drops_the_oldest_facts_of_any_kind_first_and_instructions_last() -> None:
    facts = [
        Fact(K.INSTRUCTION, "Always run the tests with -x.", 1),
        Fact(K.COMMAND, "make one", 2, "exit 0"),
        Fact(K.ERROR, "KeyError: 'a'", 3),
        Fact(K.FILE_READ, "src/a.py", 4),
        Fact(K.COMMAND, "make two", 5, "exit 1"),
        Fact(K.INSTRUCTION, "Never push to main.", 6),
    ]
    ledger = Ledger(facts)
    full = ledger.render(COUNTER, 10_000)
    one_less = ledger.render(COUNTER, COUNTER.count(full) - 1)
    assert "make one" not in one_less and "make two" in one_less and "KeyError" in one_less
    # The next oldest, the error, goes before the newer file and command.
    no_error = ledger.render(COUNTER, COUNTER.count(one_less) - 1)
    assert "KeyError" not in no_error and "src/a.py" in no_error and "make two" in no_error
    only_instructions = (
        "## Facts recorded by contextwm\n### User instructions (verbatim)\n"
        "- Always run the tests with -x.\n- Never push to main."
    )
    assert ledger.render(COUNTER, COUNTER.count(only_instructions)) == only_instructions
    last = ledger.render(COUNTER, COUNTER.count(only_instructions) - 1)
    assert "Always run" not in last and last.endswith("- Never push to main.")


def test_render_counts_each_line_about_once() -> None:
    facts = [Fact(K.COMMAND, f"make target{i}", i, "exit 0") for i in range(3000)]
    facts += [Fact(K.INSTRUCTION, f"Always keep rule {i}.", 3000 + i) for i in range(50)]
    counter = CountingCounter()
    text = Ledger(facts).render(counter, 500)
    assert 0 < COUNTER.count(text) <= 500
    assert "Always keep rule 49." in text
    assert counter.calls < len(facts) + 50  # no recount of the whole text per dropped fact


_LABELS = st.sampled_from(list(FactKind))
_FILLER = st.text(alphabet="abcdefgh ijklm.,-_/`\n", max_size=60)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_LABELS, _FILLER), max_size=30), st.integers(-5, 400))
def test_render_budget_and_drop_order(kinds: list[tuple[FactKind, str]], max_tokens: int) -> None:
    # A unique tag per fact shows which facts made it into the text.
    facts = [Fact(k, f"<{i}>{filler}", i, "exit 0") for i, (k, filler) in enumerate(kinds)]
    text = Ledger(facts).render(COUNTER, max_tokens)
    assert COUNTER.count(text) <= max(max_tokens, 0)  # "" for a budget below zero
    assert text == "" or text.startswith(LEDGER_HEADING + "\n### ")
    kept = {f for f in facts if f"<{f.seq}>" in text}
    assert bool(kept) == bool(text)
    groups = [{K.COMMAND, K.ERROR, K.FILE_READ, K.FILE_WRITE}, {K.INSTRUCTION}]
    for rank, group in enumerate(groups):
        members = [f for f in facts if f.kind in group]
        if any(f not in kept for f in members):
            # Something of this group was dropped: every group dropped before it is gone...
            assert not any(f.kind in g for f in kept for g in groups[:rank])
        # ...and within a group only the newest survive.
        flags = [f in kept for f in members]
        assert flags == sorted(flags)
    if max_tokens >= COUNTER.count(Ledger(facts).render(COUNTER, 10**6)):
        assert len(kept) == len(facts)
