"""Context contributors: project docs, working files, the codebase map and retrieval hits as
candidate pieces of CONTEXT, each with its weight and its salience to the query."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from contextwm.budgets.text_trim import trim_at_boundary
from contextwm.domain.categories import ContributorType
from contextwm.domain.errors import ContextWMError
from contextwm.domain.items import ScoredItem
from contextwm.lru import Lru
from contextwm.ports.embedder import Embedder
from contextwm.ports.tokens import TokenCounter
from contextwm.ports.workspace import Workspace
from contextwm.window.window import Vector

# Working files offered per request: the newest this many the conversation's items name.
MAX_WORKING_FILES = 10
NO_WORKSPACE = (
    "no workspace: set the conversation's workspace_root or start the server with --workspace"
)


@dataclass(frozen=True, slots=True)
class Contribution:
    """A candidate piece of CONTEXT, or one that could not be offered (reason set).

    text is the piece as rendered, its own heading line included; tokens is what it costs
    in the response (its text and the separator before it).
    """

    type: ContributorType
    source: str  # a path, the doc's file name, "codebase", or "#seq" of a retrieval hit
    text: str
    tokens: int
    weight: float
    salience: float  # similarity to the query (or focus), 0..1
    detail: str = ""  # "content", "diff against HEAD", "trimmed from N tokens", ...
    items: tuple[ScoredItem, ...] = ()  # a retrieval hit and its neighbouring turn
    reason: str = ""  # why it was not offered: it was unreadable, or there is no workspace

    @property
    def score(self) -> float:
        """Its priority in CONTEXT: weight x salience."""
        return self.weight * self.salience

    def shows_file(self, path: str, content: str) -> bool:
        """Whether this is a working file shown whole (neither a diff nor trimmed) with exactly
        content, for path as an item names it (relative, or absolute inside the root)."""
        return (
            self.type is ContributorType.WORKING_FILES
            and self.detail == "content"
            and (path == self.source or path.endswith("/" + self.source))
            and self.text.endswith(f"\n```\n{content.rstrip()}\n```")
        )


# Rendered pieces by what decides them (heading, body, cap, encoding), so an unchanged file
# or doc is neither counted nor trimmed again.
PieceCache = Lru[tuple[object, ...], Contribution]


class SalienceCache:
    """Embeddings of contributor texts by content hash: an unchanged file is embedded once."""

    def __init__(self, embedder: Embedder, max_entries: int = 2048) -> None:
        self._embedder = embedder
        self._vectors: Lru[bytes, Vector] = Lru(max_entries)

    @property
    def hits(self) -> int:
        return self._vectors.hits

    @property
    def misses(self) -> int:
        return self._vectors.misses

    def saliences(self, texts: Sequence[str], query: Vector | None) -> list[float]:
        """Each text's cosine similarity to query, clamped to 0..1 (0 without a query)."""
        if query is None or not texts:
            return [0.0] * len(texts)
        keys = [_digest(t) for t in texts]
        known = {k: v for k in keys if (v := self._vectors.get(k)) is not None}
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in known}
        if missing:
            for k, v in zip(missing, self._embedder.embed(list(missing.values())), strict=True):
                known[k] = v
                self._vectors.put(k, v)
        return [min(1.0, max(0.0, float(np.dot(known[k], query)))) for k in keys]


def share_caps(
    weights: Mapping[ContributorType, float], context_max: int
) -> dict[ContributorType, int]:
    """The most tokens one piece of each type may take: its weight's share of CONTEXT's
    maximum, so one long file or doc cannot crowd out every other contributor."""
    total = sum(w for w in weights.values() if w > 0)
    return {t: int(context_max * w / total) if total else 0 for t, w in weights.items()}


class WorkspaceContributors:
    """Builds the workspace contributors of one request."""

    def __init__(
        self,
        workspace: Workspace | None,
        counter: TokenCounter,
        weights: Mapping[ContributorType, float],
        caps: Mapping[ContributorType, int],
        cache: PieceCache,
    ) -> None:
        self._ws = workspace
        self._cache = cache
        self._counter = counter
        self._weights = weights
        self._caps = caps

    def gather(self, paths: Sequence[str]) -> list[Contribution]:
        """Project docs, the codebase map and the working files (paths, newest first), with
        salience 0; unreadable ones come back with a reason. Types of weight 0 are skipped."""
        wanted = [
            t
            for t in (
                ContributorType.PROJECT_DOCS,
                ContributorType.CODEBASE_MAP,
                ContributorType.WORKING_FILES,
            )
            if self._weights[t] > 0
        ]
        if self._ws is None:
            return [self._left_out(t, "", NO_WORKSPACE) for t in wanted]
        out: list[Contribution] = []
        for t in wanted:
            if t is ContributorType.PROJECT_DOCS:
                out.extend(self._project_doc())
            elif t is ContributorType.CODEBASE_MAP:
                out.extend(self._codebase_map())
            else:
                out.extend(self._working_files(paths))
        return out

    def _working_files(self, paths: Sequence[str]) -> list[Contribution]:
        """The first MAX_WORKING_FILES distinct files of paths (as given or absolute)."""
        assert self._ws is not None
        t = ContributorType.WORKING_FILES
        out: list[Contribution] = []
        relatives: list[str] = []
        for path in paths:
            if len(relatives) >= MAX_WORKING_FILES:
                break
            try:
                relative = self._ws.relative(path)
            except ContextWMError as e:  # e.g. a symlink that now points outside
                out.append(self._left_out(t, path, _why(e)))
                continue
            if relative not in relatives:
                relatives.append(relative)
        files = self._ws.working_files(relatives, self._counter)
        for path, f in zip(relatives, files, strict=True):
            if isinstance(f, ContextWMError):  # gone, unreadable, too large
                out.append(self._left_out(t, path, _why(f)))
                continue
            fence = "diff" if f.kind == "diff" else ""
            detail = "diff against HEAD" if f.kind == "diff" else "content"
            heading = f"## Working file: {f.path} ({detail})"
            out.append(self._piece(t, f.path, heading, f.text, detail, fence))
        return out

    def _left_out(self, t: ContributorType, source: str, reason: str) -> Contribution:
        return Contribution(t, source, "", 0, self._weights[t], 0.0, reason=reason)

    def _piece(
        self,
        t: ContributorType,
        source: str,
        heading: str,
        body: str,
        detail: str,
        fence: str | None = None,
    ) -> Contribution:
        """The piece under its heading (in a code fence if one is named), its body trimmed at
        a paragraph or line to the type's cap."""

        def render(b: str) -> str:
            return (
                f"{heading}\n```{fence}\n{b.rstrip()}\n```"
                if fence is not None
                else f"{heading}\n{b.rstrip()}"
            )

        cap = self._caps[t]
        key = (t, source, heading, _digest(body), detail, fence, cap, self._counter.encoding)
        cached = self._cache.get(key)
        if cached is not None:
            return dataclasses.replace(cached, weight=self._weights[t])
        piece = self._render_piece(t, source, detail, body, render, cap)
        self._cache.put(key, piece)
        return piece

    def _render_piece(
        self,
        t: ContributorType,
        source: str,
        detail: str,
        body: str,
        render: Callable[[str], str],
        cap: int,
    ) -> Contribution:
        text = render(body)
        tokens = self._counter.count(text) + 1
        if tokens > cap:
            full = tokens
            # The frame's tokens, the separator, and one for a merge at the seam.
            room = cap - self._counter.count(render("")) - 2
            cut = trim_at_boundary(body, self._counter, max(0, room))
            text = render(cut)
            tokens = self._counter.count(text) + 1
            if not cut.strip() or tokens > cap:
                return self._left_out(
                    t, source, f"not even its first line fits its share of {cap} tokens"
                )
            detail = (
                f"{detail}, trimmed from {full} tokens" if detail else f"trimmed from {full} tokens"
            )
        return Contribution(t, source, text, tokens, self._weights[t], 0.0, detail)

    def _project_doc(self) -> list[Contribution]:
        assert self._ws is not None
        doc = self._ws.project_doc()
        if doc is None:
            return [self._left_out(ContributorType.PROJECT_DOCS, "", "the workspace root has none")]
        name, text = doc
        return [
            self._piece(ContributorType.PROJECT_DOCS, name, f"## Project docs: {name}", text, "")
        ]

    def _codebase_map(self) -> list[Contribution]:
        assert self._ws is not None
        t = ContributorType.CODEBASE_MAP
        heading = "## Codebase map"
        room = self._caps[t] - self._counter.count(heading + "\n") - 2
        body = self._ws.codebase_map(self._counter, max(0, room))
        if not body.strip():
            return [self._left_out(t, "codebase", "empty, or not even one line fits its share")]
        return [self._piece(t, "codebase", heading, body, "")]


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def _why(e: ContextWMError) -> str:
    return f"{e.code.value}: {e.message}"
