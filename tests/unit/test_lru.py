"""The LRU map behind the contributor and workspace caches."""

from __future__ import annotations

from contextwm.lru import Lru


def test_the_least_recently_used_goes_first() -> None:
    cache: Lru[str, int] = Lru(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recent
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    cache.put("a", 10)  # replacing refreshes too
    cache.put("d", 4)
    assert (cache.get("a"), cache.get("c"), cache.get("d")) == (10, None, 4)


def test_lookups_are_counted_as_hits_and_misses() -> None:
    cache: Lru[str, int] = Lru(1)
    cache.put("a", 1)
    cache.get("a")
    cache.get("b")
    cache.put("b", 2)  # pushes "a" out
    cache.get("a")
    cache.get("b")
    assert (cache.hits, cache.misses) == (2, 2)


def test_sizes_bound_the_values_and_a_value_too_big_is_not_kept() -> None:
    cache: Lru[str, str] = Lru(5, size=lambda _, value: len(value))
    cache.put("a", "aa")
    cache.put("b", "bbb")
    cache.put("c", "c")  # 6 > 5: "a" goes
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (None, "bbb", "c")
    cache.put("b", "b")  # replaced: its old size is given back
    cache.put("d", "ddd")
    assert (cache.get("b"), cache.get("c"), cache.get("d")) == ("b", "c", "ddd")
    cache.put("e", "eeeeee")  # bigger than the bound: the others stay
    assert (cache.get("e"), cache.get("d")) == (None, "ddd")
