"""The active context: what an agent sends its LLM, with masked, replaced and truncated items."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from contextwm.domain.active import (
    ActiveEntry,
    ActiveRow,
    ActiveTotals,
    Replacement,
    Treatment,
)
from contextwm.llm_context.truncation_ranges import truncation_notice
from contextwm.ports.tokens import TokenCounter


def mask_placeholder(tool: str | None, seq: int, tokens: int) -> str:
    """The one line shown instead of a masked tool output.

    Args:
        tool, seq, tokens: the tool's name (None: unknown), the item's seq and stored tokens.

    Returns:
        The placeholder text.
    """
    name = f"tool {tool}" if tool else "tool"
    return (
        f"[output of {name} at seq {seq} omitted ({tokens:,} tokens); "
        "the stored item is unchanged and searchable]"
    )


@dataclass(frozen=True, slots=True)
class _Run:
    """A contiguous run of truncated entries, shown as one notice."""

    end: int  # the position just after the run
    items: int
    tokens: int
    notice_tokens: int


class ActiveContext:
    """The active context of one conversation, kept current item by item.

    Rules: entries run from the last compaction marker on, in seq order. A truncated entry
    is not a row; each contiguous run of them is one notice row (role "user") in its place.
    A replaced entry shows its Replacement. A tool output with at least mask_after_turns
    non-truncated assistant entries after it shows a placeholder (0 switches masking off),
    unless it is replaced or the placeholder would not be smaller than the item.

    append and totals are O(1) amortized: running sums are kept, and since the masking
    boundary only moves forward on append, a cursor visits each entry once. The other
    changes rebuild in O(n). Not thread-safe: the owner serializes calls.

    Args:
        counter: counts placeholders and notices in the conversation's encoding.
        mask_after_turns: assistant turns after which a tool output is masked; 0 for never.
    """

    def __init__(self, counter: TokenCounter, *, mask_after_turns: int = 10) -> None:
        self._counter = counter
        self._mask_after = _checked_turns(mask_after_turns)
        self._entries: list[ActiveEntry] = []
        self._position: dict[int, int] = {}  # seq -> index into _entries
        self._truncated: set[int] = set()
        self._replaced: dict[int, Replacement] = {}
        self._masked: dict[int, int] = {}  # seq -> placeholder tokens, of entries masked now
        # Counting is the slow part: each placeholder is counted once.
        self._placeholder_tokens: dict[tuple[int, str | None, int], int] = {}
        self._runs: dict[int, _Run] = {}  # by start position
        self._assistants: list[int] = []  # positions of the non-truncated assistant entries
        self._cursor = 0  # entries before it have been considered for masking
        self._zero_sums()

    def reset(
        self,
        entries: Iterable[ActiveEntry],
        truncated: Iterable[int] = (),
        replacements: Iterable[Replacement] = (),
    ) -> None:
        """Rebuilds the view, after a compaction, a checkpoint restore or a load.

        Args:
            entries: the items; those before the last compaction marker among them are dropped.
            truncated: seqs removed by truncations; unknown seqs are ignored.
            replacements: duplicate-read notices; for unknown or truncated seqs, ignored.

        Raises:
            ValueError: when two entries share a seq.
        """
        ordered = sorted(entries, key=lambda e: e.seq)
        markers = [i for i, e in enumerate(ordered) if e.kind == "compaction"]
        ordered = ordered[markers[-1] :] if markers else ordered
        position = {e.seq: i for i, e in enumerate(ordered)}
        if len(position) != len(ordered):  # checked before anything changes
            raise ValueError("active context entries must have distinct seqs")
        self._entries, self._position = ordered, position
        self._truncated = {s for s in truncated if s in self._position}
        self._replaced = {r.seq: r for r in replacements if r.seq in self}
        # Keep only the counts that can still be used, so the cache stays bounded.
        cache = self._placeholder_tokens
        self._placeholder_tokens = {k: v for k, v in cache.items() if k[0] in self._position}
        self._recompute()

    def append(self, entry: ActiveEntry) -> None:
        """Adds the newest item; a compaction marker starts the active context afresh.

        Args:
            entry: the item, its seq larger than any before.

        Raises:
            ValueError: when the seq is not larger than the last entry's.
        """
        if self._entries and entry.seq <= self._entries[-1].seq:
            raise ValueError(f"seq {entry.seq} is not after {self._entries[-1].seq}")
        if entry.kind == "compaction":
            self.reset([entry])
            return
        position = len(self._entries)
        self._entries.append(entry)
        self._position[entry.seq] = position
        self._add(entry, 1)
        if entry.role == "assistant":
            self._assistants.append(position)
            self._advance_mask()

    def truncate(self, seqs: Iterable[int]) -> None:
        """Removes items from the view, in O(n).

        Args:
            seqs: e.g. item_seqs() at the indices truncation_range chose; inactive ones are
                ignored.
        """
        new = {s for s in seqs if s in self}
        if new:
            self._truncated |= new
            for seq in new:  # a truncated item counts only as truncated
                self._replaced.pop(seq, None)
            self._recompute()

    def drop(self, seqs: Iterable[int]) -> None:
        """Forgets items removed from the store (by retention), in O(n).

        Args:
            seqs: the removed items; those not in the view are ignored.
        """
        gone = {s for s in seqs if s in self._position}
        if gone:
            self.reset(
                [e for e in self._entries if e.seq not in gone],
                self._truncated - gone,
                [r for s, r in self._replaced.items() if s not in gone],
            )

    def replace(self, replacement: Replacement) -> None:
        """Shows a duplicate-read notice instead of an item (it wins over masking).

        Args:
            replacement: the notice; ignored when its seq is not active.
        """
        if replacement.seq in self:
            entry = self._entries[self._position[replacement.seq]]
            self._add(entry, -1)
            self._masked.pop(entry.seq, None)
            self._replaced[entry.seq] = replacement
            self._add(entry, 1)

    def set_mask_after_turns(self, n: int) -> None:
        """Changes the masking threshold, in O(n).

        Args:
            n: assistant turns after which a tool output is masked; 0 switches masking off.

        Raises:
            ValueError: for a negative n.
        """
        if _checked_turns(n) != self._mask_after:
            self._mask_after = n
            self._recompute()

    def item_seqs(self) -> list[int]:
        """The seqs of the remaining (non-truncated) items, in order."""
        return [e.seq for e in self._entries if e.seq not in self._truncated]

    def item_roles(self) -> list[str]:
        """The roles of the remaining items, in the order of item_seqs()."""
        return [e.role for e in self._entries if e.seq not in self._truncated]

    def rows(self, start: int = 0, stop: int | None = None) -> list[ActiveRow]:
        """The rows of the view, or a page of them: rows()[start:stop], building only that.

        Args:
            start, stop: row indices, >= 0 (stop None: to the end); notices count as rows.

        Raises:
            ValueError: for a negative index.
        """
        if start < 0 or (stop is not None and stop < 0):
            raise ValueError("row indices must not be negative")
        out: list[ActiveRow] = []
        index = position = 0
        while position < len(self._entries) and (stop is None or index < stop):
            run = self._runs.get(position)
            if run is not None:
                if index >= start:
                    text = truncation_notice(run.items, run.tokens)
                    notice = Treatment.TRUNCATION_NOTICE
                    out.append(ActiveRow(None, "user", run.notice_tokens, run.tokens, notice, text))
                position = run.end
            else:
                if index >= start:
                    out.append(self._row(self._entries[position]))
                position += 1
            index += 1
        return out

    def row_count(self) -> int:
        return self._items + len(self._runs)

    def totals(self) -> ActiveTotals:
        """The view's sums, kept current: O(1)."""
        return ActiveTotals(
            tokens=self._tokens,
            items=self._items,
            stored_tokens=self._stored,
            masked_items=self._masked_items,
            masked_saved=self._masked_saved,
            duplicate_items=self._duplicate_items,
            duplicate_saved=self._duplicate_saved,
            truncated_items=self._truncated_items,
            truncated_tokens=self._truncated_tokens,
        )

    def __contains__(self, seq: object) -> bool:
        """Whether seq is an active, non-truncated item."""
        return seq in self._position and seq not in self._truncated

    # ------------------------------------------------------------ internals

    def _zero_sums(self) -> None:
        self._tokens = self._items = self._stored = self._masked_items = self._masked_saved = 0
        self._duplicate_items = self._duplicate_saved = 0
        self._truncated_items = self._truncated_tokens = 0

    def _row(self, entry: ActiveEntry) -> ActiveRow:
        shown: tuple[int, Treatment, str | None] = (entry.tokens, Treatment.AS_IS, None)
        if (replacement := self._replaced.get(entry.seq)) is not None:
            shown = (replacement.tokens, Treatment.DUPLICATE_READ, replacement.text)
        elif (placeholder := self._masked.get(entry.seq)) is not None:
            text = mask_placeholder(entry.tool, entry.seq, entry.tokens)
            shown = (placeholder, Treatment.MASKED, text)
        return ActiveRow(entry.seq, entry.role, shown[0], entry.tokens, shown[1], shown[2])

    def _add(self, entry: ActiveEntry, sign: int) -> None:
        """Adds (sign 1) or takes away (-1) a non-truncated entry's share of the sums."""
        self._items += sign
        self._stored += sign * entry.tokens
        shown = entry.tokens
        if (replacement := self._replaced.get(entry.seq)) is not None:
            shown = replacement.tokens
            self._duplicate_items += sign
            self._duplicate_saved += sign * (entry.tokens - shown)
        elif (placeholder := self._masked.get(entry.seq)) is not None:
            shown = placeholder
            self._masked_items += sign
            self._masked_saved += sign * (entry.tokens - shown)
        self._tokens += sign * shown

    def _advance_mask(self) -> None:
        """Masks the tool outputs the boundary (the n-th last assistant) has passed."""
        n = self._mask_after
        if n == 0 or len(self._assistants) < n:
            return
        boundary = self._assistants[-n]
        while self._cursor < boundary:
            entry = self._entries[self._cursor]
            self._cursor += 1
            if entry.role != "tool" or entry.seq in self._truncated or entry.seq in self._replaced:
                continue
            key = (entry.seq, entry.tool, entry.tokens)
            placeholder = self._placeholder_tokens.get(key)
            if placeholder is None:
                text = mask_placeholder(entry.tool, entry.seq, entry.tokens)
                placeholder = self._placeholder_tokens[key] = self._counter.count(text)
            # A tiny output stays: its placeholder would cost more than it saves.
            if placeholder < entry.tokens:
                self._add(entry, -1)
                self._masked[entry.seq] = placeholder
                self._add(entry, 1)

    def _recompute(self) -> None:
        """Rebuilds runs, masking and sums from the entries, truncations and replacements."""
        self._zero_sums()
        self._masked, self._assistants, self._cursor = {}, [], 0
        runs: dict[int, _Run] = {}
        entries, truncated = self._entries, self._truncated
        position = 0
        while position < len(entries):
            entry = entries[position]
            if entry.seq not in truncated:
                self._add(entry, 1)
                if entry.role == "assistant":
                    self._assistants.append(position)
                position += 1
                continue
            start, tokens = position, 0
            while position < len(entries) and entries[position].seq in truncated:
                tokens += entries[position].tokens
                position += 1
            # Runs are few (one per truncation at most), so each rebuild counts them anew.
            counted = self._counter.count(truncation_notice(position - start, tokens))
            runs[start] = _Run(position, position - start, tokens, counted)
            self._truncated_items += position - start
            self._truncated_tokens += tokens
            self._tokens += counted
        self._runs = runs
        self._advance_mask()


def _checked_turns(n: int) -> int:
    if n < 0:
        raise ValueError(f"mask_after_turns must be >= 0, got {n}")
    return n
