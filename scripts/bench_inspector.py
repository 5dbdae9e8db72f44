"""Inspector benchmark: what each page's read costs over the gRPC calls it is made of, measured
in the same run, and how long a long conversation's first screen takes in a real browser.

One in-process server with the inspector on (hashing vectors: no page depends on the model)
holds one conversation per size, imported, and a namespace of many small conversations. Per
page, p50 and p90 over the repetitions of:

* the inspector's JSON read (HTTP on loopback, the JSON a page gets);
* the baseline: the gRPC reads the page needs, made directly with the Python client, which is
  the least any viewer of the same figures would pay.

Then, with --browser, headless Chromium opens each conversation's timeline and reports the
page's own time from the start of navigation to the first screen drawn (p50 of 5).

Goal: a 100,000-item conversation's first screen within a second.

Run:  scripts/bench inspector                      (10k and 100k items, 1,000 conversations)
      scripts/bench inspector --sizes 2000 --conversations 100 --repeat 5   (smoke run)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from bench_common import log, percentile, print_table, verdict

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the tests' headless Chromium

from contextwm.adapters.embedder_fake import HashingEmbedder  # noqa: E402
from contextwm.app import Service  # noqa: E402
from contextwm.settings import ServerSettings  # noqa: E402
from contextwm_client import Client, ImportItem, NewItem  # noqa: E402

PAGE = 200  # items per timeline screen, as the inspector serves them
SHOWN = 25  # conversations per page of a namespace's list


def timed(call: Callable[[], object], repeat: int) -> tuple[float, float]:
    """p50 and p90 in ms of call, after one warm-up."""
    call()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return percentile(times, 50), percentile(times, 90)


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as response:
        return bytes(response.read())


def load(client: Client, sizes: list[int], conversations: int) -> None:
    for size in sizes:
        log(f"importing a {size:,}-item conversation")
        done = client.import_items(
            (
                ImportItem(
                    f"c{size}",
                    NewItem(
                        content=f"turn {k}: the build on host {k % 97} took {k % 13} minutes",
                        role="user" if k % 2 == 0 else "assistant",
                    ),
                )
                for k in range(size)
            ),
            chunk_size=1000,
        )
        assert done.appended == size, done
    log(f"importing {conversations:,} small conversations into namespace many")
    client.import_items(
        (
            ImportItem(f"agent-{n:05d}", NewItem(content=f"note {k} of agent {n}"), "many")
            for n in range(conversations)
            for k in range(3)
        ),
        chunk_size=1000,
    )


Row = Callable[[str, Callable[[], object], Callable[[], object]], None]


def pages(client: Client, base: str, cid: str, size: int, row: Row) -> None:
    """The timeline's first and last screens and the usage chart of one conversation."""

    def screen(after: int) -> tuple[Callable[[], object], Callable[[], object]]:
        def ours() -> object:
            return fetch(f"{base}/api/timeline?conversation={cid}&after={after}")

        def baseline() -> object:
            token = str(after) if after else ""
            return (
                client.list_items(cid, page_size=PAGE, page_token=token),
                client.get_conversation(cid),
                client.list_context_edits(cid),
                client.list_checkpoints(cid),
                # The masked marks: the active context's size, then its rows about the screen.
                client.get_active_context(cid, page_size=1),
                client.get_active_context(cid, page_size=500, page_token=token),
            )

        return ours, baseline

    row(f"timeline, first screen ({size:,})", *screen(0))
    row(f"timeline, last screen ({size:,})", *screen(size - PAGE))
    row(
        f"usage chart ({size:,})",
        lambda: fetch(f"{base}/api/usage?conversation={cid}"),
        lambda: (all_items(client, cid), client.list_context_edits(cid), client.get_usage(cid)),
    )


def all_items(client: Client, cid: str) -> list[object]:
    """Every item, a thousand to a call, as the usage chart reads them."""
    items: list[object] = []
    token = ""
    while True:
        page = client.list_items(cid, page_size=1000, page_token=token)
        items.extend(page.entries)
        if not page.next_page_token:
            return items
        token = page.next_page_token


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="items per conversation")
    parser.add_argument("--conversations", type=int, default=1000, help="in namespace many")
    parser.add_argument("--repeat", type=int, default=20, help="timed calls per figure")
    parser.add_argument(
        "--browser", action=argparse.BooleanOptionalAction, default=True, help="Chromium too"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    data = Path(tempfile.mkdtemp(prefix="contextwm-bench-inspector-"))
    settings = ServerSettings(
        port=0, data_dir=data, indexer_process=False, inspector_port=0, grace_seconds=1.0
    )
    service = Service.start(settings, embedder=HashingEmbedder())
    base = f"http://127.0.0.1:{service.inspector_port}"
    rows: list[list[object]] = []
    first_screen: dict[int, float] = {}
    try:
        with Client(f"127.0.0.1:{service.port}") as client:
            load(client, sizes, args.conversations)

            def row(page: str, ours: Callable[[], object], baseline: Callable[[], object]) -> None:
                log(f"timing {page}")
                o50, o90 = timed(ours, args.repeat)
                b50, b90 = timed(baseline, args.repeat)
                rows.append(
                    [
                        page,
                        f"{o50:.1f}",
                        f"{o90:.1f}",
                        f"{b50:.1f}",
                        f"{b90:.1f}",
                        f"{o50 / b50:.2f}x",
                    ]
                )

            for size in sizes:
                pages(client, base, f"c{size}", size, row)
            ids = [f"agent-{n:05d}" for n in range(SHOWN)]
            row(
                f"conversations page ({args.conversations:,})",
                lambda: fetch(f"{base}/api/conversations?namespace=many"),
                lambda: (
                    client.get_stats(namespace="many", page_size=1000),
                    [client.get_conversation(c, namespace="many") for c in ids],
                    [client.get_usage(c, namespace="many") for c in ids],
                ),
            )
        if args.browser:
            from browser import chromium, wait
            from selenium.webdriver.common.by import By

            with chromium() as driver:
                for size in sizes:
                    log(f"opening the {size:,}-item timeline in Chromium")
                    drawn = []
                    for _ in range(5):
                        driver.get("about:blank")
                        driver.get(f"{base}/#/n/default/c/c{size}")
                        wait(
                            driver,
                            lambda d: d.find_elements(By.CSS_SELECTOR, "#timeline[data-rendered]"),
                        )
                        drawn.append(
                            float(
                                driver.execute_script(
                                    "return window.inspectorTimings.timelineSinceLoad"
                                )
                            )
                        )
                    drawn.sort()
                    first_screen[size] = percentile(drawn, 50)
    finally:
        service.stop(grace=0)
    print_table(
        "Inspector reads against the gRPC reads they are made of (ms; same run)",
        ["page", "ours p50", "ours p90", "gRPC p50", "gRPC p90", "p50 ratio"],
        rows,
    )
    if first_screen:
        print_table(
            "First screen of a timeline in headless Chromium (ms from navigation, p50 of 5)",
            ["items", "first screen", "goal < 1000 ms"],
            [[f"{s:,}", f"{ms:.0f}", verdict(ms < 1000)] for s, ms in first_screen.items()],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
