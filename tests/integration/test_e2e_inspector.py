"""The web inspector in a real headless Chromium, against a real server (the real model, a
SQLite file) holding a compacted, checkpointed, truncated conversation: what a person
debugging an agent sees, and that it is what the gRPC calls return. Each view's screenshot
is saved (into docs/screenshots with INSPECTOR_SCREENSHOTS=docs/screenshots)."""

from __future__ import annotations

import dataclasses
import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rich_conversation
from browser import chromium, screenshot, wait
from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.app import Service
from contextwm.ports.embedder import Embedder
from contextwm.settings import ServerSettings
from contextwm_client import Client, ConversationSettings, ImportItem, NewItem
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

BIG_ITEMS = 100_000


@dataclasses.dataclass
class Inspected:
    service: Service
    client: Client
    url: str
    shots: Path


@pytest.fixture(scope="module")
def inspected(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Inspected]:
    """A server with the inspector on, holding the rich conversation (archived, compacted,
    truncated, a checkpoint and a duplicate read), one with a model limit, one with a
    restored checkpoint, and one whose old tool output the active context masks."""
    data = tmp_path_factory.mktemp("inspected")
    settings = ServerSettings(
        port=0, data_dir=data, grace_seconds=1.0, indexer_process=False, inspector_port=0
    )
    service = Service.start(settings, embedder=embedder)
    client = Client(f"127.0.0.1:{service.port}")
    rich_conversation.build(client, "rich")
    client.create_conversation("limited", settings=ConversationSettings(context_limit=4000))
    client.append("limited", "The staging database listens on port 6543.")
    client.create_conversation("restored")
    client.append("restored", "Keep this one.")
    client.create_checkpoint("restored", "start")
    client.append("restored", "This one is reverted by the restore.")
    client.restore_checkpoint("restored", "start")
    client.create_conversation(
        "masked", settings=ConversationSettings(mask_tool_outputs_after_turns=1)
    )
    client.append("masked", "Run the tests.")
    client.append("masked", "$ pytest\n" + "ok\n" * 50, role="tool")
    for k in range(3):
        client.append("masked", f"User turn {k}.")
        client.append("masked", f"Assistant turn {k}.", role="assistant")
    try:
        yield Inspected(
            service,
            client,
            f"http://127.0.0.1:{service.inspector_port}/",
            tmp_path_factory.mktemp("screenshots"),
        )
    finally:
        client.close()
        service.stop(grace=0)


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with chromium() as driver:
        yield driver
        # No script error and no failed load on any page the tests opened.
        logged = driver.get_log("browser")  # type: ignore[no-untyped-call]
        assert [e for e in logged if e["level"] == "SEVERE"] == []


def open_page(browser: WebDriver, url: str, ready: str) -> None:
    """Navigates to url and waits for the element with CSS selector ready."""
    browser.get("about:blank")
    browser.get(url)
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ready))


def test_the_conversations_page_lists_each_by_activity_with_a_filter(
    inspected: Inspected, browser: WebDriver
) -> None:
    open_page(browser, inspected.url + "#/n/default", "#conversations tr.conversation")
    rows = browser.find_elements(By.CSS_SELECTOR, "#conversations tr.conversation")
    ids = [r.get_attribute("data-id") for r in rows]
    # Most recently active first: the order they were last appended to.
    assert ids == ["masked", "restored", "limited", "rich"]
    usage = inspected.client.get_usage("limited")
    assert f"{usage.used_tokens:,} / {usage.usable_tokens:,} (" in rows[2].text
    assert "no model limit" in rows[3].text and "3 archived · 11 compacted" in rows[3].text
    screenshot(browser, "conversations", inspected.shots)
    box = browser.find_element(By.ID, "conversation-filter")
    box.send_keys("RICH")
    wait(
        browser,
        lambda d: (
            [
                r.get_attribute("data-id")
                for r in d.find_elements(By.CSS_SELECTOR, "#conversations tr.conversation")
            ]
            == ["rich"]
        ),
    )


def test_the_timeline_marks_states_and_the_compaction_expands_to_its_summary(
    inspected: Inspected, browser: WebDriver
) -> None:
    open_page(browser, inspected.url + "#/n/default/c/rich", "#timeline[data-rendered]")
    items = {i.seq: i for i in inspected.client.iter_items("rich")}
    rows = browser.find_elements(By.CSS_SELECTOR, "#timeline .item")
    assert [int(r.get_attribute("data-seq") or 0) for r in rows] == sorted(items)
    # The run of compacted items is folded into one row, which opens.
    compacted = [s for s, i in items.items() if i.state == "compacted"]
    fold = browser.find_element(By.CSS_SELECTOR, "#timeline details.run")
    assert fold.find_element(By.TAG_NAME, "summary").text.startswith(
        f"{len(compacted)} compacted items, #{compacted[0]}–#{compacted[-1]}"
    )
    inside = fold.find_elements(By.CSS_SELECTOR, ".item")
    assert [int(r.get_attribute("data-seq") or 0) for r in inside] == compacted
    assert not any(r.is_displayed() for r in inside)
    fold.find_element(By.TAG_NAME, "summary").click()
    wait(browser, lambda d: all(r.is_displayed() for r in inside))
    for row in rows:
        state = items[int(row.get_attribute("data-seq") or 0)].state
        assert row.get_attribute("data-state") == state
        opacity = float(row.value_of_css_property("opacity"))
        # Items out of the active context are dimmed; the window's are not.
        assert (opacity < 1) == (state in ("archived", "compacted")), (state, opacity)
    # The second read of src/app.py superseded the first; the truncation and checkpoint show.
    # The first item's flag and metadata.
    assert "pinned" in rows[0].text and "user=42" in rows[0].text
    first_read = browser.find_element(By.ID, "seq-10")
    assert "duplicate read: superseded by #11" in first_read.text
    truncated = [
        s for s, i in items.items() if "truncated" in browser.find_element(By.ID, f"seq-{s}").text
    ]
    assert truncated, "the truncated items are marked"
    assert browser.find_elements(By.CSS_SELECTOR, ".event.truncation")
    checkpoint = browser.find_element(By.CSS_SELECTOR, ".event.checkpoint")
    assert "before-compaction" in checkpoint.text

    compaction = next(i.compaction for i in items.values() if i.compaction is not None)
    marker = browser.find_element(By.CSS_SELECTOR, ".event.compaction")
    title = marker.find_element(By.TAG_NAME, "summary")
    freed = compaction.tokens_before - compaction.tokens_after
    # The items it counts are the ones whose badge says compacted.
    assert title.text == (
        f"Context compacted #1: {compaction.items_archived:,} items compacted,"
        f" {freed:,} tokens freed"
    )
    assert compaction.items_archived == len(compacted)
    summary = marker.find_element(By.CSS_SELECTOR, "pre.summary")
    assert not summary.is_displayed()
    title.click()
    wait(browser, lambda d: summary.is_displayed())
    assert summary.text == "We set up the deploy port and talked about scheduling."
    assert marker.find_element(By.CSS_SELECTOR, "pre.ledger").is_displayed()
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", marker)
    screenshot(browser, "timeline", inspected.shots)


def test_reverted_items_are_struck_through(inspected: Inspected, browser: WebDriver) -> None:
    open_page(browser, inspected.url + "#/n/default/c/restored", "#timeline[data-rendered]")
    reverted = browser.find_element(By.CSS_SELECTOR, ".item.reverted .content")
    assert reverted.text == "This one is reverted by the restore."
    assert "line-through" in reverted.value_of_css_property("text-decoration")
    kept = browser.find_element(By.CSS_SELECTOR, ".item.window .content")
    assert "line-through" not in kept.value_of_css_property("text-decoration")


def test_masked_tool_outputs_are_marked(inspected: Inspected, browser: WebDriver) -> None:
    open_page(browser, inspected.url + "#/n/default/c/masked", "#timeline[data-rendered]")
    treatments = {e.seq: e.treatment for e in inspected.client.iter_active_context("masked")}
    assert treatments[2] == "masked"
    for seq, treatment in treatments.items():
        row = browser.find_element(By.ID, f"seq-{seq}")
        assert ("masked: output replaced by a placeholder" in row.text) == (treatment == "masked")


def test_the_usage_bar_moves_when_an_item_is_appended(
    inspected: Inspected, browser: WebDriver
) -> None:
    open_page(browser, inspected.url + "#/n/default/c/limited/usage", "#usage-chart")
    meter = browser.find_element(By.ID, "usage-bar")
    fill = meter.find_element(By.CLASS_NAME, "fill")
    before = int(meter.get_attribute("aria-valuenow") or 0)
    width = fill.size["width"]
    usage = inspected.client.get_usage("limited")
    assert before == usage.used_tokens
    appended = inspected.client.append("limited", "A long tool log line. " * 120, role="tool")
    wait(browser, lambda d: int(meter.get_attribute("aria-valuenow") or 0) > before)
    after = inspected.client.get_usage("limited")
    wait(browser, lambda d: int(meter.get_attribute("aria-valuenow") or 0) == after.used_tokens)
    assert after.used_tokens >= before + appended.token_count - 5
    wait(browser, lambda d: fill.size["width"] > width)
    assert str(after.used_tokens) in (
        browser.find_element(By.ID, "usage-text").text.replace(",", "")
    )
    screenshot(browser, "usage", inspected.shots)


def test_the_usage_chart_shows_the_compaction_as_a_drop(
    inspected: Inspected, browser: WebDriver
) -> None:
    open_page(browser, inspected.url + "#/n/default/c/rich/usage", "#usage-chart")
    drops = browser.find_elements(By.CSS_SELECTOR, "#drops tr")[1:]
    compaction = next(i for i in inspected.client.iter_items("rich") if i.kind == "compaction")
    assert compaction.compaction is not None
    texts = [d.text for d in drops]
    marker = f"#{compaction.seq} compaction #1 {compaction.compaction.tokens_after:,}"
    assert marker in texts, texts
    screenshot(browser, "usage", inspected.shots)


def test_both_pagers_have_a_seq_box_that_jumps_there(
    inspected: Inspected, browser: WebDriver
) -> None:
    open_page(browser, inspected.url + "#/n/default/c/rich", "#timeline[data-rendered]")
    pagers = browser.find_elements(By.CSS_SELECTOR, "#timeline-view .pager")
    assert len(pagers) == 2
    boxes = [p.find_elements(By.CSS_SELECTOR, "input[type=number]") for p in pagers]
    assert [len(b) for b in boxes] == [1, 1]
    boxes[0][0].send_keys("4", Keys.ENTER)
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#seq-4.here"))
    open_page(browser, inspected.url + "#/n/default/c/rich", "#timeline[data-rendered]")
    bottom = browser.find_elements(By.CSS_SELECTOR, "#timeline-view .pager input[type=number]")[1]
    bottom.send_keys("2", Keys.ENTER)
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#seq-2.here"))


def read_json(inspected: Inspected, path: str) -> Any:
    with urllib.request.urlopen(inspected.url.rstrip("/") + path, timeout=30) as response:
        return json.loads(response.read())


def test_the_usage_chart_draws_what_get_usage_reported_with_masked_outputs(
    inspected: Inspected, browser: WebDriver
) -> None:
    client, ns, cid = inspected.client, "charts", "masking"
    client.create_conversation(
        cid,
        namespace=ns,
        settings=ConversationSettings(
            mask_tool_outputs_after_turns=1, context_limit=1500, reserved_reply_tokens=300
        ),
    )
    reported: dict[int, int] = {}
    for k in range(5):
        for role, text in (
            ("user", f"Run check {k}."),
            ("tool", f"check {k}: a line of build output\n" * 40),
            ("assistant", f"Check {k} passed."),
        ):
            seq = client.append(cid, text, role=role, namespace=ns).seq  # type: ignore[arg-type]
            reported[seq] = client.get_usage(cid, namespace=ns).active_tokens
    stored = sum(i.token_count for i in client.iter_items(cid, namespace=ns))
    usable = client.get_usage(cid, namespace=ns).usable_tokens
    # Counted at full size, the tool outputs would cross the usable limit; masked, never.
    assert max(reported.values()) < usable < stored
    done = client.compact(cid, "Five checks ran and passed.", namespace=ns).compaction
    marker = max(i.seq for i in client.iter_items(cid, namespace=ns))
    reported[marker] = client.get_usage(cid, namespace=ns).active_tokens
    seq = client.append(cid, "What next?", namespace=ns).seq
    reported[seq] = client.get_usage(cid, namespace=ns).active_tokens

    data = read_json(inspected, f"/api/usage?namespace={ns}&conversation={cid}")
    assert {p["seq"]: p["tokens"] for p in data["points"]} == reported
    # The compaction's own figures: the point before it is its "before", its point its after.
    points = {p["seq"]: p["tokens"] for p in data["points"]}
    assert (points[marker - 1], points[marker]) == (done.tokens_before, done.tokens_after)

    open_page(browser, inspected.url + f"#/n/{ns}/c/{cid}/usage", "#usage-chart")
    limit = browser.find_element(By.CSS_SELECTOR, "#usage-chart line.limit")
    at_limit = float(limit.get_attribute("y1") or 0)
    dots = browser.find_elements(By.CSS_SELECTOR, "#usage-chart circle")
    assert len(dots) == len(reported)
    # SVG's y grows downwards: every point is drawn on or below the usable limit.
    assert all(float(d.get_attribute("cy") or 0) > at_limit for d in dots)


def test_an_open_timeline_tells_of_items_appended_since_it_loaded(
    inspected: Inspected, browser: WebDriver
) -> None:
    client, ns, cid = inspected.client, "charts", "growing"
    for k in range(3):
        client.append(cid, f"Message {k}.", namespace=ns)
    open_page(browser, inspected.url + f"#/n/{ns}/c/{cid}", "#timeline[data-rendered]")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#timeline .item")) == 3
    client.append(cid, "Message 3.", namespace=ns)
    client.append(cid, "Message 4.", namespace=ns)
    note = wait(browser, lambda d: d.find_element(By.ID, "changed"))
    wait(browser, lambda d: "2 new items" in note.text)
    assert "#5" in note.text
    note.find_element(By.TAG_NAME, "a").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#seq-5"))
    assert len(browser.find_elements(By.CSS_SELECTOR, "#timeline .item")) == 5
    assert not browser.find_elements(By.ID, "changed")


def test_the_timeline_filters_by_role_state_and_flag(
    inspected: Inspected, browser: WebDriver
) -> None:
    open_page(browser, inspected.url + "#/n/default/c/rich", "#timeline[data-rendered]")
    items = list(inspected.client.iter_items("rich"))

    def shown() -> list[int]:
        rows = browser.find_elements(By.CSS_SELECTOR, "#timeline .item")
        return [int(r.get_attribute("data-seq") or 0) for r in rows]

    def choose(name: str, value: str, expected: list[int]) -> None:
        before = browser.find_element(By.ID, "timeline")
        Select(browser.find_element(By.ID, f"filter-{name}")).select_by_value(value)
        wait(browser, lambda d: f"{name}={value}" in d.current_url)
        # The screen read again, not the one before it.
        wait(browser, lambda d: d.find_element(By.ID, "timeline") != before)
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#timeline[data-rendered]"))
        assert shown() == expected

    tools = [i.seq for i in items if i.role == "tool"]
    assert tools
    choose("role", "tool", tools)
    # Filters add up: tool outputs that are compacted (none is folded when asked by state).
    compacted_tools = [i.seq for i in items if i.role == "tool" and i.state == "compacted"]
    choose("state", "compacted", compacted_tools)
    assert all(r.is_displayed() for r in browser.find_elements(By.CSS_SELECTOR, "#timeline .item"))
    before = browser.find_element(By.ID, "timeline")
    browser.find_element(By.ID, "filter-clear").click()
    wait(browser, lambda d: "role=" not in d.current_url)
    wait(browser, lambda d: d.find_element(By.ID, "timeline") != before)
    choose("flag", "pinned", [i.seq for i in items if "pinned" in i.flags])
    assert "matching items" in browser.find_element(By.ID, "pager-top").text


def test_the_model_s_view_shows_what_get_active_context_sends(
    inspected: Inspected, browser: WebDriver
) -> None:
    for cid in ("masked", "rich"):
        open_page(browser, inspected.url + f"#/n/default/c/{cid}/active", "#sent[data-rendered]")
        entries = list(inspected.client.iter_active_context(cid))
        rows = browser.find_elements(By.CSS_SELECTOR, "#sent .sent")
        assert [
            (
                int(r.get_attribute("data-seq") or 0),
                r.get_attribute("data-treatment"),
                int(r.get_attribute("data-tokens") or 0),
            )
            for r in rows
        ] == [(e.seq, e.treatment, e.token_count) for e in entries]
        for row, entry in zip(rows, entries, strict=True):
            # The text sent: a placeholder or notice where the model does not get the item.
            content = row.find_element(By.CSS_SELECTOR, ".content")
            assert content.get_attribute("textContent") == entry.content
        sections = {
            r.get_attribute("data-section"): int(r.get_attribute("data-tokens") or 0)
            for r in browser.find_elements(By.CSS_SELECTOR, "#sections tr.section")
        }
        usage = inspected.client.get_usage(cid)
        assert sum(sections.values()) == sum(e.token_count for e in entries) == usage.active_tokens
        expected = {
            "masked tool outputs": sum(e.token_count for e in entries if e.treatment == "masked"),
            "truncation notices": sum(
                e.token_count for e in entries if e.treatment == "truncation_notice"
            ),
            "compaction summary": sum(e.token_count for e in entries if e.kind == "compaction"),
        }
        assert {k: sections[k] for k in expected} == expected
        assert browser.find_element(By.ID, "sent-total").text == f"{usage.active_tokens:,}"
        if cid == "masked":
            placeholder = next(e for e in entries if e.treatment == "masked")
            assert placeholder.content.startswith("[output of tool at seq 2 omitted")
            assert expected["masked tool outputs"] > 0
        else:
            assert expected["truncation notices"] > 0 and expected["compaction summary"] > 0
            screenshot(browser, "sent-to-the-model", inspected.shots)


def test_why_this_context_returns_what_get_context_returns(
    inspected: Inspected, browser: WebDriver
) -> None:
    open_page(browser, inspected.url + "#/n/default/c/rich/why", "#why-form")
    form = browser.find_element(By.ID, "options-a")
    form.find_element(By.NAME, "query").send_keys("Which port do we deploy to?")
    budget = form.find_element(By.NAME, "budget")
    budget.clear()
    budget.send_keys("300")
    browser.find_element(By.ID, "compare").click()
    other = browser.find_element(By.ID, "options-b")
    other.find_element(By.NAME, "query").send_keys("Which port do we deploy to?")
    Select(other.find_element(By.NAME, "mode")).select_by_value("lexical")
    other.find_element(By.NAME, "categories").click()
    browser.find_element(By.ID, "ask").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results[data-done]"))

    expected = inspected.client.get_context("rich", "Which port do we deploy to?", max_tokens=300)
    shown = browser.find_element(By.ID, "result-a")
    assert int(shown.get_attribute("data-total") or 0) == expected.tokens.total <= 300
    for section, scored in (("history", expected.history), ("recent", expected.recent)):
        rows = shown.find_elements(By.CSS_SELECTOR, f".scored.{section}")
        assert [int(r.get_attribute("data-seq") or 0) for r in rows] == [s.item.seq for s in scored]
        assert [int(r.get_attribute("data-tokens") or 0) for r in rows] == [
            s.item.token_count for s in scored
        ]
        # Each score is drawn as its parts.
        for row in rows:
            assert row.find_elements(By.CSS_SELECTOR, ".parts span")
    assert 1 in [s.item.seq for s in expected.history + expected.recent], "the deploy port"
    # The score's parts in figures, in sight without hovering.
    for row, hit in zip(
        shown.find_elements(By.CSS_SELECTOR, ".scored"),
        expected.history + expected.recent,
        strict=True,
    ):
        figures = [f.text for f in row.find_elements(By.CSS_SELECTOR, ".figure")]
        parts = dataclasses.asdict(hit.parts)
        assert figures == [f"{name} {value:.2f}" for name, value in parts.items() if value]
    # The window items that did not fit, each named.
    chosen = {s.item.seq for s in expected.history + expected.recent}
    window = [i.seq for i in inspected.client.iter_items("rich") if i.state == "window"]
    assert expected.tokens.recent_omitted > 0
    named = shown.find_elements(By.CSS_SELECTOR, "#left-out-a .left-out-item")
    assert [int(n.get_attribute("data-seq") or 0) for n in named] == [
        s for s in window if s not in chosen
    ]
    assert len(named) == expected.tokens.recent_omitted

    lexical = inspected.client.get_context(
        "rich", "Which port do we deploy to?", max_tokens=1000, mode="lexical", categories=True
    )
    side_b = browser.find_element(By.ID, "result-b")
    assert int(side_b.get_attribute("data-total") or 0) == lexical.tokens.total <= 1000
    allocation = side_b.find_elements(By.CSS_SELECTOR, "#allocation-b .bar")
    assert lexical.allocation is not None
    assert len(allocation) == len(lexical.allocation.categories) == 4
    # Each item with the category that kept it.
    shown_categories = [
        (int(r.get_attribute("data-seq") or 0), r.get_attribute("data-category"))
        for r in side_b.find_elements(By.CSS_SELECTOR, ".scored")
    ]
    assert shown_categories == [(s.item.seq, s.category) for s in lexical.history + lexical.recent]
    assert {c for _, c in shown_categories} >= {"context", "dialog"}
    # What differs between the two answers is marked on each side.
    in_b = {s.item.seq for s in lexical.history + lexical.recent}
    for side, mine, theirs in (("a", chosen, in_b), ("b", in_b, chosen)):
        only = browser.find_elements(By.CSS_SELECTOR, f"#result-{side} .scored.only")
        assert sorted(int(r.get_attribute("data-seq") or 0) for r in only) == sorted(mine - theirs)
        assert all(f"only in {side.upper()}" in r.text for r in only)
    assert chosen != in_b, "the two answers differ"
    summary = browser.find_element(By.ID, "differences-text").text
    assert summary.startswith(f"{len(chosen & in_b)} items in both answers")
    differs = browser.find_elements(By.CSS_SELECTOR, "#result-a td.differs[data-figure=total]")
    assert bool(differs) == (expected.tokens.total != lexical.tokens.total)
    screenshot(browser, "why-this-context", inspected.shots)


def test_a_search_hit_jumps_to_its_place_in_the_timeline(
    inspected: Inspected, browser: WebDriver
) -> None:
    open_page(browser, inspected.url + "#/n/default/search?q=sourdough%20starter", "#hits table")
    hits = inspected.client.search("sourdough starter", top_k=20, include_window=True)
    links = browser.find_elements(By.CSS_SELECTOR, "#hits a.hit-link")
    assert [link.text for link in links] == [f"#{h.item.seq}" for h in hits.hits]
    screenshot(browser, "search", inspected.shots)
    target = hits.hits[0].item.seq
    links[0].click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, f"#seq-{target}.here"))
    assert "/c/rich" in browser.current_url


def test_a_search_snippet_shows_the_match_highlighted(
    inspected: Inspected, browser: WebDriver
) -> None:
    filler = "Nothing of note happened in this part of the long log. " * 12
    inspected.client.append(
        "log", filler + "Then the zebra crossing sensor failed twice. " + filler, namespace="snips"
    )
    open_page(browser, inspected.url + "#/n/snips/search?q=Zebra%20sensor", "#hits table")
    snippet = browser.find_element(By.CSS_SELECTOR, "#hits tr.hit .snippet")
    marks = [m.text for m in snippet.find_elements(By.TAG_NAME, "mark")]
    # Around the match, deep in the item, and each word of the query found is marked.
    assert marks == ["zebra", "sensor"]
    assert snippet.text.startswith("…") and snippet.text.endswith("…")
    assert "Then the zebra crossing sensor failed twice." in snippet.text


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server holding a 100,000-item conversation (imported; hashing vectors, since this
    is about the page, not retrieval); the inspector's URL."""
    settings = ServerSettings(
        port=0,
        data_dir=tmp_path_factory.mktemp("big"),
        grace_seconds=1.0,
        indexer_process=False,
        inspector_port=0,
    )
    service = Service.start(settings, embedder=HashingEmbedder())
    with Client(f"127.0.0.1:{service.port}") as client:
        done = client.import_items(
            (
                ImportItem(
                    "big",
                    NewItem(
                        content=f"turn {k}: the build on host {k % 97} took {k % 13} minutes",
                        role="user" if k % 2 == 0 else "assistant",
                    ),
                )
                for k in range(BIG_ITEMS)
            ),
            chunk_size=1000,
        )
        assert done.appended == BIG_ITEMS
    try:
        yield f"http://127.0.0.1:{service.inspector_port}/"
    finally:
        service.stop(grace=0)


def test_a_100000_item_conversations_first_screen_renders_within_a_second(
    big: str, browser: WebDriver
) -> None:
    browser.get("about:blank")
    started = time.monotonic()
    browser.get(big + "#/n/default/c/big")
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#timeline[data-rendered]"))
    waited = time.monotonic() - started
    # From the start of navigation to the timeline on screen, as the page measured it.
    rendered_ms = browser.execute_script("return window.inspectorTimings.timelineSinceLoad")
    rows = browser.find_elements(By.CSS_SELECTOR, "#timeline .item")
    print(f"first screen of {BIG_ITEMS:,} items: {rendered_ms:.0f} ms in the page, {waited:.2f} s")
    assert rendered_ms < 1000
    assert 0 < len(rows) <= 200
    assert rows[0].get_attribute("data-seq") == "1"
    # Later stretches page in the same way: the newest one too.
    browser.find_element(By.LINK_TEXT, "latest").click()
    wait(
        browser,
        lambda d: d.find_elements(By.CSS_SELECTOR, f"#seq-{BIG_ITEMS}"),
    )
    assert len(browser.find_elements(By.CSS_SELECTOR, "#timeline .item")) <= 200
