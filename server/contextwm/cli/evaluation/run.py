"""Asks a running server every labelled query at every budget and scores what comes back
beside the simple selectors filling the same budget with the same conversation's items."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from contextwm_client import Client, Item

from contextwm.cli.evaluation.labels import Label
from contextwm.cli.evaluation.lead import COVERAGE, lead
from contextwm.cli.evaluation.selectors import (
    SELECTORS,
    TURN_OVERHEAD,
    Bm25,
    Turn,
    fill,
    rankings,
)
from contextwm.cli.render import aligned

SERVICE = "contextwm"
# The dense selector ranks by the server's own similarities, read through a dense search.
MAX_DENSE = 1000

TurnCost = Callable[[Item, Any], int]


def role_and_content(item: Item, counter: Any) -> int:
    """A turn's cost to a selector: ``role: content`` plus TURN_OVERHEAD tokens."""
    return int(counter.count(f"{item.role}: {item.content}")) + TURN_OVERHEAD


@dataclass(frozen=True, slots=True)
class Outcome:
    """One query asked of one selector at one budget."""

    label: Label
    who: str
    budget: int
    expected: int  # how many items the query expects
    found: int  # how many of them came back
    tokens: int = 0  # what the service returned (0 for the selectors)
    seconds: float = 0.0  # how long the service took (0 for the selectors)

    @property
    def hit(self) -> bool:
        return self.found == self.expected


def evaluate(
    client: Client,
    labels: Sequence[Label],
    budgets: Sequence[int],
    *,
    service: str = SERVICE,
    options: Mapping[str, Any] | None = None,
    selectors: bool = True,
    cost: TurnCost = role_and_content,
) -> list[Outcome]:
    """Every label asked at its budgets (or these) of the service and, with selectors, of
    the simple selectors on the conversation's items.

    Args:
        client: connected to the server holding the conversations.
        labels: the labelled queries.
        budgets: token budgets for labels that name none.
        service: the name the service's outcomes go under.
        options: more get_context options, e.g. {"mode": "dense"}.
        selectors: whether to score the selectors too.
        cost: a turn's tokens to a selector, from the item and the conversation's counter.

    Raises:
        LabelError: a label expects items the conversation does not have.
        ContextWMError: a call failed (a conversation that does not exist: NotFoundError).
    """
    from contextwm.adapters.tokens_bpe import token_counter  # only this command counts

    by_conversation: dict[tuple[str | None, str], list[Label]] = defaultdict(list)
    for label in labels:
        by_conversation[(label.namespace, label.conversation)].append(label)
    out: list[Outcome] = []
    for (namespace, conversation), asked in by_conversation.items():
        items = list(client.iter_items(conversation, namespace=namespace))
        settings = client.get_conversation(conversation, namespace=namespace).settings
        counter = token_counter(str(settings.encoding))
        turns = [Turn(i.role, i.content, cost(i, counter)) for i in items]
        seqs = [i.seq for i in items]
        bm25 = Bm25([i.content for i in items]) if selectors else None
        metadata = {i.seq: dict(i.metadata) for i in items}
        for label in asked:
            expected = label.expected_seqs(metadata)
            for budget in label.budgets or budgets:
                began = time.perf_counter()
                ctx = client.get_context(
                    conversation,
                    label.query,
                    max_tokens=budget,
                    as_of=label.as_of,
                    namespace=namespace,
                    **(options or {}),
                )
                took = time.perf_counter() - began
                returned = {s.item.seq for s in (*ctx.recent, *ctx.history)}
                out.append(
                    Outcome(
                        label,
                        service,
                        budget,
                        len(expected),
                        len(expected & returned),
                        ctx.total_tokens,
                        took,
                    )
                )
            if bm25 is None:
                continue
            similarity = _similarities(client, label, namespace, len(items))
            ranked = rankings(bm25, label.query, [similarity.get(s, -2.0) for s in seqs])
            for who in SELECTORS:
                for budget in label.budgets or budgets:
                    taken = {seqs[i] for i in fill(ranked[who], turns, budget)}
                    out.append(Outcome(label, who, budget, len(expected), len(expected & taken)))
    return out


def _similarities(
    client: Client, label: Label, namespace: str | None, items: int
) -> dict[int, float]:
    """Each item's cosine similarity to the query, by seq, for the MAX_DENSE most similar."""
    hits = client.search(
        label.query,
        conversation_id=label.conversation,
        namespace=namespace,
        include_window=True,
        mode="dense",
        similarity_threshold=-1.0,
        top_k=max(1, min(items, MAX_DENSE)),
        time_hints=False,  # the whole query, as a plain dense ranking embeds it
    ).hits
    return {h.item.seq: h.parts.similarity for h in hits}


def report(outcomes: Sequence[Outcome], budgets: Sequence[int], out: TextIO) -> None:
    """The hit rate (every expected item returned) and the mean recall per budget for each
    selector, then the hit rate by kind at each budget when the labels have kinds."""
    seen = dict.fromkeys(o.who for o in outcomes)
    who = [w for w in seen if w not in SELECTORS] + [w for w in SELECTORS if w in seen]
    kinds = sorted({o.label.kind for o in outcomes if o.label.kind})
    cells: dict[tuple[str, int, str], list[Outcome]] = defaultdict(list)
    for o in outcomes:
        cells[(o.who, o.budget, "")].append(o)
        if o.label.kind:
            cells[(o.who, o.budget, o.label.kind)].append(o)

    def hit_rate(key: tuple[str, int, str]) -> str:
        got = cells[key]
        return f"{100 * sum(o.hit for o in got) / len(got):.1f} %" if got else "-"

    def recall(key: tuple[str, int, str]) -> str:
        got = cells[key]
        return f"{sum(o.found / o.expected for o in got) / len(got):.3f}" if got else "-"

    queries = len({o.label.line for o in outcomes})
    _table(
        out,
        f"Hit rate: every expected item returned ({queries} queries); mean recall",
        ["selector", *(f"{b} tokens" for b in budgets), *(f"recall {b}" for b in budgets)],
        [
            [w, *(hit_rate((w, b, "")) for b in budgets), *(recall((w, b, "")) for b in budgets)]
            for w in who
        ],
    )
    for budget in budgets if kinds else ():
        _table(
            out,
            f"Hit rate by kind at {budget} tokens",
            ["selector", *kinds],
            [[w, *(hit_rate((w, budget, k)) for k in kinds)] for w in who],
        )
    services = [w for w in who if w not in SELECTORS]
    if not services or not any(w in SELECTORS for w in who):
        return

    def lead_of(service: str, budget: int, kind: str) -> str:
        hits = {(o.who, o.label.line): o.hit for o in cells[(service, budget, kind)]}
        hits.update(
            {(o.who, o.label.line): o.hit for s in SELECTORS for o in cells[(s, budget, kind)]}
        )
        lines = sorted({line for w, line in hits if w == service})
        chosen = {
            s: [hits[(s, line)] for line in lines]
            for s in SELECTORS
            if all((s, line) in hits for line in lines)
        }
        found = lead([hits[(service, line)] for line in lines], chosen)
        return str(found) if found is not None else "-"

    _table(
        out,
        "Lead over the best simple selector at each budget, in points"
        f" [{COVERAGE:.0%} paired bootstrap interval over the queries]",
        ["selector", *(f"{b} tokens" for b in budgets)],
        [[w, *(lead_of(w, b, "") for b in budgets)] for w in services],
    )
    for service in services if kinds else ():
        _table(
            out,
            f"Lead by kind: {service} over the best simple selector of each kind",
            ["kind", *(f"{b} tokens" for b in budgets)],
            [[k, *(lead_of(service, b, k) for b in budgets)] for k in kinds],
        )


def _table(out: TextIO, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    print(f"\n== {title}", file=out)
    for line in aligned([headers, *rows], left={0}):
        print(line, file=out)


def rows(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """The outcomes as JSON objects, one a query, selector and budget."""
    return [
        {
            "line": o.label.line,
            "conversation": o.label.conversation,
            "kind": o.label.kind,
            "who": o.who,
            "budget": o.budget,
            "hit": o.hit,
            "recall": o.found / o.expected,
            "tokens": o.tokens,
        }
        for o in outcomes
    ]
