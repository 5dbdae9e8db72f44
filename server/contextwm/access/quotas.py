"""Quotas per API key: requests per second (a token bucket per key, on this server) and the
bytes of one request; a call over one is refused with the time after which to retry."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from contextwm.domain.access import ApiKey
from contextwm.domain.errors import ResourceExhausted


class TokenBucket:
    """Holds up to `capacity` tokens, refilled at `rate` per second; a request takes one."""

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self._tokens = capacity
        self._at = now

    def take(self, now: float) -> float:
        """Takes a token: 0.0 if there was one, else the seconds until there is."""
        self._tokens = min(self.capacity, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self.rate


class KeyQuotas:
    """The quotas every key gets; 0 turns one off. Calls without a key have none."""

    def __init__(
        self,
        requests_per_second: float,
        burst: int,
        max_request_bytes: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Args:
        requests_per_second: Each key's sustained rate; 0: unlimited.
        burst: Requests a key may make at once after a pause; 0: twice the rate, at least 1.
        max_request_bytes: The most bytes one request (one message of a stream) may have.
        clock: A monotonic clock, seconds.
        """
        self.requests_per_second = requests_per_second
        self.burst = burst or max(1, round(2 * requests_per_second))
        self.max_request_bytes = max_request_bytes
        self._clock = clock
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def take_request(self, key: ApiKey) -> None:
        """Counts one request of key against its rate.

        Raises:
            ResourceExhausted: over the rate; retry_after says when a request fits again.
        """
        if self.requests_per_second <= 0:
            return
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get(key.key_id)
            if bucket is None:
                bucket = TokenBucket(self.requests_per_second, self.burst, now)
                self._buckets[key.key_id] = bucket
            wait = bucket.take(now)
        if wait > 0:
            raise ResourceExhausted(
                f"API key {key.key_id} is over its quota of {self.requests_per_second:g}"
                f" requests per second (bursts of {self.burst}); retry after {wait:.2f} s",
                retry_after=wait,
            )

    def check_size(self, key: ApiKey, size: int) -> None:
        """Refuses a request (or stream message) of `size` bytes over the key's quota.

        Raises:
            ResourceExhausted: too large; retrying the same request cannot succeed.
        """
        if self.max_request_bytes and size > self.max_request_bytes:
            raise ResourceExhausted(
                f"the request has {size:,} bytes, over API key {key.key_id}'s quota of"
                f" {self.max_request_bytes:,} bytes per request (or stream message): send"
                " less at once"
            )
