"""How the background indexer paces itself against requests: acknowledgements first, unless
a reader is waiting for vectors; and how large its batches are.

Measured (scripts/bench_ingest.py, 4 producers on 2 cores): while appends arrive faster than
the model can embed them, an embedding batch running beside them took 0.6 of a core yet
embedded little, and cut acknowledgements from about 775/s to 595/s (ack p50 4.8 -> 5.8 ms);
holding the batches back until the burst ended cost nothing in total ingest time, since the
backlog is the same work either way.
"""

from __future__ import annotations

# Appends count as keeping the server busy when their summed time during a batch was at least
# this share of the batch's: one producer at 100 appends/s takes about 0.1, a burst 1 or more.
BUSY_SHARE = 0.5

# Items per batch while nothing keeps the server busy (a backlog left by a burst, say). The
# model embeds 128 texts per call about a third faster than 32 (in-process on 2 cores, 40
# tokens each: 108 against 80 items/s; the per-batch work around the call is under 1 %), and
# such a batch still takes only about a second, so a reader who starts waiting for vectors
# meanwhile has its own embedded soon after.
DRAIN_BATCH = 128


def keeps_busy(batch_seconds: float, append_seconds: float) -> bool:
    """Whether appends that took append_seconds (summed over threads) during a batch that
    took batch_seconds kept the server busy."""
    return batch_seconds > 0.0 and append_seconds >= BUSY_SHARE * batch_seconds


def pause_after(batch_seconds: float, append_seconds: float, duty: float) -> float:
    """Seconds to pause after an embedding batch that took batch_seconds, during which
    appends took append_seconds (summed over threads): while appends keep the server busy,
    long enough that embedding runs only `duty` of the time; otherwise none.
    """
    if duty >= 1.0 or not keeps_busy(batch_seconds, append_seconds):
        return 0.0
    return batch_seconds * (1.0 - duty) / duty


def next_batch_size(base: int, batch_seconds: float, append_seconds: float) -> int:
    """Items in the next batch after one like pause_after's: base while appends keep the
    server busy (a short batch gives the CPU back to acknowledgements sooner), else
    DRAIN_BATCH (or base, if larger)."""
    if keeps_busy(batch_seconds, append_seconds):
        return base
    return max(base, DRAIN_BATCH)
