"""The texts of a compaction: the summary request, the extractive fallback and the marker."""

from __future__ import annotations

from collections.abc import Sequence

from contextwm.domain.items import Flag, Item
from contextwm.llm_context.ledger import LEDGER_HEADING
from contextwm.ports.tokens import TokenCounter

SUMMARY_REQUEST = """<context-compaction-request>
Your context window is almost full, so this conversation is about to be compacted. Write a \
complete and specific summary of it now. Your summary will replace the conversation history \
for the rest of the task: whatever it leaves out will no longer be in front of you.

Organise it in these four headed parts:

1. Original task: what the user asked for, in the user's own terms.
2. Progress made:
   - files created, changed or examined
   - tools and commands used, and what they returned
   - problems met, and how each was fixed
   - the current state of the work
3. Working memory:
   - the project's structure and the files that matter
   - dependencies and configuration
   - conventions and patterns you found
   - decisions taken, and the reasons for them
4. Next steps:
   - tasks still pending
   - known issues not yet resolved

Be concrete: give exact names, paths, commands and short code snippets rather than \
describing them. The user's instructions listed below, if any, must be carried over into \
your summary verbatim, word for word. Do not call any tools in this reply; answer in plain \
text only.
</context-compaction-request>"""

EXTRACTIVE_LABEL = (
    "[Extractive summary written by contextwm without an LLM:"
    " selected items quoted from the conversation]"
)
DEFAULT_CLIP_CHARS = 1200
CONTINUE_LINE = (
    "The context was compacted: earlier items are archived and can be searched."
    " Continue the task from the summary above."
)
_CLOSE_TAG = "</context-compaction>"
_LATEST_USER_ITEMS = 3
_MIN_CLIP_CHARS = 60
# An earlier summary stands for many items, so it may run longer than one quoted item.
_EARLIER_CLIP_FACTOR = 3

# Sections in output order; their indexes are the section ids below.
_HEADINGS = (
    "## Earlier summary",
    "## First user request",
    "## Pinned items",
    "## Errors and solutions",
    "## Latest user requests",
)
_EARLIER, _FIRST, _PINNED, _ERRORS, _LATEST = range(len(_HEADINGS))


def summary_request(ledger_text: str) -> str:
    """The message that asks the agent's LLM for a summary.

    Args:
        ledger_text: the rendered ledger ("" for none); its instructions are to be kept.

    Returns:
        SUMMARY_REQUEST, then a blank line and the ledger when there is one.
    """
    return f"{SUMMARY_REQUEST}\n\n{ledger_text}" if ledger_text else SUMMARY_REQUEST


def marker_text(number: int, summary: str, ledger_text: str, *, extractive: bool) -> str:
    """The first item of the new active context after a compaction.

    Args:
        number: the compaction's number in the conversation, from 1.
        summary: the LLM's or the extractive summary.
        ledger_text: the rendered ledger ("" for none).
        extractive: whether contextwm wrote the summary itself.

    Returns:
        The summary and ledger inside <context-compaction> tags, then a line telling the
        agent how to go on.
    """
    attributes = f' number="{number}"' + (' extractive="true"' if extractive else "")
    lines = [f"<context-compaction{attributes}>"]
    if summary.strip():
        lines.append(summary.strip())
    if ledger_text.strip():
        lines.extend(["", ledger_text.strip()])
    lines.extend([_CLOSE_TAG, CONTINUE_LINE])
    return "\n".join(lines)


def extractive_summary(
    items: Sequence[Item],
    counter: TokenCounter,
    max_tokens: int,
    *,
    clip_chars: int = DEFAULT_CLIP_CHARS,
) -> str:
    """A summary made of quoted items, for when no LLM summary can be had.

    Sections (each left out when empty): the earlier summary, the first user request,
    pinned items, errors and solutions, the last three user requests. No item is quoted
    twice. Over budget, whole entries go first, lowest priority first (errors/solutions, the
    earlier summary, pinned, the first request, then the latest requests, oldest first
    within each); when not even the top entry fits, every quote is clipped harder.

    Args:
        items: the active context being compacted, in seq order.
        counter: the conversation's token counter.
        max_tokens: the most tokens the summary may have.
        clip_chars: the longest a quoted item may be before its middle is cut out.

    Returns:
        EXTRACTIVE_LABEL and the sections; the label alone when nothing else fits; "" when
        not even the label fits.
    """
    if counter.count(EXTRACTIVE_LABEL) > max_tokens:
        return ""
    chosen = _choose(items)
    clip = max(clip_chars, _MIN_CLIP_CHARS)
    while chosen:
        text = _fit(chosen, counter, max_tokens, clip)
        if text is not None:
            return text
        if clip == _MIN_CLIP_CHARS:
            break
        clip = max(_MIN_CLIP_CHARS, clip // 2)
    return EXTRACTIVE_LABEL


def _choose(items: Sequence[Item]) -> list[tuple[int, Item]]:
    """(section, item) pairs, most important first."""
    messages = [i for i in items if i.kind != "compaction" and i.content.strip()]
    users = [i for i in messages if i.role == "user"]
    first = users[:1]
    latest = users[1:][-_LATEST_USER_ITEMS:]
    shown = {i.seq for i in first + latest}
    pinned = [i for i in messages if i.flags & Flag.PINNED and i.seq not in shown]
    shown |= {i.seq for i in pinned}
    telling = Flag.ERROR | Flag.SOLUTION
    errors = [i for i in messages if i.flags & telling and i.seq not in shown]
    earlier = [i for i in items if i.kind == "compaction" and _unwrap(i.content)][-1:]
    return [
        *((_LATEST, i) for i in reversed(latest)),
        *((_FIRST, i) for i in first),
        *((_PINNED, i) for i in reversed(pinned)),
        *((_EARLIER, i) for i in earlier),
        *((_ERRORS, i) for i in reversed(errors)),
    ]


def _fit(
    chosen: list[tuple[int, Item]], counter: TokenCounter, max_tokens: int, clip: int
) -> str | None:
    """The longest priority prefix of chosen that fits at this clip; None if none does."""
    quotes = [_quote(section, item, clip) for section, item in chosen]
    # Every piece (label, heading, quote) ends in a newline and the next starts with no
    # space, so no token spans two pieces: their counts add up to the text's, plus at most
    # one for the final blank line the text leaves out. The text is counted exactly below.
    total = counter.count(EXTRACTIVE_LABEL + "\n\n")
    opened: set[int] = set()
    n = 0
    for (section, _), quote in zip(chosen, quotes, strict=True):
        cost = counter.count(quote + "\n\n")
        if section not in opened:
            cost += counter.count(_HEADINGS[section] + "\n")
        if total + cost > max_tokens + 1:
            break
        total += cost
        opened.add(section)
        n += 1
    while n:
        text = _compose(chosen[:n], quotes[:n])
        if counter.count(text) <= max_tokens:
            return text
        n -= 1
    return None


def _compose(chosen: list[tuple[int, Item]], quotes: list[str]) -> str:
    parts = [EXTRACTIVE_LABEL]
    for section, heading in enumerate(_HEADINGS):
        entries = sorted(
            (item.seq, quote)
            for (s, item), quote in zip(chosen, quotes, strict=True)
            if s == section
        )
        if entries:
            parts.append(heading + "\n" + "\n\n".join(quote for _, quote in entries))
    return "\n\n".join(parts)


def _quote(section: int, item: Item, clip: int) -> str:
    if section == _EARLIER:
        return _clip(_unwrap(item.content), clip * _EARLIER_CLIP_FACTOR)
    return f"[seq {item.seq}, {item.role}] " + _clip(item.content.strip(), clip)


def _clip(text: str, limit: int) -> str:
    """Keeps the start and the end: a request's ask and a log's verdict sit at the edges."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head - 1
    return text[:head] + "…" + (text[-tail:] if tail > 0 else "")


def _unwrap(content: str) -> str:
    """The summary inside an earlier marker, without its tags or its (superseded) ledger."""
    text = content.strip()
    if text.startswith("<context-compaction"):
        newline = text.find("\n")
        text = text[newline + 1 :] if newline >= 0 else ""
        end = text.find(_CLOSE_TAG)
        if end >= 0:
            text = text[:end]
    # The new marker carries the whole ledger, so the old copy would only repeat it.
    cut = text.find(LEDGER_HEADING)
    if cut >= 0:
        text = text[:cut]
    return text.strip()
