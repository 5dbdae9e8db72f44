"""The command line's output: text lines and blocks for people, and JSON for programs."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence, Set
from datetime import datetime
from typing import Any, TextIO

from contextwm_client import (
    ActiveEntry,
    AllocationReport,
    CategoryBudget,
    Checkpoint,
    Compaction,
    ContextEdit,
    Conversation,
    Event,
    Item,
    ScoredItem,
    StatsResult,
    StoreStats,
    Usage,
    WindowStats,
)

_PREVIEW_CHARS = 80


def counted(count: int, noun: str, *, grouped: bool = False) -> str:
    """A count with its noun in the right number: "1 item", "2 items" ("1,000 items" when
    grouped)."""
    number = f"{count:,}" if grouped else str(count)
    return f"{number} {noun if count == 1 else noun + 's'}"


def window_text(window: WindowStats) -> str:
    return (
        f"{window.item_count}/{window.item_limit} items, "
        f"{window.token_count}/{window.token_limit} tokens"
    )


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 1] + "…"


def item_line(item: Item) -> str:
    flags = ",".join(item.flags) or "-"
    kind = "" if item.kind == "message" else f"[{item.kind}] "
    return (
        f"{item.seq}\t{item.state}\t{item.role}\t{item.token_count} tok\t{flags}\t"
        f"{kind}{_preview(item.content)}"
    )


def scored_line(hit: ScoredItem) -> str:
    return (
        f"{hit.item.conversation_id}#{hit.seq}\t{hit.score:.3f}\t{hit.role}\t"
        f"{hit.timestamp.isoformat()}\t{_preview(hit.content)}"
    )


def conversation_line(conversation: Conversation) -> str:
    last = conversation.last_item_at.isoformat() if conversation.last_item_at else "-"
    return (
        f"{conversation.conversation_id}\t{counted(conversation.total_items, 'item')}\t"
        f"{conversation.state}\tlast {last}"
    )


def print_conversation(conversation: Conversation) -> None:
    current = conversation.settings
    settings = dataclasses.asdict(current)
    # Budgets and weights in the syntax of --budget and --weight.
    if current.category_budgets is not None:
        settings["category_budgets"] = " ".join(_budget_text(b) for b in current.category_budgets)
    if current.contributor_weights is not None:
        weights = current.contributor_weights.items()
        settings["contributor_weights"] = " ".join(f"{t}={w:g}" for t, w in weights)
    lines = {
        "conversation": f"{conversation.namespace}/{conversation.conversation_id}",
        "state": conversation.state,
        "items": f"{conversation.total_items} ({conversation.archived_items} archived, "
        f"last seq {conversation.last_seq})",
        "window": window_text(conversation.window),
        "created": conversation.created_at.isoformat(),
        "last item": conversation.last_item_at.isoformat() if conversation.last_item_at else "-",
        "pending embeddings": str(conversation.pending_embeddings),
        **{name.replace("_", " "): str(value) for name, value in settings.items()},
    }
    width = max(len(name) for name in lines)
    for name, value in lines.items():
        print(f"{name:<{width}}  {value}")


def _budget_text(budget: CategoryBudget) -> str:
    shares = (budget.share, budget.min_share, budget.max_share)
    return f"{budget.category}=" + ":".join("" if s is None else f"{s:g}" for s in shares)


def print_allocation(report: AllocationReport, out: TextIO) -> None:
    print(f"allocation: {report.allocated} tokens", file=out)
    for c in report.categories:
        print(
            f"{c.category}\tmin {c.minimum}\tmax {c.maximum}\tgranted {c.granted}\t"
            f"used {c.used}\tlent {c.lent}\tborrowed {c.borrowed}",
            file=out,
        )
    for piece in report.contributors:
        status = "chosen" if piece.chosen else "left out"
        print(
            f"{status}\t{piece.type}\t{piece.source}\tscore {piece.score:.3f}\t"
            f"{piece.tokens} tok\t{piece.reason or piece.detail or '-'}",
            file=out,
        )


def seq_ranges(seqs: Sequence[int]) -> str:
    """Writes seqs compactly: (3, 4, 5, 9) -> "3-5, 9"."""
    ranges: list[str] = []
    ordered = sorted(seqs)
    start = 0
    for i, seq in enumerate(ordered):
        if i + 1 == len(ordered) or ordered[i + 1] != seq + 1:
            first = ordered[start]
            ranges.append(str(first) if first == seq else f"{first}-{seq}")
            start = i + 1
    return ", ".join(ranges)


def usage_line(usage: Usage) -> str:
    if not usage.context_limit:
        return f"{usage.used_tokens} tokens ({usage.source}), no context limit"
    compact = ", compact now" if usage.should_compact else ""
    return (
        f"{usage.used_tokens}/{usage.usable_tokens} tokens ({usage.fill_ratio:.1%}, "
        f"{usage.source}), threshold {usage.threshold:.0%}{compact}"
    )


def print_usage(usage: Usage) -> None:
    o = usage.optimisations
    if usage.context_limit:
        limit = (
            f"{usage.context_limit} ({usage.reserved_reply_tokens} reserved for the reply, "
            f"{usage.usable_tokens} usable)"
        )
        fill = f"{usage.fill_ratio:.1%} of usable (threshold {usage.threshold:.0%})"
    else:
        limit, fill = "none (no automatic management)", "-"
    lines = {
        "model": usage.model or "-",
        "used": f"{usage.used_tokens} tokens ({usage.source}; active {usage.active_tokens}, "
        f"reported {usage.reported_tokens})",
        "limit": limit,
        "fill": fill,
        "compaction": "enabled" if usage.compaction_enabled else "disabled",
        "should compact": "yes" if usage.should_compact else "no",
        "compactions": str(usage.compactions),
        "active items": str(usage.active_items),
        "masked": f"{o.masked_items} tool outputs ({o.masked_tokens_saved} tokens saved)",
        "duplicate reads": f"{o.duplicate_reads} ({o.duplicate_tokens_saved} tokens saved)",
        "truncated": f"{counted(o.truncated_items, 'item')} ({o.truncated_tokens} tokens)",
    }
    width = max(len(name) for name in lines)
    for name, value in lines.items():
        print(f"{name:<{width}}  {value}")
    if usage.summary_request:
        print()
        print("summary request (send it to the LLM, then `contextwm compact --summary-file`):")
        print(usage.summary_request)


def entry_line(entry: ActiveEntry) -> str:
    tokens = f"{entry.token_count} tok"
    if entry.original_tokens != entry.token_count:
        tokens += f" (of {entry.original_tokens})"
    kind = "" if entry.kind == "message" else f"[{entry.kind}] "
    return (
        f"{entry.seq or '-'}\t{entry.role}\t{entry.treatment}\t{tokens}\t"
        f"{kind}{_preview(entry.content)}"
    )


def compaction_text(compaction: Compaction) -> str:
    how = "extractive summary" if compaction.extractive else "summary given"
    undone = " (undone)" if compaction.undone else ""
    return (
        f"compaction {compaction.number} ({how}){undone}: marker seq {compaction.marker_seq}, "
        f"{counted(compaction.items_archived, 'item')} left the active context, "
        f"{compaction.tokens_before} -> {compaction.tokens_after} tokens"
    )


def checkpoint_text(checkpoint: Checkpoint) -> str:
    return (
        f"{checkpoint.name} at seq {checkpoint.last_seq} ({checkpoint.active_tokens} active "
        f"tokens, {counted(checkpoint.compactions, 'compaction')})"
    )


def checkpoint_line(checkpoint: Checkpoint) -> str:
    return (
        f"{checkpoint.name}\t{checkpoint.created_at.isoformat()}\t"
        f"seq {checkpoint.last_seq}\t{checkpoint.active_tokens} tok\t"
        f"{counted(checkpoint.compactions, 'compaction')}"
    )


def _edit_text(edit: ContextEdit) -> str:
    related = f" -> {edit.related_seq}" if edit.related_seq else ""
    undone = f" (undone {edit.undone_at.isoformat()})" if edit.undone_at else ""
    detail = f"; {edit.detail}" if edit.detail else ""
    return (
        f"{edit.kind} {seq_ranges(edit.seqs) or '-'}{related}, "
        f"{edit.tokens_saved} tokens saved{undone}{detail}"
    )


def edit_line(edit: ContextEdit) -> str:
    return f"{edit.id}\t{edit.created_at.isoformat()}\t{_edit_text(edit)}"


def event_line(event: Event) -> str:
    # By the part that is set rather than by kind, so that a kind this CLI does not know yet
    # still prints what it carries.
    if event.usage is not None:
        detail = usage_line(event.usage)
    elif event.compaction is not None:
        detail = compaction_text(event.compaction)
    elif event.edit is not None:
        detail = _edit_text(event.edit)
    elif event.checkpoint is not None:
        detail = checkpoint_text(event.checkpoint)
        if event.kind == "checkpoint_restored":
            detail += f": {counted(event.reverted_items, 'item')} reverted"
    elif event.eviction_seqs:
        detail = f"archived {seq_ranges(event.eviction_seqs)}"
    elif event.erased_seqs:
        detail = f"erased {seq_ranges(event.erased_seqs)}"
    elif event.kind == "gap":
        detail = f"{event.missed} events missed (dropped by retention)"
    else:
        detail = "-"
    return f"{event.id}\t{event.created_at.isoformat()}\t{event.kind}\t{detail}"


_STATS_COLUMNS = (
    "conversation",
    "items",
    "window",
    "archived",
    "compacted",
    "reverted",
    "tokens",
    "vectors",
    "missing",
    "index",
    "oldest",
    "newest",
)


def stats_table(result: StatsResult, *, namespaces: bool, total: bool) -> list[str]:
    """The lines of a table of the scope's conversations and, if total, its totals.

    Args:
        result: Every conversation of the scope, with the scope's totals.
        namespaces: Name each conversation with its namespace (namespace/id).
        total: End with the row of the totals.
    """
    rows = [
        _stats_row(
            f"{c.namespace}/{c.conversation_id}" if namespaces else c.conversation_id, c.stats
        )
        for c in result.conversations
    ]
    if total:
        count = result.conversation_count
        plural = "" if count == 1 else "s"
        rows.append(_stats_row(f"total ({count} conversation{plural})", result.total))
    # Names and times read from the left, counts and sizes line up on the right.
    left = {0, len(_STATS_COLUMNS) - 2, len(_STATS_COLUMNS) - 1}
    lines = aligned([list(_STATS_COLUMNS), *rows], left)
    return [*lines, f"vectors of {result.model}; index: FAISS files as last saved; times in UTC"]


def aligned(table: Sequence[Sequence[str]], left: Set[int]) -> list[str]:
    """A table's rows as lines of columns two spaces apart, the columns in left aligned to
    the left, the others to the right."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return [
        "  ".join(
            cell.ljust(width) if i in left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in table
    ]


def _stats_row(name: str, stats: StoreStats) -> list[str]:
    def when(moment: datetime | None) -> str:
        return moment.strftime("%Y-%m-%d %H:%M") if moment else "-"

    return [
        name,
        f"{stats.items:,}",
        f"{stats.window.items:,}",
        f"{stats.archived.items:,}",
        f"{stats.compacted.items:,}",
        f"{stats.reverted.items:,}",
        f"{stats.tokens:,}",
        f"{stats.vectors:,}",
        f"{stats.missing_vectors:,}",
        human_bytes(stats.index_bytes),
        when(stats.oldest_item_at),
        when(stats.newest_item_at),
    ]


def human_bytes(count: int) -> str:
    """A size in binary units: 512 -> "512 B", 1536 -> "1.5 KiB"."""
    if count < 1024:
        return f"{count} B"
    size = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        size /= 1024
        if size < 1024 or unit == "TiB":
            break
    return f"{size:.1f} {unit}"


def not_json(e: json.JSONDecodeError) -> str:
    """Why a text is not JSON, and where; some of the json module's messages end in "at"
    already ("Invalid control character at")."""
    return f"not JSON ({e.msg.removesuffix(' at')} at column {e.colno})"


def to_json(value: Any, *, indent: int | None = 2) -> str:
    """Renders a result dataclass, or a list of them, as JSON (datetimes as ISO 8601).

    Args:
        value: The dataclass or list.
        indent: Indentation; None writes one line (JSON lines, for streams).
    """

    def default(obj: object) -> str:
        if isinstance(obj, datetime):
            return obj.isoformat()
        raise TypeError(f"not JSON serialisable: {type(obj).__name__}")

    data = (
        [dataclasses.asdict(v) for v in value]
        if isinstance(value, list)
        else dataclasses.asdict(value)
    )
    return json.dumps(data, indent=indent, ensure_ascii=False, default=default)
