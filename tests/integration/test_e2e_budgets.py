"""Token budgets per category with borrowing, and ranked context contributors, end to
end through a real server on loopback (real MiniLM, SQLite, a real temporary workspace)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import StartService
from contextwm_client import (
    AllocationReport,
    AsyncClient,
    CategoryAllocation,
    CategoryBudget,
    CategoryOptions,
    Client,
    ConversationSettings,
    EnhancedContext,
    FailedPreconditionError,
    FileRef,
    InvalidArgumentError,
    NewItem,
    NotFoundError,
    PermissionDeniedError,
    ScoringWeights,
)

BILLING = '''"""Invoices and their totals."""


class Invoice:
    """An invoice with its lines."""

    def __init__(self, lines):
        self.lines = lines


def invoice_total(lines):
    """The sum of the line amounts, rounded to cents."""
    return round(sum(line.amount for line in lines), 2)
'''
BIG_MODULE = "\n\n".join(
    f"def handler_{n}(event):\n    '''Handles event kind {n}.'''\n    return {n}" for n in range(80)
)


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A git workspace: docs, sources, an ignored build dir, one file changed since HEAD."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "build").mkdir()
    (root / "README.md").write_text("# Readme\n\nThe README, not read when AGENTS.md exists.\n")
    (root / "AGENTS.md").write_text(
        "# Agent notes\n\nRun the tests with `pytest -x` before every commit.\n\n"
        "## Billing\n\nInvoice totals are rounded to cents.\n"
    )
    (root / ".gitignore").write_text("build/\n")
    (root / "build" / "generated.py").write_text("def generated():\n    pass\n")
    (root / "src" / "billing.py").write_text(BILLING)
    (root / "src" / "handlers.py").write_text(BIG_MODULE)
    (root / "src" / "app.py").write_text("def main():\n    print('hello')\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    # One line changed in a long file: its diff against HEAD is smaller than its content.
    (root / "src" / "handlers.py").write_text(BIG_MODULE.replace("return 7\n", "return 70\n"))
    return root


@pytest.fixture
def client(start_service: StartService, workspace: Path) -> Iterator[Client]:
    service = start_service(workspace_root=str(workspace))
    with Client(f"127.0.0.1:{service.port}") as c:
        yield c


def _report(ctx: EnhancedContext) -> AllocationReport:
    assert ctx.allocation is not None
    return ctx.allocation


def _by_category(ctx: EnhancedContext) -> dict[str, CategoryAllocation]:
    return {c.category: c for c in _report(ctx).categories}


def _dialog(client: Client, cid: str, turns: int, words: int = 12) -> None:
    for n in range(turns):
        client.append(cid, f"Step {n}: " + "please check the widget " * (words // 4), role="user")
        client.append(
            cid, f"Done with step {n}: " + "the widget works " * (words // 4), role="assistant"
        )


# --- categories, defaults, sections; no categories behaves as before ------------------------


def test_a_request_naming_categories_gets_sections_and_an_allocation_report(
    client: Client,
) -> None:
    client.append("c", "You are a careful billing agent.", role="system")
    _dialog(client, "c", 3)
    client.append("c", "$ pytest -x\n1 passed", role="tool")
    ctx = client.get_context(
        "c", "how are invoice totals rounded?", max_tokens=2000, categories=True
    )
    assert ctx.allocation is not None
    report = _by_category(ctx)
    assert list(report) == ["system", "context", "dialog", "system_output"]
    allocated = _report(ctx).allocated
    assert allocated == 2000 - ctx.tokens.query
    # The default shares: 10 / 35 / 50 / 5 %, with their minimums and maximums.
    expected = {
        "system": (0.10, 0.10),
        "context": (0.05, 0.70),
        "dialog": (0.10, 0.85),
        "system_output": (0.0, 0.25),
    }
    for name, (low, high) in expected.items():
        r = report[name]
        assert (r.minimum, r.maximum) == (int(low * allocated), int(high * allocated))
        assert r.used <= r.granted
    # Each category in its section: system prompt, contributors, dialog and tool output.
    text = ctx.text
    assert (
        text.index("# System")
        < text.index("# Relevant Context")
        < text.index("# Recent Context")
        < text.index("# Current Query")
    )
    assert "system: You are a careful billing agent." in text
    assert "tool: $ pytest -x" in text and "## Project docs: AGENTS.md" in text
    assert ctx.tokens.total <= 2000 and ctx.tokens.system > 0
    assert {s.role for s in ctx.recent} == {"system", "user", "assistant", "tool"}
    # Each item says which category kept it.
    by_role = {"system": "system", "user": "dialog", "assistant": "dialog", "tool": "system_output"}
    assert [s.category for s in ctx.recent] == [by_role[s.role] for s in ctx.recent]
    assert {s.category for s in ctx.history} <= {"context"}


def test_a_request_naming_no_categories_behaves_as_before(client: Client) -> None:
    client.append("c", "You are a careful billing agent.", role="system")
    _dialog(client, "c", 3)
    before = client.get_context("c", "widget", max_tokens=500)
    # Budgets set on the conversation change nothing for requests that do not ask for them.
    client.update_conversation(
        "c",
        ConversationSettings(
            category_budgets=(
                CategoryBudget("dialog", share=0.4),
                CategoryBudget("context", share=0.45),
            ),
        ),
    )
    after = client.get_context("c", "widget", max_tokens=500)
    assert before.allocation is None and after.allocation is None
    assert {s.category for s in after.recent + after.history} == {None}
    assert after.text == before.text and "# Relevant Context" not in after.text
    assert after.text.startswith("# Recent Context")


# --- budgets per conversation and per request -----------------------------------------------


def test_budgets_are_set_per_conversation_and_per_request(client: Client) -> None:
    conv = client.create_conversation(
        "c",
        settings=ConversationSettings(
            category_budgets=(
                CategoryBudget("dialog", share=0.4),
                CategoryBudget("context", share=0.45),
            ),
            contributor_weights={"codebase_map": 0.0},
        ),
    )
    budgets = {b.category: b for b in conv.settings.category_budgets or ()}
    assert (budgets["dialog"].share, budgets["context"].share) == (0.4, 0.45)
    assert budgets["system"].share == 0.10 and budgets["dialog"].max_share == 0.85
    assert conv.settings.contributor_weights == {
        "working_files": 0.4,
        "retrieval": 0.25,
        "codebase_map": 0.0,
        "project_docs": 0.15,
    }
    _dialog(client, "c", 20)
    ctx = client.get_context("c", "widget", max_tokens=1000, categories=True)
    allocated = _report(ctx).allocated
    dialog = _by_category(ctx)["dialog"]
    # Starting grant 40% (+ what it borrowed): more than 40% only by a loan.
    assert dialog.granted - dialog.borrowed <= int(0.4 * allocated) + 1
    # The codebase map is switched off; the request may switch it back on.
    assert not any(p.type == "codebase_map" for p in _report(ctx).contributors)
    ctx = client.get_context(
        "c",
        "widget",
        max_tokens=1000,
        categories=CategoryOptions(
            budgets=(CategoryBudget("dialog", share=0.3), CategoryBudget("context", share=0.55)),
            contributor_weights={"codebase_map": 0.5},
        ),
    )
    dialog = _by_category(ctx)["dialog"]
    assert dialog.granted - dialog.borrowed <= int(0.3 * _report(ctx).allocated) + 1
    assert any(p.type == "codebase_map" for p in _report(ctx).contributors)
    # The conversation's settings are unchanged by the request.
    again = client.get_conversation("c").settings
    assert {b.category: b.share for b in again.category_budgets or ()}["dialog"] == 0.4


def test_bad_budgets_are_invalid_argument_naming_the_field(client: Client) -> None:
    client.append("c", "hello", role="user")
    with pytest.raises(InvalidArgumentError, match=r"sum to 1\.05"):
        client.get_context(
            "c",
            "x",
            max_tokens=500,
            categories=CategoryOptions(
                budgets=(CategoryBudget("context", share=0.4),),
            ),
        )
    with pytest.raises(InvalidArgumentError, match=r"budgets\[dialog\].min_share"):
        client.update_conversation(
            "c",
            ConversationSettings(
                category_budgets=(CategoryBudget("dialog", min_share=0.6),),
            ),
        )
    with pytest.raises(InvalidArgumentError, match=r"contributor_weights\[retrieval\]"):
        client.get_context(
            "c",
            "x",
            max_tokens=500,
            categories=CategoryOptions(contributor_weights={"retrieval": 2.0}),
        )


# --- trimming order; SYSTEM never trimmed ---------------------------------------------------


def test_tool_output_is_trimmed_first_then_the_oldest_dialog(client: Client) -> None:
    _dialog(client, "c", 12)
    client.append("c", "$ make\n" + "compiling module\n" * 60, role="tool")
    client.append("c", "$ make test\n" + "test passed\n" * 60, role="tool")
    client.append("c", "What failed in the build?", role="user")
    ctx = client.get_context("c", None, max_tokens=400, categories=True)
    kept = {s.seq for s in ctx.recent}
    roles = {s.role for s in ctx.recent}
    assert "tool" not in roles  # the two long outputs are over SYSTEM_OUTPUT's maximum
    assert ctx.recent[-1].content == "What failed in the build?"
    dialog = [s.seq for s in ctx.recent if s.role in ("user", "assistant")]
    assert dialog and min(dialog) > 1 and ctx.tokens.recent_omitted > 0
    # What was dropped of the dialog is older than what was kept.
    assert max(set(range(1, 25)) - kept) < max(kept)
    assert ctx.tokens.total <= 400
    # With no query the focus stands in, for the dialog's order and the contributors' salience.
    assert ctx.query_from_focus and any(p.salience > 0 for p in _report(ctx).contributors)


def test_the_asyncio_client_asks_for_categories(
    start_service: StartService, workspace: Path
) -> None:
    service = start_service(workspace_root=str(workspace))

    async def run() -> EnhancedContext:
        async with AsyncClient(f"127.0.0.1:{service.port}") as c:
            await c.append("c", "How are invoice totals rounded?", role="user")
            options = CategoryOptions(files=("src/billing.py",))
            return await c.get_context("c", "invoice totals", max_tokens=2000, categories=options)

    ctx = asyncio.run(run())
    chosen = {(p.type, p.source) for p in _report(ctx).chosen}
    assert ("working_files", "src/billing.py") in chosen


def test_a_system_prompt_over_the_budget_is_failed_precondition(client: Client) -> None:
    client.append("c", "You are an agent. " + "Follow every rule. " * 200, role="system")
    client.append("c", "hello", role="user")
    with pytest.raises(FailedPreconditionError, match="SYSTEM is never trimmed"):
        client.get_context("c", "hi", max_tokens=300, categories=True)
    # A budget that holds it serves it whole, taking from the others.
    ctx = client.get_context("c", "hi", max_tokens=1200, categories=True)
    system = _by_category(ctx)["system"]
    assert system.borrowed > 0 and "Follow every rule." in ctx.text


# --- borrowing both ways, never below the lender's minimum ----------------------------------


def test_context_borrows_from_dialog_when_the_dialog_is_short(client: Client) -> None:
    client.append("c", "Fix the rounding in the invoice total.", role="user")
    client.append("c", "src/billing.py", role="tool", file=FileRef("src/billing.py", "read"))
    client.append("c", "handlers", role="tool", file=FileRef("src/handlers.py", "mention"))
    ctx = client.get_context(
        "c",
        "invoice total rounding",
        max_tokens=500,
        categories=CategoryOptions(
            budgets=(
                CategoryBudget("context", max_share=0.8),
                CategoryBudget("dialog", min_share=0.05),
            )
        ),
    )
    report = _by_category(ctx)
    context, dialog = report["context"], report["dialog"]
    assert context.borrowed > 0 and dialog.lent > 0
    assert context.granted > int(0.35 * _report(ctx).allocated)
    assert dialog.granted >= dialog.minimum and dialog.granted >= dialog.used
    assert sum(r.lent for r in report.values()) == sum(r.borrowed for r in report.values())


def test_dialog_borrows_from_context_when_contributors_leave_it_unused(
    client: Client,
) -> None:
    client.create_conversation(
        "c",
        settings=ConversationSettings(
            contributor_weights={
                "working_files": 0.0,
                "codebase_map": 0.0,
                "project_docs": 0.0,
            }
        ),
    )
    _dialog(client, "c", 30)
    ctx = client.get_context("c", "widget", max_tokens=800, categories=True)
    report = _by_category(ctx)
    context, dialog = report["context"], report["dialog"]
    assert dialog.borrowed > 0 and context.lent > 0
    assert context.granted >= context.minimum
    assert dialog.granted <= dialog.maximum


# --- contributors on a real workspace -------------------------------------------------------


def test_project_docs_take_the_first_of_penguin_agents_claude_readme(
    client: Client, workspace: Path
) -> None:
    client.append("c", "What are the house rules?", role="user")

    def doc() -> str:
        ctx = client.get_context("c", "house rules", max_tokens=3000, categories=True)
        (piece,) = [p for p in _report(ctx).contributors if p.type == "project_docs"]
        assert piece.chosen
        return piece.source

    assert doc() == "AGENTS.md"
    (workspace / "CLAUDE.md").write_text("# Claude\n\nnotes\n")
    assert doc() == "AGENTS.md"
    (workspace / "PENGUIN.md").write_text("# Penguin\n\nnotes\n")
    assert doc() == "PENGUIN.md"
    for name in ("PENGUIN.md", "AGENTS.md", "CLAUDE.md"):
        (workspace / name).unlink()
    assert doc() == "README.md"


def test_a_long_project_doc_is_trimmed_to_its_share_at_a_paragraph(
    client: Client, workspace: Path
) -> None:
    paragraphs = [f"## Rule {n}\n\nAlways do thing {n} before thing {n + 1}." for n in range(200)]
    (workspace / "AGENTS.md").write_text("# Rules\n\n" + "\n\n".join(paragraphs) + "\n")
    client.append("c", "What are the rules?", role="user")
    ctx = client.get_context("c", "rules", max_tokens=2000, categories=True)
    (piece,) = [p for p in _report(ctx).contributors if p.type == "project_docs"]
    assert piece.chosen and "trimmed from" in piece.detail
    # Its share: 0.15 of the weights, of CONTEXT's maximum (70% of 2000).
    assert piece.tokens <= int(2000 * 0.70 * 0.15)
    body = piece.content.split("\n", 1)[1]
    assert body.rstrip().endswith(".")  # cut at a paragraph end, not mid-sentence
    assert "## Rule 0" in body and "## Rule 199" not in body


def test_working_files_come_newest_first_as_content_or_as_the_smaller_diff(
    client: Client,
) -> None:
    client.append("c", "Look at the handlers.", role="user")
    client.append("c", "handlers", role="tool", file=FileRef("src/handlers.py", "read"))
    client.append("c", "Now the billing code.", role="user")
    client.append("c", "billing", role="tool", file=FileRef("src/billing.py", "write"))
    ctx = client.get_context("c", "invoice totals", max_tokens=4000, categories=True)
    files = [p for p in _report(ctx).contributors if p.type == "working_files"]
    by_source = {p.source: p for p in files}
    assert set(by_source) == {"src/billing.py", "src/handlers.py"}
    handlers, billing = by_source["src/handlers.py"], by_source["src/billing.py"]
    # handlers.py changed one line since HEAD: its diff is far smaller than its content.
    assert handlers.detail == "diff against HEAD"
    assert (
        "-    return 7\n+    return 70" in handlers.content and "handler_50" not in handlers.content
    )
    assert billing.detail == "content" and "def invoice_total" in billing.content
    # Salience follows the query: the billing code is closer to "invoice totals".
    assert billing.salience > handlers.salience
    assert billing.score == pytest.approx(0.4 * billing.salience)
    assert "## Working file: src/billing.py (content)" in ctx.text


def test_a_file_read_in_the_window_and_chosen_as_a_working_file_is_shown_once(
    client: Client,
) -> None:
    client.append("c", "Why is the invoice total rounded?", role="user")
    read = client.append("c", BILLING, role="tool", file=FileRef("src/billing.py", "read")).seq
    client.append("c", "The total is rounded to cents.", role="assistant")
    ctx = client.get_context("c", "invoice total rounding", max_tokens=4000, categories=True)
    assert ctx.text.count("def invoice_total(lines):") == 1
    assert "## Working file: src/billing.py (content)" in ctx.text
    assert read not in {s.seq for s in ctx.recent} and ctx.tokens.recent_omitted == 1
    # A read that differs from the file now (an older version) stays: it is history.
    client.append("c", BILLING.replace("2)", "3)"), role="tool",
                  file=FileRef("src/billing.py", "read"))  # fmt: skip
    ctx = client.get_context("c", "invoice total rounding", max_tokens=4000, categories=True)
    assert "round(sum(line.amount for line in lines), 3)" in ctx.text


def test_request_named_files_come_first_and_absolute_paths_inside_are_accepted(
    client: Client, workspace: Path
) -> None:
    client.append("c", "hello", role="user")
    ctx = client.get_context(
        "c",
        "main entry point",
        max_tokens=3000,
        categories=CategoryOptions(files=(str(workspace / "src" / "app.py"),)),
    )
    (piece,) = [p for p in _report(ctx).contributors if p.type == "working_files"]
    assert piece.source == "src/app.py" and piece.chosen and "print('hello')" in piece.content


def test_the_codebase_map_respects_gitignore_and_lists_symbols(client: Client) -> None:
    client.append("c", "Where is the invoice code?", role="user")
    ctx = client.get_context("c", "invoice code", max_tokens=3000, categories=True)
    (piece,) = [p for p in _report(ctx).contributors if p.type == "codebase_map"]
    assert piece.chosen
    assert "billing.py: class Invoice, def invoice_total" in piece.content
    assert "generated" not in piece.content and "build/" not in piece.content


# The oldest items leave the window first, whenever their vectors arrive: no similarity or
# role in the eviction score, and recency halving with every item.
BY_AGE = ScoringWeights(similarity=0.0, role={"user": 0.0, "assistant": 0.0})


def test_retrieval_hits_from_the_archive_are_pieces_with_their_turn(client: Client) -> None:
    client.create_conversation(
        "c",
        settings=ConversationSettings(
            window_max_items=10, weights=BY_AGE, recency_half_life_items=1
        ),
    )
    client.append("c", "What port does the billing service listen on?", role="user")
    client.append("c", "The billing service listens on port 8471.", role="assistant")
    _dialog(client, "c", 10)
    ctx = client.get_context("c", "billing service port", max_tokens=3000, categories=True)
    hits = [p for p in _report(ctx).contributors if p.type == "retrieval" and p.chosen]
    assert hits and "port 8471" in hits[0].content and hits[0].source == "#2"
    assert 2 in {s.seq for s in ctx.history}
    assert "## Relevant history" in ctx.text
    # Its question is still in the window (a flagged question is kept): it is rendered once,
    # with the dialog, and does not travel along with the hit.
    assert 1 in {s.seq for s in ctx.recent}
    assert ctx.text.count("What port does the billing service listen on?") == 1
    # Once both are archived, the question travels along with its answer, in one piece.
    client.create_conversation(
        "d",
        settings=ConversationSettings(
            window_max_items=10, detect_importance=False, weights=BY_AGE, recency_half_life_items=1
        ),
    )
    client.append("d", "What port does the billing service listen on?", role="user")
    client.append("d", "The billing service listens on port 8471.", role="assistant")
    _dialog(client, "d", 10)
    ctx = client.get_context("d", "billing service port", max_tokens=3000, categories=True)
    (hit,) = [p for p in _report(ctx).contributors if "8471" in p.content]
    assert "What port does the billing service listen on?" in hit.content
    assert {1, 2} <= {s.seq for s in ctx.history}


def test_selection_is_by_weight_times_salience_and_reports_what_was_left_out(
    client: Client,
) -> None:
    client.append("c", "Fix the invoice rounding.", role="user")
    for path in ("src/app.py", "src/billing.py", "src/handlers.py"):
        client.append("c", path, role="tool", file=FileRef(path, "mention"))
    ctx = client.get_context(
        "c",
        "invoice total rounding",
        max_tokens=700,
        categories=CategoryOptions(budgets=(CategoryBudget("context", max_share=0.35),)),
    )
    pieces = _report(ctx).contributors
    for p in pieces:
        assert p.score == pytest.approx(p.weight * p.salience)
    chosen = [p for p in pieces if p.chosen]
    left = [p for p in pieces if not p.chosen]
    assert chosen and left
    assert all(p.reason == "" for p in chosen)
    assert all(p.reason for p in left)
    assert [p.score for p in chosen] == sorted((p.score for p in chosen), reverse=True)
    # The best-scoring piece is kept: greedy by score.
    best = max(pieces, key=lambda p: (p.score, -p.tokens))
    context = _by_category(ctx)["context"]
    if best.tokens <= context.granted:
        assert best.chosen


def test_without_a_workspace_contributors_say_why(start_service: StartService) -> None:
    service = start_service()
    with Client(f"127.0.0.1:{service.port}") as c:
        c.append("c", "hello", role="user", file=FileRef("/anywhere/x.py", "read"))
        ctx = c.get_context("c", "hello", max_tokens=500, categories=True)
        reasons = {p.type: p.reason for p in _report(ctx).contributors}
        assert set(reasons) == {"project_docs", "codebase_map", "working_files"}
        assert all("no workspace" in r for r in reasons.values())
        with pytest.raises(FailedPreconditionError, match="no workspace"):
            c.get_context("c", "x", max_tokens=500, categories=CategoryOptions(files=("a.py",)))
        with pytest.raises(PermissionDeniedError, match="--workspace"):
            c.create_conversation("w", settings=ConversationSettings(workspace_root="/tmp"))


# --- the workspace root and escapes ---------------------------------------------------------


@pytest.mark.parametrize("path", ["../outside.py", "src/../../outside.py", "/etc/passwd", "/"])
def test_file_references_leaving_the_workspace_are_permission_denied(
    client: Client, path: str
) -> None:
    with pytest.raises(PermissionDeniedError, match="file reference refused"):
        client.append("new", "secret", role="tool", file=FileRef(path, "read"))
    with pytest.raises(NotFoundError):  # refused before it was created implicitly
        client.get_conversation("new")
    client.append("c", "hello", role="user")
    with pytest.raises(PermissionDeniedError, match="file reference refused"):
        client.append_batch(
            "c",
            [
                NewItem("ok", role="user"),
                NewItem("secret", role="tool", file=FileRef(path, "read")),
            ],
        )
    assert [i.content for i in client.iter_items("c")] == ["hello"]  # all or nothing


def test_a_symlink_out_of_the_workspace_is_permission_denied(
    client: Client, workspace: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the password is hunter2")
    (workspace / "src" / "link.txt").symlink_to(secret)
    client.append("c", "hello", role="user")
    with pytest.raises(PermissionDeniedError, match="symlink"):
        client.append("c", "x", role="tool", file=FileRef("src/link.txt", "read"))
    with pytest.raises(PermissionDeniedError):
        client.get_context(
            "c", "x", max_tokens=500, categories=CategoryOptions(files=("src/link.txt",))
        )
    # A file that became such a symlink after it was referenced is left out, never read.
    (workspace / "src" / "later.txt").write_text("harmless")
    client.append("c", "x", role="tool", file=FileRef("src/later.txt", "read"))
    (workspace / "src" / "later.txt").unlink()
    (workspace / "src" / "later.txt").symlink_to(secret)
    ctx = client.get_context("c", "password", max_tokens=2000, categories=True)
    (piece,) = [p for p in _report(ctx).contributors if p.source == "src/later.txt"]
    assert not piece.chosen and "PERMISSION_DENIED" in piece.reason
    assert "hunter2" not in ctx.text


def test_request_files_leaving_the_workspace_are_permission_denied(client: Client) -> None:
    client.append("c", "hello", role="user")
    for path in ("../x.py", "/etc/passwd"):
        with pytest.raises(PermissionDeniedError):
            client.get_context("c", "x", max_tokens=500, categories=CategoryOptions(files=(path,)))


def test_a_conversation_root_must_lie_under_an_allowed_root(
    start_service: StartService, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    (other / "project").mkdir(parents=True)
    (other / "project" / "AGENTS.md").write_text("# Other project\n\nIts own rules.\n")
    service = start_service(workspace_root=str(workspace), workspace_allowed_roots=(str(other),))
    with Client(f"127.0.0.1:{service.port}") as c:
        c.create_conversation(
            "own", settings=ConversationSettings(workspace_root=str(other / "project"))
        )
        c.append("own", "rules?", role="user")
        ctx = c.get_context("own", "rules", max_tokens=1000, categories=True)
        assert "Its own rules." in ctx.text
        with pytest.raises(PermissionDeniedError, match="outside the roots"):
            c.create_conversation("bad", settings=ConversationSettings(workspace_root="/usr"))
        with pytest.raises(InvalidArgumentError, match="absolute"):
            c.create_conversation("rel", settings=ConversationSettings(workspace_root="project"))
        escape = workspace / "escape"
        os.symlink("/usr", escape)
        with pytest.raises(PermissionDeniedError):
            c.create_conversation("sym", settings=ConversationSettings(workspace_root=str(escape)))


def test_the_documented_example_runs(client: Client, capsys: pytest.CaptureFixture[str]) -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "category-budgets.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    (example,) = [b for b in blocks if "CategoryOptions(" in b]
    client.append("task-42", "The invoice total is off by a cent.", role="user")
    exec(compile(example, str(page), "exec"), {"client": client})
    out = capsys.readouterr().out
    assert "context " in out and "chosen working_files src/billing.py" in out


def test_the_command_line_asks_for_categories(start_service: StartService, workspace: Path) -> None:
    service = start_service(workspace_root=str(workspace))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        target = f"127.0.0.1:{service.port}"
        command = [sys.executable, "-m", "contextwm", "--target", target, *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    out = cli("create", "c", "--budget", "dialog=0.4", "--budget", "context=0.45",
              "--weight", "codebase_map=0")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "dialog=0.4:0.1:0.85" in out.stdout and "codebase_map=0" in out.stdout
    cli("append", "c", "How are invoice totals rounded?")
    out = cli("context", "c", "invoice totals", "--max-tokens", "2000",
              "--file", "src/billing.py")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "## Working file: src/billing.py (content)" in out.stdout
    assert "allocation:" not in out.stdout and "allocation:" in out.stderr
    assert "chosen\tworking_files\tsrc/billing.py" in out.stderr
    out = cli("context", "c", "x", "--max-tokens", "500", "--file", "../secret")
    assert out.returncode == 1 and "PERMISSION_DENIED" in out.stderr
