"""Cron schedules as a CronJob reads them: five fields, or a descriptor, on the cluster's clock.

A CronJob's ``spec.schedule`` is a classic cron line, ``minute hour day-of-month month day-of-week``
(``*/5 * * * *``: every five minutes; ``0 3 * * mon-fri``: at 03:00 on weekdays), or one of the
descriptors ``@hourly``, ``@daily`` (``@midnight``), ``@weekly``, ``@monthly``, ``@yearly``
(``@annually``) and ``@every <duration>`` (``@every 1h30m``). Upstream parses it with
github.com/robfig/cron/v3's ``ParseStandard``, both when the API server validates a CronJob
(``pkg/apis/batch/validation/validation.go`` ``validateScheduleFormat``) and when the controller works
out the next run (``pkg/controller/cronjob/utils.go``).

Two jobs, two tools:

- **validation** (``schedule_error``) repeats robfig's parser rule for rule, so that a bad schedule is
  refused with the very message kube-apiserver gives (``spec.schedule: Invalid value: "70 * * * *":
  end of range (70) above maximum (59): 70``). Months and weekdays take names (``jan``, ``mon``);
  weekdays run 0-6 (Sunday is 0; robfig refuses 7); ``?`` means ``*``;
- **the times** (``Schedule.next``) come from croniter, a maintained cron library, given the same
  five fields: croniter, like robfig and Vixie cron, ORs a restricted day-of-month with a restricted
  day-of-week (``0 0 13 * fri`` runs every 13th *and* every Friday) and ANDs them when either is
  ``*``. ``@every`` is robfig's own extension, computed here: whole seconds after the previous run.

Times are evaluated in the CronJob's ``spec.timeZone`` (an IANA name such as ``Europe/Paris``), else
in the controller manager's zone, which is UTC in the lab.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

#: robfig's descriptors and the five fields each stands for.
DESCRIPTORS: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_MONTHS: Final = {
    name: i + 1
    for i, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    )
}
_WEEKDAYS: Final = {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int] | None = None


#: robfig's ``bounds`` of the five standard fields, in order.
_FIELDS: Final = (
    _Bounds(0, 59),
    _Bounds(0, 23),
    _Bounds(1, 31),
    _Bounds(1, 12, _MONTHS),
    _Bounds(0, 6, _WEEKDAYS),
)

# Go's time.ParseDuration units, in nanoseconds.
_DURATION_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_DURATION_PART: Final = re.compile(r"([0-9]*(?:\.[0-9]*)?)([a-zµμ]+)")


class ScheduleError(ValueError):
    """A schedule robfig's ``ParseStandard`` refuses; the message is its error text."""


# -- robfig's parser, for its messages --------------------------------------------------------------


def _go_atoi(text: str) -> int:
    """``strconv.Atoi``, failing with Go's message."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ScheduleError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'
        )
    return int(text)


def _must_parse_int(text: str) -> int:
    number = _go_atoi(text)
    if number < 0:
        raise ScheduleError(f"negative number ({number}) not allowed: {text}")
    return number


def _int_or_name(text: str, names: dict[str, int] | None) -> int:
    if names is not None and text.lower() in names:
        return names[text.lower()]
    return _must_parse_int(text)


def _check_range(expr: str, bounds: _Bounds) -> None:
    """robfig's ``getRange`` for one comma-separated part of a field."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
    else:
        start = _int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds.names)
        else:
            raise ScheduleError(f"too many hyphens: {expr}")
    if len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if len(low_and_high) == 1:
            end = bounds.high  # "N/step" means "N-max/step"
    elif len(range_and_step) == 1:
        step = 1
    else:
        raise ScheduleError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise ScheduleError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expr}")


def parse_go_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` in seconds (``1h30m``, ``90s``, ``1.5h``); ValueError otherwise."""
    original = text
    sign = 1
    if text[:1] in ("+", "-"):
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return 0.0
    if not text:
        raise ValueError(f'time: invalid duration "{original}"')
    total = 0.0
    position = 0
    while position < len(text):
        match = _DURATION_PART.match(text, position)
        if match is None or match.group(1) in ("", "."):
            raise ValueError(f'time: invalid duration "{original}"')
        unit = _DURATION_UNITS.get(match.group(2))
        if unit is None:
            raise ValueError(f'time: unknown unit "{match.group(2)}" in duration "{original}"')
        total += float(match.group(1)) * unit
        position = match.end()
    return sign * total / 1e9


def _every(spec: str) -> float:
    """``@every <duration>``: robfig's ``Every`` rounds to whole seconds, at least one."""
    try:
        seconds = parse_go_duration(spec[len("@every ") :])
    except ValueError as error:
        raise ScheduleError(f"failed to parse duration {spec}: {error}") from None
    return float(max(1, int(seconds)))


def _go_fields(fields: list[str]) -> str:
    return "[" + " ".join(fields) + "]"


def parse(spec: str) -> tuple[str, float | None, str]:
    """``(five fields, @every seconds or None, location prefix)`` of ``spec``, or ScheduleError.

    The location prefix is robfig's ``TZ=Zone``/``CRON_TZ=Zone`` (upstream refuses it in new CronJobs
    but still parses it). An ``@every`` schedule has no fields.
    """
    if not spec:
        raise ScheduleError("empty spec string")
    location = ""
    if spec.startswith(("TZ=", "CRON_TZ=")):
        prefix, _, rest = spec.partition(" ")
        location = prefix.split("=", 1)[1]
        try:
            ZoneInfo(location)
        except (ZoneInfoNotFoundError, ValueError):
            raise ScheduleError(f"provided bad location {location}: unknown time zone {location}") from None
        spec = rest.strip()
    if spec.startswith("@"):
        if spec.startswith("@every "):
            return "", _every(spec), location
        fields = DESCRIPTORS.get(spec)
        if fields is None:
            raise ScheduleError(f"unrecognized descriptor: {spec}")
        return fields, None, location
    parts = spec.split()
    if len(parts) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(parts)}: {_go_fields(parts)}")
    for part, bounds in zip(parts, _FIELDS, strict=True):
        for expr in part.split(","):
            _check_range(expr, bounds)
    # "?" is robfig's "*"; croniter reads only "*" in the day fields.
    return " ".join(p.replace("?", "*") for p in parts), None, location


def schedule_error(spec: str) -> str | None:
    """robfig's ``ParseStandard`` error text for ``spec``, or None when it parses."""
    try:
        parse(spec)
    except ScheduleError as error:
        return str(error)
    return None


def time_zone_error(name: str) -> str | None:
    """Go's ``time.LoadLocation`` error for a zone name, or None when it exists."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {name}"
    return None


# -- the times --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: ``next(t)`` is the first run strictly after the epoch time ``t``."""

    fields: str
    every: float | None
    zone: tzinfo

    @classmethod
    def parse(cls, spec: str, time_zone: str | None = None) -> Schedule:
        """``spec`` in ``time_zone`` (or its own ``TZ=`` prefix, else UTC); ScheduleError if invalid."""
        fields, every, location = parse(spec)
        name = time_zone or location
        zone: tzinfo = UTC
        if name:
            try:
                zone = ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError):
                raise ScheduleError(f"unknown time zone {name}") from None
        return cls(fields, every, zone)

    def next(self, after: float) -> float:
        """The first run time strictly after ``after`` (seconds since the epoch)."""
        if self.every is not None:
            # robfig's ConstantDelaySchedule: the delay after ``after`` with its fraction dropped.
            return float(int(after) + int(self.every))
        start = datetime.fromtimestamp(after, UTC).astimezone(self.zone)
        following: datetime = croniter(self.fields, start).get_next(datetime)
        return following.timestamp()


def format_rfc3339_in(when: float, zone: tzinfo) -> str:
    """Go's ``t.In(zone).Format(time.RFC3339)``: ``2026-01-01T00:05:00Z`` or ``...T01:05:00+01:00``."""
    local = datetime.fromtimestamp(int(when), UTC).astimezone(zone)
    offset = local.utcoffset() or timedelta(0)
    if offset == timedelta(0):
        return local.strftime("%Y-%m-%dT%H:%M:%SZ")
    return local.isoformat(timespec="seconds")


__all__ = [
    "DESCRIPTORS",
    "Schedule",
    "ScheduleError",
    "format_rfc3339_in",
    "parse",
    "parse_go_duration",
    "schedule_error",
    "time_zone_error",
]
