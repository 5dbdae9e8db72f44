"""The text a model reads from each tool: a short header or footer around the server's text."""

from __future__ import annotations

from datetime import datetime

from contextwm.mcp_server.results import (
    ChunkResult,
    ContextResult,
    EditResult,
    HistoryResult,
    NoteResult,
    SearchPageResult,
    SessionResult,
)

NEXT_PAGE_TOOL = "search_files_next_page"
"""The tool a search page's footer tells the model to call to continue."""


def chunk_text(chunk: ChunkResult) -> str:
    """`path lines a-b of N (chunk i of n; more: yes)`, a note if the cut differs from the one
    asked for, then the lines."""
    if chunk.total_lines == 0:
        return f"{chunk.path} is empty (0 lines)"
    more = "yes" if chunk.has_more else "no"
    header = (
        f"{chunk.path} lines {chunk.first_line}-{chunk.last_line} of {chunk.total_lines}"
        f" (chunk {chunk.chunk} of {chunk.total_chunks}; more: {more})"
    )
    if chunk.fallback:
        header += f"\nnote: {chunk.fallback}"
    return f"{header}\n{chunk.content}"


def _counted(count: int, noun: str) -> str:
    """ "1 file", "2 files": a count with its noun in the right number."""
    return f"{count} {noun if count == 1 else noun + 's'}"


def search_page_text(page: SearchPageResult) -> str:
    """The page's text, then a line on what remains and the token that continues."""
    if page.total_matches == 0:
        return f"No matches ({_counted(page.files_searched, 'file')} searched)."
    if page.next_page_token:
        footer = (
            f"{_counted(page.remaining_matches, 'more matching line')} in"
            f" {_counted(page.remaining_files, 'file')};"
            f' continue with {NEXT_PAGE_TOOL}(page_token="{page.next_page_token}").'
        )
    else:
        footer = (
            f"End of results: {_counted(page.total_matches, 'matching line')} in"
            f" {_counted(page.total_files, 'file')}."
        )
    return f"{page.text.rstrip()}\n\n{footer}"


def edit_text(edit: EditResult) -> str:
    """Where the replacement now is, and the file's new hash."""
    return (
        f"Edited {edit.path}: the replacement is at lines {edit.first_line}-{edit.last_line}"
        f" (sha256 now {edit.sha256_after})."
    )


def session_text(session: SessionResult) -> str:
    """The checked tool's verdict (if one was asked about), the states, the tools, the view."""
    lines: list[str] = []
    if session.check is not None:
        check = session.check
        verdict = "available" if check.allowed else f"not available: {check.reason}"
        lines.append(f"{check.tool}: {verdict}")
    if session.states:
        lines.append(
            f"states: {', '.join(session.states)} (deciding: {session.deciding_state or 'none'})"
        )
    else:
        lines.append("states: none")
    lines.append(f"tools available: {', '.join(session.tools) or 'none'}")
    if session.view is not None:
        view = session.view
        seen = ", ".join(str(chunk) for chunk in view.seen_chunks)
        lines.append(
            f"viewing: {view.path}, chunk {view.chunk} of {view.total_chunks} (seen: {seen})"
        )
    return "\n".join(lines)


def context_text(context: ContextResult) -> str:
    """The rendered context, then a line on the tokens it took and the items in it."""
    footer = (
        f"[{context.total_tokens} of {context.budget} tokens: {context.recent_items} recent"
        f" items, {context.history_items} from history"
    )
    if context.recent_omitted:
        footer += f", {context.recent_omitted} recent items left out"
    footer += "]"
    return f"{context.text.rstrip()}\n\n{footer}"


def history_text(history: HistoryResult) -> str:
    """Each hit as `#seq role time (score s)` and its content, best first."""
    if not history.hits:
        return f"Nothing in the history matches {history.query!r}."
    blocks = []
    for hit in history.hits:
        when = datetime.fromisoformat(hit.timestamp).strftime("%Y-%m-%d %H:%M UTC")
        blocks.append(f"#{hit.seq} {hit.role} {when} (score {hit.score:.2f})\n{hit.content}")
    return "\n\n".join(blocks)


def note_text(note: NoteResult) -> str:
    """The item's seq and size, and the items it pushed to the archive."""
    if note.duplicate:
        return f"Already appended as item #{note.seq}."
    flags = f"; flags: {', '.join(note.flags)}" if note.flags else ""
    text = f"Appended item #{note.seq} ({note.token_count} tokens{flags})."
    if note.evicted_seqs:
        text += f" {len(note.evicted_seqs)} older items moved from the window to the archive."
    return text
