"""Tests for contextwm.retrieval.paragraph_tokens: paragraph shares that add up to the exact
count of the joined text, in both encodings, through a bounded cache."""

from __future__ import annotations

import pytest
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.retrieval.paragraph_tokens import SEPARATOR, ParagraphTokens, starts_a_word
from hypothesis import given, settings
from hypothesis import strategies as st

ENCODINGS = ("cl100k_base", "o200k_base")
# Characters where the encoders' word patterns meet line breaks: spaces and tabs, line breaks,
# "/" (o200k's punctuation words take it after a line break), punctuation, digits, letters
# of several scripts, and an emoji.
ALPHABET = " \t\n\r/.,!?:;'\"()#-_0123456789abcXYZé中ß😀\u00a0"


class CountingCounter:
    """The real counter, counting its calls."""

    def __init__(self, encoding: str) -> None:
        self.inner = token_counter(encoding)
        self.encoding = encoding
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return self.inner.count(text)


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=300, deadline=None)
@given(paragraphs=st.lists(st.text(ALPHABET, max_size=24), min_size=1, max_size=6))
def test_shares_add_up_to_the_joined_texts_count(encoding: str, paragraphs: list[str]) -> None:
    counter = token_counter(encoding)
    shares = ParagraphTokens().shares(counter, paragraphs)
    assert sum(shares) == counter.count(SEPARATOR.join(paragraphs))
    for paragraph, share in zip(paragraphs[1:], shares[1:], strict=True):
        if not starts_a_word(paragraph):
            assert share == 0  # counted with the paragraph before it


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_lines_that_could_merge_with_the_blank_line_before_them_are_counted_together(
    encoding: str,
) -> None:
    counter = token_counter(encoding)
    paragraphs = ["# Recent Context", "user: see the file.", "/etc/hosts", "  indented", "\nend."]
    shares = ParagraphTokens().shares(counter, paragraphs)
    assert shares[2:] == [0, 0, 0]
    assert sum(shares) == counter.count(SEPARATOR.join(paragraphs))


def test_a_paragraph_seen_before_is_not_counted_again() -> None:
    counter = CountingCounter("cl100k_base")
    cache = ParagraphTokens()
    paragraphs = ["# History", "user: the blue kettle", "assistant: noted."]
    first = cache.shares(counter, paragraphs)
    assert counter.calls == 3 and cache.misses == 3
    assert cache.shares(counter, paragraphs) == first
    assert counter.calls == 3 and cache.hits == 3
    # The last paragraph has no separator after it: followed by another, it is another count.
    cache.shares(counter, [*paragraphs, "user: thanks"])
    assert counter.calls == 5


def test_the_encoding_is_part_of_what_is_cached() -> None:
    cache = ParagraphTokens()
    text = ["user: 中文的段落 with some English 😀😀"]
    cl100k, o200k = (cache.shares(token_counter(e), text)[0] for e in ENCODINGS)
    assert cl100k == token_counter("cl100k_base").count(text[0])
    assert o200k == token_counter("o200k_base").count(text[0])
    assert cl100k != o200k


def test_the_cache_is_bounded_and_cleared() -> None:
    counter = CountingCounter("cl100k_base")
    cache = ParagraphTokens(max_chars=40)
    cache.shares(counter, ["user: " + "a" * 20])
    cache.shares(counter, ["user: " + "b" * 20])  # over 40 characters: the first goes
    cache.shares(counter, ["user: " + "b" * 20])
    assert counter.calls == 2
    cache.shares(counter, ["user: " + "a" * 20])
    assert counter.calls == 3
    cache.clear()
    cache.shares(counter, ["user: " + "a" * 20])
    assert counter.calls == 4
