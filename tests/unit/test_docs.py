"""The README stays a short front page that links every page of docs/, and its links resolve
as GitHub resolves them. (The pages' own links, anchors and nav are checked by
`mkdocs build --strict` in scripts/check; the README is not part of that build.)"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "index.md")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def without_code(markdown: str) -> str:
    """The text outside fenced code blocks."""
    return re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#{1,6} (.+)$", without_code(page.read_text()), flags=re.M)
    return {github_anchor(h) for h in headings}


def relative_links(page: Path) -> list[str]:
    links = LINK.findall(without_code(page.read_text()))
    return [link for link in links if not re.match(r"[a-z]+:", link)]


def test_the_readme_fits_on_a_screen() -> None:
    assert len(README.read_text().splitlines()) <= 300


def test_the_readme_and_the_site_home_link_every_page() -> None:
    readme = {link.split("#")[0] for link in relative_links(README)}
    assert [p for p in PAGES if f"docs/{p}" not in readme] == []
    home = {link.split("#")[0] for link in relative_links(ROOT / "docs" / "index.md")}
    assert [p for p in PAGES if p not in home] == []


def test_the_readmes_links_resolve() -> None:
    for readme in (README, ROOT / "client" / "README.md"):
        for link in relative_links(readme):
            path, _, anchor = link.partition("#")
            target = (readme.parent / path).resolve() if path else readme
            assert target.exists(), f"{readme.name}: {link}"
            if anchor:
                assert anchor in anchors(target), f"{readme.name}: {link}"
