"""How the background indexer paces itself against requests: acknowledgements first, unless
a reader is waiting for vectors.

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


def pause_after(batch_seconds: float, append_seconds: float, duty: float) -> float:
    """Seconds to pause after an embedding batch that took batch_seconds, during which
    appends took append_seconds (summed over threads): while appends keep the server busy,
    long enough that embedding runs only `duty` of the time; otherwise none.
    """
    if duty >= 1.0 or batch_seconds <= 0.0 or append_seconds < BUSY_SHARE * batch_seconds:
        return 0.0
    return batch_seconds * (1.0 - duty) / duty
