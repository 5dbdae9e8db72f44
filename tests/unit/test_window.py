"""Tests for contextwm.window.window: the Window container and choose_evictions' order."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import pytest
from contextwm.domain.conversations import ConversationSettings, ScoringWeights
from contextwm.domain.items import Flag, Item, ItemState
from contextwm.window.scoring import Clock
from contextwm.window.window import Eviction, Window, WindowEntry, choose_evictions
from hypothesis import given, settings
from hypothesis import strategies as st

# Item decay off and one shared timestamp: recency is equal for every item, so the test
# cases below isolate the one signal they are about. Only the newest item is protected, so
# the others show the score's order.
FLAT = ConversationSettings(recency_half_life_items=0.0, protected_tail_items=1)
T0 = 1_700_000_000.0


def make_item(
    seq: int,
    tokens: int = 10,
    *,
    role: str = "tool",
    flags: Flag = Flag.NONE,
    timestamp: float = T0,
) -> Item:
    return Item(
        conversation_id="c",
        seq=seq,
        role=role,
        content=f"item {seq}",
        timestamp=timestamp,
        token_count=tokens,
        flags=flags,
        metadata={},
        file=None,
        state=ItemState.WINDOW,
    )


def window_of(*items: Item, vectors: dict[int, np.ndarray] | None = None) -> Window:
    vectors = vectors or {}
    return Window([WindowEntry(i, vectors.get(i.seq)) for i in items])


def evict(
    window: Window,
    *,
    token_limit: int = 1_000_000,
    item_limit: int = 1_000_000,
    cs: ConversationSettings = FLAT,
    focus: np.ndarray | None = None,
) -> list[int]:
    last = max((e.item.seq for e in window), default=0)
    now = max((e.item.timestamp for e in window), default=0.0)
    out = choose_evictions(
        window,
        token_limit=token_limit,
        item_limit=item_limit,
        settings=cs,
        clock=Clock(now=now, last_seq=last),
        focus=focus,
    )
    return [e.seq for e in out]


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


# ---------------------------------------------------------------- Window container


def test_window_tracks_tokens_and_order() -> None:
    w = window_of(make_item(1, 5), make_item(2, 7))
    assert (len(w), w.tokens) == (2, 12)
    w.add(WindowEntry(make_item(3, 11)))
    assert w.tokens == 23 and 3 in w and 4 not in w
    removed = w.remove(2)
    assert removed.item.seq == 2
    assert (len(w), w.tokens) == (2, 16)
    assert [e.item.seq for e in w] == [1, 3]
    assert [e.item.seq for e in w.newest(1)] == [3]
    assert [e.item.seq for e in w.newest(5)] == [1, 3]
    assert w.newest(0) == []
    assert w.get(2) is None and w.get(1) is not None


def test_focus_vector_is_normalised_mean_of_the_newest_items_embedded() -> None:
    a, b, c = unit(1, 0, 0), unit(0, 1, 0), unit(0, 0, 1)
    # seq 4 has no vector yet: the focus is what the newest two have, seq 3 alone.
    w = window_of(
        make_item(1), make_item(2), make_item(3), make_item(4), vectors={1: a, 2: b, 3: c}
    )
    focus = w.focus_vector(2)
    assert focus is not None
    np.testing.assert_allclose(focus, c, atol=1e-6)
    focus = w.focus_vector(3)
    assert focus is not None
    np.testing.assert_allclose(focus, unit(0, 1, 1), atol=1e-6)
    # Appends outran the indexer: older vectors do not speak for the newest turns.
    assert w.focus_vector(1) is None
    assert window_of(make_item(1)).focus_vector(3) is None
    # Opposite vectors cancel: no direction rather than a division by zero.
    assert window_of(make_item(1), make_item(2), vectors={1: a, 2: -a}).focus_vector(2) is None


def test_unembedded_item_gets_mean_similarity_of_the_others() -> None:
    focus = unit(1, 0)
    w = window_of(make_item(1), make_item(2), make_item(3), vectors={1: unit(1, 0), 2: unit(0, 1)})
    scores = w.scores(FLAT, Clock(T0, 3), focus)
    sims = dict(zip(scores.seqs.tolist(), scores.similarity.tolist(), strict=True))
    assert sims[1] == pytest.approx(1.0)
    assert sims[2] == pytest.approx(0.0, abs=1e-7)
    assert sims[3] == pytest.approx(0.5)


# ---------------------------------------------------------------- eviction rules


def test_nothing_evicted_when_window_fits() -> None:
    w = window_of(make_item(1, 50), make_item(2, 50))
    assert evict(w, token_limit=100, item_limit=2) == []


def test_token_limit_evicts_until_it_fits() -> None:
    w = window_of(*(make_item(s, 30) for s in range(1, 6)))  # 150 tokens
    out = evict(w, token_limit=100)
    assert out == [1, 2]  # all equal: the older goes first, and no more than needed


def test_item_limit_evicts_until_it_fits() -> None:
    w = window_of(*(make_item(s, 1) for s in range(1, 8)))
    assert evict(w, item_limit=4) == [1, 2, 3]


def test_ties_evict_the_older() -> None:
    w = window_of(make_item(5), make_item(3), make_item(9))
    assert evict(w, item_limit=1) == [3, 5]


def test_importance_decides() -> None:
    # The older item carries an error flag, so the newer plain one goes first.
    w = window_of(make_item(1, flags=Flag.ERROR), make_item(2), make_item(3))
    assert evict(w, item_limit=2) == [2]


def test_each_importance_flag_protects_against_a_plain_item() -> None:
    for flag in (Flag.ERROR, Flag.CODE, Flag.QUESTION, Flag.SOLUTION):
        w = window_of(make_item(1, flags=flag), make_item(2), make_item(3))
        assert evict(w, item_limit=2) == [2], flag


def test_higher_importance_flag_wins() -> None:
    # default importance weights: solution 0.7 > error 0.6 > question 0.5 > code 0.4
    w = window_of(
        make_item(1, flags=Flag.SOLUTION),
        make_item(2, flags=Flag.ERROR),
        make_item(3, flags=Flag.QUESTION),
        make_item(4, flags=Flag.CODE),
        make_item(5),
    )
    assert evict(w, item_limit=2) == [4, 3, 2]


def test_role_decides() -> None:
    # user 0.3 > assistant 0.2 > file 0.1 > tool 0.0
    w = window_of(
        make_item(1, role="user"),
        make_item(2, role="assistant"),
        make_item(3, role="file"),
        make_item(4, role="tool"),
        make_item(5),
    )
    assert evict(w, item_limit=2) == [4, 3, 2]


def test_similarity_decides() -> None:
    focus = unit(1, 0)
    vectors = {1: unit(1, 0), 2: unit(0, 1), 3: unit(1, 1)}
    w = window_of(make_item(1), make_item(2), make_item(3), make_item(4), vectors=vectors)
    assert evict(w, item_limit=2, focus=focus) == [2, 3]
    # Without a focus similarity plays no part and age decides.
    assert evict(w, item_limit=2, focus=None) == [1, 2]


def test_recency_decides_when_all_else_is_equal() -> None:
    cs = dataclasses.replace(FLAT, recency_half_life_seconds=60.0)
    # seq 1 is the newest by time even though it was appended first (historic import).
    w = window_of(
        make_item(1, timestamp=T0 + 600), make_item(2, timestamp=T0), make_item(3, timestamp=T0)
    )
    assert evict(w, item_limit=2, cs=cs) == [2]


def test_custom_weights_are_used() -> None:
    # With a role weight for tool above the error flag's importance, the error item goes.
    weights = ScoringWeights(role={"tool": 5.0, "error": 0.0})
    cs = dataclasses.replace(FLAT, weights=weights)
    w = window_of(
        make_item(1, role="error", flags=Flag.ERROR), make_item(2, role="tool"), make_item(3)
    )
    assert evict(w, item_limit=2, cs=cs) == [1]


def test_oversized_item_goes_first_even_if_most_relevant() -> None:
    flags = Flag.ERROR | Flag.SOLUTION | Flag.CODE
    w = window_of(make_item(1, 10), make_item(2, 10), make_item(3, 150, role="user", flags=flags))
    assert evict(w, token_limit=100) == [3]


def test_oversized_pinned_item_goes_first() -> None:
    # It can never fit, so keeping it would push out everything else.
    w = window_of(make_item(1, 10), make_item(2, 101, flags=Flag.PINNED))
    assert evict(w, token_limit=100) == [2]


def test_pinned_evicted_only_when_nothing_unpinned_is_left_then_oldest_first() -> None:
    high = Flag.ERROR | Flag.SOLUTION | Flag.QUESTION
    w = window_of(
        make_item(1, flags=Flag.PINNED),
        make_item(2, flags=Flag.PINNED),
        make_item(3, role="user", flags=high),  # most relevant unpinned item
        make_item(4, flags=Flag.PINNED),
        make_item(5),
        make_item(6),
    )
    assert evict(w, item_limit=4) == [5, 3]
    assert evict(w, item_limit=2) == [5, 3, 1, 2]


def test_pinned_ignore_relevance_among_themselves() -> None:
    # A pinned item with more importance is still evicted first if it is older.
    w = window_of(
        make_item(1, flags=Flag.PINNED | Flag.ERROR),
        make_item(2, flags=Flag.PINNED),
        make_item(3),
    )
    assert evict(w, item_limit=2) == [1]


def test_choose_evictions_does_not_change_the_window() -> None:
    w = window_of(*(make_item(s, 40) for s in range(1, 5)))
    before = ([e.item.seq for e in w], w.tokens)
    assert evict(w, token_limit=50)
    assert ([e.item.seq for e in w], w.tokens) == before


def test_eviction_reports_score_and_parts() -> None:
    w = window_of(make_item(1, flags=Flag.CODE), make_item(2, role="user"), make_item(3))
    last = choose_evictions(
        w,
        token_limit=1000,
        item_limit=2,
        settings=FLAT,
        clock=Clock(T0, 3),
        focus=None,
    )
    assert len(last) == 1
    ev = last[0]
    assert isinstance(ev, Eviction)
    # code 0.4 vs user role 0.3: the user item goes.
    assert ev.seq == 2
    assert ev.parts.role == pytest.approx(0.3)
    assert ev.score == pytest.approx(0.3 * 1.0 + 0.3)


# ---------------------------------------------------------------- the protected tail


def test_a_plain_newest_turn_stays_beside_older_flagged_ones() -> None:
    # Older user questions outscore a plain assistant reply (0.5 + 0.3 against 0.2 and the
    # recency a newer turn adds): only the tail keeps the reply that was just made.
    questions = [make_item(s, role="user", flags=Flag.QUESTION) for s in range(1, 11)]
    w = window_of(*questions, make_item(11, role="assistant"))
    cs = ConversationSettings(protected_tail_items=1)
    assert evict(w, item_limit=10, cs=cs) == [1]


def test_the_tail_counts_items_and_a_share_of_the_tokens() -> None:
    items = [make_item(s, 10, role="user", flags=Flag.ERROR) for s in range(1, 7)]
    items += [make_item(s, 10) for s in range(7, 11)]  # four plain items, the newest
    w = window_of(*items)
    # Three protected: the plain item 7 goes first, then the flagged ones by age.
    cs = ConversationSettings(
        protected_tail_items=3, protected_tail_share=1.0, recency_half_life_items=0
    )
    assert evict(w, item_limit=5, cs=cs) == [7, 1, 2, 3, 4]
    # Four allowed by count, but 0.3 of 70 tokens holds only two of them: 9 and 10 stay.
    cs = dataclasses.replace(cs, protected_tail_items=4, protected_tail_share=0.3)
    assert evict(w, token_limit=70, item_limit=20, cs=cs) == [7, 8, 1]
    # A tenth holds only the newest, which always stays.
    cs = dataclasses.replace(cs, protected_tail_share=0.1)
    assert evict(w, token_limit=70, item_limit=20, cs=cs) == [7, 8, 9]


def test_the_tail_takes_its_share_of_a_small_window() -> None:
    items = [make_item(s, role="user", flags=Flag.SOLUTION) for s in range(1, 4)]
    items += [make_item(s) for s in range(4, 9)]
    w = window_of(*items)
    # Half of a 4-item window: the newest two stay, and the flagged items outlive the rest.
    cs = ConversationSettings(protected_tail_items=100)
    assert sorted(evict(w, item_limit=4, cs=cs)) == [1, 4, 5, 6]
    # The whole window: first in, first out.
    cs = dataclasses.replace(cs, protected_tail_share=1.0)
    assert sorted(evict(w, item_limit=3, cs=cs)) == [1, 2, 3, 4, 5]


def test_a_newest_item_larger_than_the_window_goes_to_the_archive() -> None:
    # The one exception: kept, it would break the token limit by itself.
    w = window_of(make_item(1, 10), make_item(2, 150))
    assert evict(w, token_limit=100) == [2]


# ---------------------------------------------------------------- property


def reference_score(cs: ConversationSettings, clock: Clock, item: Item, sim: float) -> float:
    """The relevance score, written out from its formula rather than from scoring.py."""
    age = max(0.0, clock.now - item.timestamp)
    rec = 0.5 ** (age / cs.recency_half_life_seconds)
    if cs.recency_half_life_items > 0:
        rec *= 0.5 ** (max(0, clock.last_seq - item.seq) / cs.recency_half_life_items)
    w = cs.weights
    imp = sum(
        w.importance[name]
        for flag, name in (
            (Flag.PINNED, "pinned"),
            (Flag.ERROR, "error"),
            (Flag.CODE, "code"),
            (Flag.QUESTION, "question"),
            (Flag.SOLUTION, "solution"),
        )
        if item.flags & flag
    )
    return float(w.recency * rec + imp + w.similarity * sim + w.role.get(item.role, 0.0))


@st.composite
def windows(
    draw: st.DrawFn,
) -> tuple[list[Item], dict[int, np.ndarray], np.ndarray | None, int, int]:
    n = draw(st.integers(1, 14))
    seqs = sorted(draw(st.sets(st.integers(1, 60), min_size=n, max_size=n)))
    items = []
    vectors: dict[int, np.ndarray] = {}
    for seq in seqs:
        flags = Flag(draw(st.integers(0, 31)))
        items.append(
            make_item(
                seq,
                draw(st.integers(1, 120)),
                role=draw(
                    st.sampled_from(["user", "assistant", "system", "tool", "file", "error"])
                ),
                flags=flags,
                timestamp=T0 + draw(st.integers(0, 3)) * 3600.0,
            )
        )
        if draw(st.booleans()):
            raw = draw(st.lists(st.floats(-1, 1, width=32), min_size=4, max_size=4))
            v = np.asarray(raw, dtype=np.float32)
            if np.linalg.norm(v) > 1e-3:
                vectors[seq] = v / np.linalg.norm(v)
    focus: np.ndarray | None = unit(
        *draw(st.lists(st.floats(0.125, 1, width=32), min_size=4, max_size=4))
    )
    if draw(st.booleans()):
        focus = None
    token_limit = draw(st.integers(1, 600))
    item_limit = draw(st.integers(1, 16))
    return items, vectors, focus, token_limit, item_limit


def reference_tail(
    items: Sequence[Item], cs: ConversationSettings, token_limit: int, item_limit: int
) -> set[int]:
    """The protected tail, written out from its definition: the newest item, then older ones
    while at most protected_tail_items and within the share of both limits."""
    tail: list[Item] = []
    for item in reversed(items):
        grown = sum(i.token_count for i in tail) + item.token_count
        share = cs.protected_tail_share
        over_items = len(tail) + 1 > min(cs.protected_tail_items, share * item_limit)
        if tail and (over_items or grown > share * token_limit):
            break
        tail.append(item)
    return {i.seq for i in tail}


@settings(max_examples=300, deadline=None)
@given(windows(), st.floats(0, 100), st.integers(1, 20), st.floats(0, 1))
def test_eviction_property(
    case: tuple[list[Item], dict[int, np.ndarray], np.ndarray | None, int, int],
    half_life_items: float,
    tail_items: int,
    tail_share: float,
) -> None:
    items, vectors, focus, token_limit, item_limit = case
    cs = ConversationSettings(
        recency_half_life_items=half_life_items,
        recency_half_life_seconds=7200,
        protected_tail_items=tail_items,
        protected_tail_share=tail_share,
    )
    w = window_of(*items, vectors=vectors)
    clock = Clock(now=max(i.timestamp for i in items), last_seq=items[-1].seq)
    out = choose_evictions(
        w, token_limit=token_limit, item_limit=item_limit, settings=cs, clock=clock, focus=focus
    )
    seqs = [e.seq for e in out]
    by_seq = {i.seq: i for i in items}
    assert len(set(seqs)) == len(seqs) and set(seqs) <= set(by_seq)

    def fits(evicted: Sequence[int]) -> bool:
        kept = [i for i in items if i.seq not in set(evicted)]
        return sum(i.token_count for i in kept) <= token_limit and len(kept) <= item_limit

    # 1. After applying the evictions both limits hold, and not one eviction more than needed.
    assert fits(seqs)
    if seqs:
        assert not fits(seqs[:-1])
    else:
        assert fits([])

    # 2. Oversized items (they can never fit) all go, and before anything else.
    oversized = [i.seq for i in items if i.token_count > token_limit]
    assert set(oversized) <= set(seqs)
    assert set(seqs[: len(oversized)]) == set(oversized)
    rest = seqs[len(oversized) :]

    # 3. The protected tail stays, whatever its items score.
    tail = reference_tail(items, cs, token_limit, item_limit) - set(oversized)
    assert not tail & set(seqs)
    older = [i for i in items if i.seq not in tail]

    # 4. Then unpinned items, lowest relevance first, older first on ties; pinned items only
    #    once no unpinned item is left, and then oldest first.
    pinned_rest = [s for s in rest if by_seq[s].flags & Flag.PINNED]
    unpinned_rest = [s for s in rest if not by_seq[s].flags & Flag.PINNED]
    assert rest == unpinned_rest + pinned_rest
    if pinned_rest:
        remaining_unpinned = [
            i.seq for i in older if not i.flags & Flag.PINNED and i.seq not in set(seqs)
        ]
        assert remaining_unpinned == []
        all_pinned = sorted(
            i.seq for i in older if i.flags & Flag.PINNED and i.seq not in set(oversized)
        )
        assert pinned_rest == all_pinned[: len(pinned_rest)]

    # Relevance, computed independently (items without a vector take the others' mean).
    sims = {s: float(np.dot(v, focus)) for s, v in vectors.items()} if focus is not None else {}
    neutral = float(np.mean(list(sims.values()))) if sims else 0.0
    ref = {i.seq: reference_score(cs, clock, i, sims.get(i.seq, neutral)) for i in items}
    for ev in out:
        assert math.isclose(ev.score, ref[ev.seq], rel_tol=1e-6, abs_tol=1e-6)
    eps = 1e-6
    for a, b in pairwise(unpinned_rest):
        assert ref[a] <= ref[b] + eps
        if abs(ref[a] - ref[b]) <= 1e-12:
            assert a < b
    kept_unpinned = [i.seq for i in older if not i.flags & Flag.PINNED and i.seq not in set(seqs)]
    if unpinned_rest and kept_unpinned:
        assert max(ref[s] for s in unpinned_rest) <= min(ref[s] for s in kept_unpinned) + eps
