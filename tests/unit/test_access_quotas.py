"""Quotas per key: a token bucket per key with a burst, and a size per request (a clock the
test moves)."""

from __future__ import annotations

import pytest
from contextwm.access.quotas import KeyQuotas, TokenBucket
from contextwm.domain.access import ApiKey, Role
from contextwm.domain.errors import ResourceExhausted


def key(key_id: str) -> ApiKey:
    return ApiKey(key_id, "test", Role.READ, ("*",), created_at=0.0)


def test_a_bucket_gives_its_burst_then_its_rate() -> None:
    bucket = TokenBucket(rate=2.0, capacity=3, now=0.0)
    assert [bucket.take(0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take(0.0) == pytest.approx(0.5)  # one token every half second
    assert bucket.take(0.5) == 0.0
    assert bucket.take(10.0) == 0.0  # a long pause refills up to the capacity only
    assert [bucket.take(10.0) for _ in range(3)][-1] == pytest.approx(0.5)


def test_each_key_has_its_own_bucket_and_a_refusal_says_when_to_retry() -> None:
    now = [100.0]
    quotas = KeyQuotas(1.0, 2, 0, clock=lambda: now[0])
    quotas.take_request(key("a"))
    quotas.take_request(key("a"))
    with pytest.raises(ResourceExhausted, match="API key a is over its quota of 1 requests") as e:
        quotas.take_request(key("a"))
    assert e.value.retry_after == pytest.approx(1.0)
    quotas.take_request(key("b"))  # another key: its own burst
    now[0] += 1.0
    quotas.take_request(key("a"))


def test_without_a_rate_there_is_no_limit_and_the_burst_defaults_to_twice_the_rate() -> None:
    unlimited = KeyQuotas(0.0, 0, 0)
    for _ in range(1000):
        unlimited.take_request(key("a"))
    assert KeyQuotas(5.0, 0, 0).burst == 10 and KeyQuotas(0.2, 0, 0).burst == 1


def test_a_request_over_the_size_quota_is_refused_without_a_retry_time() -> None:
    quotas = KeyQuotas(0.0, 0, 1000)
    quotas.check_size(key("a"), 1000)
    with pytest.raises(ResourceExhausted, match="1,001 bytes, over API key a's quota") as e:
        quotas.check_size(key("a"), 1001)
    assert e.value.retry_after is None
    KeyQuotas(0.0, 0, 0).check_size(key("a"), 10**9)
