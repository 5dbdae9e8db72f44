"""The CLI's category options: --categories, --budget, --weight, --file and --workspace-root,
their parsing, and the allocation report over a fake client."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from contextwm import cli
from contextwm.cli import parser as cli_parser
from contextwm_client import (
    AllocationReport,
    CategoryAllocation,
    CategoryBudget,
    CategoryOptions,
    ContributorPiece,
    Conversation,
    ConversationSettings,
    EnhancedContext,
    TokenAccount,
    WindowStats,
)

T0 = datetime(2024, 5, 17, 9, 30, tzinfo=UTC)
ALLOCATION = AllocationReport(
    allocated=950,
    categories=(
        CategoryAllocation("system", 95, 95, 95, 40, 55, 0),
        CategoryAllocation("context", 95, 665, 380, 300, 0, 47),
    ),
    contributors=(
        ContributorPiece(
            "working_files", "src/a.py", True, 0.4, 0.9, 0.36, 120, "diff against HEAD", "", "d"
        ),
        ContributorPiece(
            "codebase_map", "codebase", False, 0.2, 0.5, 0.1, 900, "content", "did not fit", ""
        ),
    ),
)
SETTINGS = ConversationSettings(
    workspace_root="/srv/work",
    category_budgets=(
        CategoryBudget("system", 0.1, 0.1, 0.1),
        CategoryBudget("context", 0.35, 0.1, 0.7),
    ),
    contributor_weights={"working_files": 0.4, "retrieval": 0.25},
)


def context(allocation: AllocationReport | None) -> EnhancedContext:
    tokens = TokenAccount(1000, 990, 500, 300, 50, 0, "cl100k_base", 40)
    return EnhancedContext(
        "# System\n...", (), (), "q", False, tokens, None, 0, "coding", allocation
    )


class FakeClient:
    """Answers get_context and the settings calls with canned values and records the calls."""

    def __init__(self, allocation: AllocationReport | None = ALLOCATION) -> None:
        self.allocation = allocation
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def get_context(self, *args: Any, **kwargs: Any) -> EnhancedContext:
        self.calls.append(("get_context", args, kwargs))
        return context(self.allocation)

    def _conversation(self, name: str, *args: Any, **kwargs: Any) -> Conversation:
        self.calls.append((name, args, kwargs))
        window = WindowStats(0, 0, 8000, 100)
        return Conversation("ns", "c", SETTINGS, window, 0, 0, "general", T0, None, 0, 0)

    def create_conversation(self, *args: Any, **kwargs: Any) -> Conversation:
        return self._conversation("create_conversation", *args, **kwargs)

    def update_conversation(self, *args: Any, **kwargs: Any) -> Conversation:
        return self._conversation("update_conversation", *args, **kwargs)


def parse(*argv: str) -> argparse.Namespace:
    parser, _ = cli_parser.build_parser("127.0.0.1:1")
    return parser.parse_args(argv)


def run(capsys: pytest.CaptureFixture[str], client: FakeClient, *argv: str) -> str:
    args = parse(*argv)
    assert args.handler(client, args) == 0
    return capsys.readouterr().out


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("context=0.4", CategoryBudget("context", 0.4)),
        ("dialog=0.5:0.2", CategoryBudget("dialog", 0.5, 0.2)),
        ("system=0.1:0.1:0.1", CategoryBudget("system", 0.1, 0.1, 0.1)),
        ("context=:0.2:0.8", CategoryBudget("context", None, 0.2, 0.8)),
        ("system_output=::0.3", CategoryBudget("system_output", max_share=0.3)),
        ("dialog=0.6::", CategoryBudget("dialog", 0.6)),
    ],
)
def test_budget_syntax(text: str, expected: CategoryBudget) -> None:
    assert parse("context", "c", "--max-tokens", "9", "--budget", text).budgets == [expected]


def test_context_category_options_parse() -> None:
    args = parse("context", "c", "--max-tokens", "900")
    assert (args.categories, args.budgets, args.weights, args.files) == (False, [], [], [])
    args = parse(
        "context", "c", "q", "--max-tokens", "900", "--categories",
        "--budget", "context=0.4", "--budget", "dialog=:0.3",
        "--weight", "retrieval=0", "--weight", "codebase_map=0.5",
        "--file", "a.py", "--file", "/srv/work/b.py",
    )  # fmt: skip
    assert args.categories is True
    assert args.budgets == [CategoryBudget("context", 0.4), CategoryBudget("dialog", None, 0.3)]
    assert args.weights == [("retrieval", 0.0), ("codebase_map", 0.5)]
    assert args.files == ["a.py", "/srv/work/b.py"]


@pytest.mark.parametrize("command", ["create", "update"])
def test_settings_options_parse(command: str) -> None:
    args = parse(command, "c")
    assert (args.workspace_root, args.budgets, args.weights) == (None, [], [])
    args = parse(
        command, "c", "--workspace-root", "/srv/work",
        "--budget", "system=0.1:0.1:0.1", "--weight", "project_docs=0.15",
    )  # fmt: skip
    assert args.workspace_root == "/srv/work"
    assert args.budgets == [CategoryBudget("system", 0.1, 0.1, 0.1)]
    assert args.weights == [("project_docs", 0.15)]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--budget", "context"], "expected CATEGORY=SHARE[:MIN[:MAX]], got 'context'"),
        (["--budget", "context=lots"], "expected CATEGORY=SHARE[:MIN[:MAX]]"),
        (["--budget", "context=0.1:0.1:0.1:0.1"], "expected CATEGORY=SHARE[:MIN[:MAX]]"),
        (["--budget", "history=0.3"], "unknown category 'history'; expected one of system, "),
        (["--weight", "retrieval"], "expected TYPE=W, got 'retrieval'"),
        (["--weight", "retrieval=high"], "expected TYPE=W"),
        (["--weight", "docs=0.1"], "unknown contributor type 'docs'; expected one of working_"),
    ],
)
def test_bad_syntax_is_a_usage_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["context", "c", "--max-tokens", "9"], ["create", "c"], ["update", "c"]):
        assert cli.main(["--target", "127.0.0.1:1", *command, *argv]) == 2
        err = capsys.readouterr().err
        assert "usage:" in err and message in err


def test_a_category_given_twice_is_refused_before_the_call(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Nothing listens on port 1: a call would fail with UNAVAILABLE (exit 1), not exit 2.
    argv = ["context", "c", "--max-tokens", "9", "--budget", "dialog=0.5", "--budget", "dialog="]
    assert cli.main(["--target", "127.0.0.1:1", *argv]) == 2
    assert capsys.readouterr().err.startswith("error: category 'dialog' is given twice")


# ---------------------------------------------------------------- requests and output


def test_context_sends_categories(capsys: pytest.CaptureFixture[str]) -> None:
    sent = []
    for flags in ([], ["--categories"], ["--file", "a.py"], ["--weight", "retrieval=0"]):
        client = FakeClient()
        run(capsys, client, "context", "c", "--max-tokens", "900", *flags)
        sent.append(client.calls[0][2]["categories"])
    assert sent == [
        False,
        True,
        CategoryOptions(files=("a.py",)),
        CategoryOptions(contributor_weights={"retrieval": 0.0}),
    ]
    client = FakeClient()
    run(capsys, client, "context", "c", "--max-tokens", "9", "--budget", "context=:0.2:0.8")
    budgets = client.calls[0][2]["categories"].budgets
    assert budgets == (CategoryBudget("context", None, 0.2, 0.8),)


def test_context_prints_the_allocation_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse("context", "c", "--max-tokens", "1000", "--categories")
    assert args.handler(FakeClient(), args) == 0
    captured = capsys.readouterr()
    assert captured.out == "# System\n...\n"  # stdout stays the text, ready for a prompt
    assert captured.err.splitlines() == [
        "allocation: 950 tokens",
        "system\tmin 95\tmax 95\tgranted 95\tused 40\tlent 55\tborrowed 0",
        "context\tmin 95\tmax 665\tgranted 380\tused 300\tlent 0\tborrowed 47",
        "chosen\tworking_files\tsrc/a.py\tscore 0.360\t120 tok\tdiff against HEAD",
        "left out\tcodebase_map\tcodebase\tscore 0.100\t900 tok\tdid not fit",
    ]
    assert run(capsys, FakeClient(None), "context", "c", "--max-tokens", "9") == "# System\n...\n"
    data = json.loads(run(capsys, FakeClient(), "context", "c", "--max-tokens", "9", "--json"))
    assert data["tokens"]["system"] == 40
    assert data["allocation"]["categories"][1]["borrowed"] == 47
    assert [piece["chosen"] for piece in data["allocation"]["contributors"]] == [True, False]


@pytest.mark.parametrize("command", ["create", "update"])
def test_settings_are_sent_and_printed(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    client = FakeClient()
    out = run(
        capsys, client, command, "c", "--workspace-root", "/srv/work",
        "--budget", "context=:0.2", "--weight", "retrieval=0.5",
    )  # fmt: skip
    settings = client.calls[0][1][-1] if command == "update" else client.calls[0][2]["settings"]
    assert settings == ConversationSettings(
        workspace_root="/srv/work",
        category_budgets=(CategoryBudget("context", min_share=0.2),),
        contributor_weights={"retrieval": 0.5},
    )
    lines = {line.split("  ")[0]: line.split()[2:] for line in out.splitlines()}
    assert lines["workspace root"] == ["/srv/work"]
    assert lines["category budgets"] == ["system=0.1:0.1:0.1", "context=0.35:0.1:0.7"]
    assert lines["contributor weights"] == ["working_files=0.4", "retrieval=0.25"]
    # Without the options the settings stay unset (unchanged on update).
    client = FakeClient()
    run(capsys, client, command, "c")
    settings = client.calls[0][1][-1] if command == "update" else client.calls[0][2]["settings"]
    assert settings == ConversationSettings()
