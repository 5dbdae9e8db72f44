"""A service's lead over the best simple selector, with a paired bootstrap interval: the
questions are resampled, and the service and the selector are scored on the same sample, so
the interval says how much of a lead is the luck of which questions were asked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Resamples of the questions, and the interval's coverage. A fixed seed keeps a report
# reproducible from the same outcomes.
RESAMPLES = 2000
COVERAGE = 0.95
SEED = 20261207


@dataclass(frozen=True, slots=True)
class Lead:
    """How far a service's hit rate stands above a selector's, in points."""

    selector: str  # the best simple selector at this budget, by hit rate
    points: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.points:+.1f} [{self.low:+.1f}, {self.high:+.1f}] vs {self.selector}"


def lead(service: Sequence[bool], selectors: Mapping[str, Sequence[bool]]) -> Lead | None:
    """The service's lead over the selector with the best hit rate on these questions.

    Args:
        service: whether the service hit each question.
        selectors: the same questions, in the same order, for each selector.

    Returns:
        The lead in points and its COVERAGE bootstrap interval; None without questions or
        selectors.
    """
    if not service or not selectors:
        return None
    import numpy as np  # here, not at the top: the command line loads without numpy

    best = max(selectors, key=lambda name: (sum(selectors[name]), name))
    ours = np.asarray(service, dtype=np.float64)
    theirs = np.asarray(selectors[best], dtype=np.float64)
    if ours.shape != theirs.shape:
        raise ValueError("the service and the selector must be scored on the same questions")
    diff = 100.0 * (ours - theirs)
    rng = np.random.default_rng(SEED)
    samples = rng.integers(0, len(diff), size=(RESAMPLES, len(diff)))
    means = diff[samples].mean(axis=1)
    tail = 100.0 * (1.0 - COVERAGE) / 2.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return Lead(best, float(diff.mean()), float(low), float(high))
