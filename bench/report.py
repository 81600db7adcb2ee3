"""Result lines: one JSON object per measurement, with its target and whether it was met.

Every line has the same keys, in this order::

    bench     the benchmark's name ("store")
    metric    what was measured, dotted ("sqlite.single_writer.commits_per_s")
    value     the measurement (null when it could not be taken)
    unit      "commits/s", "ms", "count", ...
    baseline  the reference measured in the same run, when the target is a ratio (else null)
    ratio     value / baseline (null without a baseline)
    target    the target as the project states it (">= 0.7", "<= 50", "== 0"), or null for a figure
              reported for information
    met       whether the target holds: it is checked against ``ratio`` when there is a baseline,
              against ``value`` otherwise; false when the value could not be measured or the
              line carries an ``error``; null without a target

Any further fields (``error``, ``note``, sample counts...) follow these keys.
"""

from __future__ import annotations

import fnmatch
import json
import math
import operator
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

#: The keys every result line carries, in order.
KEYS = ("bench", "metric", "value", "unit", "baseline", "ratio", "target", "met")

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_TARGET = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")


def parse_target(target: str) -> tuple[str, float]:
    """``">= 0.7"`` -> ``(">=", 0.7)``; ``ValueError`` for anything else."""
    match = _TARGET.match(target)
    if match is None:
        raise ValueError(
            f"invalid target {target!r}: expected an operator (>=, <=, ==, !=, >, <) and a number"
        )
    return match.group(1), float(match.group(2))


def target_met(target: str, actual: float) -> bool:
    """Whether ``actual`` satisfies ``target`` (``"<= 50"``, ``">= 0.7"``, ``"== 0"``)."""
    op, bound = parse_target(target)
    if math.isnan(actual):
        return False
    return _OPERATORS[op](actual, bound)


def _rounded(x: float | None, digits: int = 3) -> float | None:
    if x is None or math.isnan(x) or math.isinf(x):
        return None if x is None or math.isnan(x) else x
    return round(x, digits)


def _rounded_against(x: float | None, target: str, met: bool) -> float | None:
    """``x`` rounded for the line, with as many more digits as it takes not to contradict ``met``.

    A ratio of 0.4996 against ">= 0.5" is not met; printed as 0.5 it would look met. Such a
    figure keeps the digits that show why (0.4996), up to the full float.
    """
    if x is None or math.isnan(x) or math.isinf(x):
        return _rounded(x)
    for digits in range(3, 16):
        shown = round(x, digits)
        if target_met(target, shown) is met:
            return shown
    return x


@dataclass(frozen=True, slots=True)
class Result:
    """One measurement of one benchmark."""

    bench: str
    metric: str
    value: float | None
    unit: str
    baseline: float | None = None
    target: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.target is not None:
            parse_target(self.target)
        clash = set(self.extra) & set(KEYS)
        if clash:
            raise ValueError(f"extra fields may not replace the standard keys: {sorted(clash)}")

    @property
    def ratio(self) -> float | None:
        """``value / baseline``, or None without both (or with a zero baseline)."""
        if self.value is None or self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline

    @property
    def met(self) -> bool | None:
        """Whether the target holds (on the ratio when there is a baseline); None without a target."""
        if self.target is None:
            return None
        if "error" in self.extra:
            return False
        actual = self.ratio if self.baseline is not None else self.value
        if actual is None:
            return False
        return target_met(self.target, actual)

    def to_dict(self) -> dict[str, Any]:
        met = self.met
        shown = {"value": _rounded(self.value), "ratio": _rounded(self.ratio)}
        if self.target is not None and met is not None and "error" not in self.extra:
            # The figure ``met`` was decided on is printed so that it agrees with ``met``.
            decided_on = "ratio" if self.baseline is not None else "value"
            shown[decided_on] = _rounded_against(getattr(self, decided_on), self.target, met)
        line: dict[str, Any] = {
            "bench": self.bench,
            "metric": self.metric,
            "value": shown["value"],
            "unit": self.unit,
            "baseline": _rounded(self.baseline),
            "ratio": shown["ratio"],
            "target": self.target,
            "met": met,
        }
        line.update(self.extra)
        return line

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=str)


def selector_matches(selector: str, name: str) -> bool:
    """Whether ``--only selector`` selects the metric (or group of metrics) ``name``.

    A selector selects a name equal to it, a name under it (``sqlite`` selects
    ``sqlite.single_writer.commits_per_s``), or a name it matches as a glob (``*.p99_ms``).
    """
    return name == selector or name.startswith(selector + ".") or fnmatch.fnmatchcase(name, selector)


class Reporter:
    """Collects a benchmark's results and prints each as a JSON line as soon as it is measured."""

    def __init__(self, bench: str, *, only: Sequence[str] = (), stream: TextIO | None = None) -> None:
        self.bench = bench
        self.only = tuple(s for s in only if s)
        self.stream = stream
        self.results: list[Result] = []

    def wants(self, group: str) -> bool:
        """Whether any metric named ``group`` or under it may be selected (so it is worth measuring).

        A glob selector is taken to possibly match under any group: ``emit`` filters exactly.
        """
        if not self.only:
            return True
        return any(
            selector_matches(s, group) or s.startswith(group + ".") or any(ch in s for ch in "*?[")
            for s in self.only
        )

    def selected(self, metric: str) -> bool:
        """Whether the metric itself is selected for output."""
        return not self.only or any(selector_matches(s, metric) for s in self.only)

    def emit(
        self,
        metric: str,
        value: float | None,
        unit: str,
        *,
        baseline: float | None = None,
        target: str | None = None,
        **extra: Any,
    ) -> Result | None:
        """Record and print one measurement (unless ``--only`` leaves it out)."""
        if not self.selected(metric):
            return None
        result = Result(self.bench, metric, value, unit, baseline=baseline, target=target, extra=extra)
        self.results.append(result)
        stream = self.stream if self.stream is not None else sys.stdout
        print(result.to_json(), file=stream, flush=True)
        return result

    def error(
        self, metric: str, unit: str, error: BaseException | str, *, target: str | None = None, **extra: Any
    ) -> Result | None:
        """Report a measurement that could not be taken: no value, ``met`` false, and why."""
        message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        return self.emit(metric, None, unit, target=target, error=message, **extra)

    def all_met(self) -> bool:
        """No result missed its target (results without a target do not count)."""
        return all(r.met is not False for r in self.results)


def split_selectors(values: Iterable[str] | None) -> list[str]:
    """``--only a,b --only c`` -> ``["a", "b", "c"]``."""
    return [part.strip() for value in values or () for part in value.split(",") if part.strip()]
