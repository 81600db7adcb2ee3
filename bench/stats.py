"""Percentiles and summaries of samples (latencies, rates), without numpy.

``percentile`` interpolates linearly between the two nearest ranks, as numpy's default
(``method="linear"``) does, so p50 of ``[1, 2, 3, 4]`` is 2.5 and p100 is the maximum.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any


def percentile(samples: Iterable[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``samples``; ``ValueError`` if there are none."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be between 0 and 100, got {q}")
    ordered = sorted(samples)
    return _percentile_sorted(ordered, q)


def _percentile_sorted(ordered: Sequence[float], q: float) -> float:
    if not ordered:
        raise ValueError("percentile of no samples")
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = math.ceil(rank)
    if low == high:
        return float(ordered[low])
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


@dataclass(frozen=True, slots=True)
class Summary:
    """Count, mean and the usual percentiles of a set of samples."""

    count: int
    mean: float
    min: float
    p50: float
    p90: float
    p99: float
    max: float

    def as_dict(self, digits: int = 3) -> dict[str, Any]:
        return {k: (round(v, digits) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def summarize(samples: Iterable[float]) -> Summary:
    """A ``Summary`` of ``samples``; ``ValueError`` if there are none."""
    ordered = sorted(samples)
    if not ordered:
        raise ValueError("summary of no samples")
    return Summary(
        count=len(ordered),
        mean=math.fsum(ordered) / len(ordered),
        min=float(ordered[0]),
        p50=_percentile_sorted(ordered, 50),
        p90=_percentile_sorted(ordered, 90),
        p99=_percentile_sorted(ordered, 99),
        max=float(ordered[-1]),
    )
