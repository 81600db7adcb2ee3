"""Quantities: how Kubernetes writes amounts of CPU, memory and storage ("100m", "1Gi", "2").

A container asks for ``cpu: 250m`` (a quarter of a core) and ``memory: 64Mi`` (64 x 2^20 bytes). These
strings are ``resource.Quantity`` values (apimachinery ``pkg/api/resource/quantity.go``): a number with
an optional suffix, from one of three families that also decide how the value is printed back:

- **decimal SI** ``n u m "" k M G T P E`` (powers of 1000): ``100m`` = 0.1, ``2k`` = 2000;
- **binary SI** ``Ki Mi Gi Ti Pi Ei`` (powers of 1024): ``1Gi`` = 1073741824;
- **decimal exponent** ``e3``/``E3``: ``1e3`` = 1000.

Every quantity has a **canonical form**, which is what the API server answers after a round trip:
``1000m`` comes back as ``1``, ``0.5Gi`` as ``512Mi``, ``1.5`` as ``1500m``. The amount is exact (no
floating point); anything finer than a nano-unit is rounded *up* (if you asked for some of a resource,
you get at least the smallest amount), and resource lists in objects are further rounded up to milli
units (``SetDefaults_ResourceList``).

The scheduler adds requests and compares them with a node's allocatable; the API server compares a
container's requests with its limits. Both use this module. It is pure: strings in, values out.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Final

#: apimachinery's ``splitREString``, quoted in the error every bad quantity produces.
SPLIT_RE: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"

DECIMAL_SI: Final = "DecimalSI"
BINARY_SI: Final = "BinarySI"
DECIMAL_EXPONENT: Final = "DecimalExponent"

#: The smallest unit a quantity keeps (``resource.Nano``): amounts are integers of nano-units.
NANO_PER_UNIT: Final = 10**9
#: ``maxInt64Factors``: numbers with more digits take the arbitrary-precision path.
_MAX_INT64_FACTORS: Final = 18
_INT64_MAX: Final = 2**63 - 1

_DECIMAL_SUFFIXES: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT: Final = {v: k for k, v in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT: Final = {v: k for k, v in _BINARY_SUFFIXES.items()}
_SUFFIX_CHARS: Final = frozenset("eEinumkKMGTP")
_DIGITS: Final = frozenset("0123456789")


class QuantityError(ValueError):
    """A string that is not a quantity; ``str(error)`` is upstream's message, word for word.

    The API server meets bad quantities while *decoding* a request, so they are answered 400 BadRequest
    (``Pod in version "v1" cannot be handled as a Pod: quantities must match ...``), not 422.
    """


ERR_FORMAT = "quantities must match the regular expression '" + SPLIT_RE + "'"
ERR_NUMERIC = "unable to parse quantity's numeric part"
ERR_SUFFIX = "unable to parse quantity's suffix"


@functools.total_ordering
@dataclass(frozen=True, slots=True, eq=False)
class Quantity:
    """An exact amount (``nanos`` nano-units) and the format it prints in.

    Equality and ordering compare amounts only (``1000m == 1``), as ``Quantity.Cmp`` does.
    """

    nanos: int
    format: str = DECIMAL_SI
    #: The client's own spelling, kept when it is already canonical (``1Gi``, ``100m``), as upstream
    #: does; None means "print the canonical form".
    cached: str | None = None
    #: The decimal scale of upstream's fast int64 representation, or None for its big-decimal one;
    #: only ``round_up`` looks at it (to decide whether the cached spelling survives).
    scale: int | None = None

    # -- arithmetic and comparison --------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.nanos == other.nanos
        return NotImplemented

    def __lt__(self, other: Quantity) -> bool:
        return self.nanos < other.nanos

    def __hash__(self) -> int:
        return hash(self.nanos)

    def __add__(self, other: Quantity) -> Quantity:
        """``q.Add(other)``: the sum keeps the left operand's format."""
        return Quantity(self.nanos + other.nanos, self.format)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.nanos - other.nanos, self.format)

    def __neg__(self) -> Quantity:
        return Quantity(-self.nanos, self.format)

    def is_zero(self) -> bool:
        return self.nanos == 0

    def sign(self) -> int:
        return (self.nanos > 0) - (self.nanos < 0)

    def value(self) -> int:
        """``Value()``: the amount in whole units, rounded up (away from zero)."""
        return _div_away(self.nanos, NANO_PER_UNIT)

    def milli_value(self) -> int:
        """``MilliValue()``: the amount in milli-units, rounded up (how the scheduler counts CPU)."""
        return _div_away(self.nanos, 10**6)

    def round_up(self, scale: int = -3) -> Quantity:
        """``RoundUp(scale)``: round away from zero to a multiple of 10**scale (defaults use -3)."""
        step = 10 ** (9 + scale) if scale >= -9 else 1
        nanos = _div_away(self.nanos, step) * step
        if self.scale is not None and self.scale >= scale:
            return self  # nothing to round: upstream keeps the cached spelling too
        return Quantity(nanos, self.format, None, scale if self.scale is not None else None)

    # -- printing ---------------------------------------------------------------------------------

    def __str__(self) -> str:
        return self.cached if self.cached is not None else self.canonical()

    def canonical(self) -> str:
        """``CanonicalizeBytes``: the form the API server prints."""
        if self.nanos == 0:
            return "0"
        fmt = self.format
        if fmt == BINARY_SI:
            if -1024 * NANO_PER_UNIT < self.nanos < 1024 * NANO_PER_UNIT:
                fmt = DECIMAL_SI  # small binary amounts print as decimal ("512", not "0.5Ki")
            elif self.nanos % NANO_PER_UNIT:
                fmt = DECIMAL_SI  # not a whole number: would lose precision in base 1024
        if fmt == BINARY_SI:
            amount, exponent = _remove_factors(self.nanos // NANO_PER_UNIT, 1024)
            suffix = _BINARY_BY_EXPONENT.get(exponent * 10)
            if suffix is not None:
                return f"{amount}{suffix}"
            # beyond Ei: fall back to decimal printing rather than lose the amount
            fmt = DECIMAL_SI
        amount, exponent = _remove_factors(self.nanos, 10)
        exponent -= 9
        while exponent % 3:
            amount *= 10
            exponent -= 1
        if fmt == DECIMAL_EXPONENT:
            return f"{amount}e{exponent}" if exponent else str(amount)
        suffix_text = _DECIMAL_BY_EXPONENT.get(exponent)
        if suffix_text is None:  # past "E" or below "n": upstream has no suffix; say it as an exponent
            return f"{amount}e{exponent}"
        return f"{amount}{suffix_text}"


def _div_away(value: int, step: int) -> int:
    """Divide rounding away from zero."""
    quotient, remainder = divmod(abs(value), step)
    if remainder:
        quotient += 1
    return quotient if value >= 0 else -quotient


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    negative = value < 0
    value = abs(value)
    times = 0
    while value >= base and value % base == 0:
        value //= base
        times += 1
    return (-value if negative else value), times


def _split(text: str) -> tuple[bool, str, str, str]:
    """``parseQuantityString``: sign, integer digits, fraction digits and suffix, or ERR_FORMAT."""
    positive = True
    pos, end = 0, len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT)
    return positive, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    """``suffixHandler.interpret``: base, exponent and format of a suffix, or ERR_SUFFIX."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[:1] in ("+", "-") else digits
        if body and all(c in _DIGITS for c in body):
            return 10, int(digits), DECIMAL_EXPONENT
    raise QuantityError(ERR_SUFFIX)


def parse_quantity(text: str) -> Quantity:
    """``resource.ParseQuantity``: the exact amount of ``text``, or QuantityError with upstream's text."""
    if not text:
        raise QuantityError(ERR_FORMAT)
    if text == "0":
        return Quantity(0, DECIMAL_SI, "0", 0)
    positive, num, denom, suffix = _split(text)
    base, exponent, fmt = _interpret(suffix)

    # Upstream's fast path (int64Amount) keeps the client's spelling when it is already canonical and
    # remembers its decimal scale; the result's amount is the same either way.
    cached: str | None = None
    scale: int | None = None
    if fmt == BINARY_SI:
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1 if exponent >= 0 and not denom else -1
        fast_scale = 0
    else:
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
        fast_scale = exponent
    if precision >= 0:
        fast_scale -= len(denom)
        shifted = num + denom
        mantissa = 2**exponent if fmt == BINARY_SI else 1
        if fast_scale >= -9 and int(shifted) <= _INT64_MAX and int(shifted) * mantissa <= _INT64_MAX:
            scale = fast_scale
            if fmt == BINARY_SI:
                if exponent % 10 == 0 and int(shifted) & 0x07:
                    cached = text
            elif fast_scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
                cached = text

    digits = int(num + denom)
    if base == 10:
        # amount = digits * 10**(exponent - len(denom)), in nano-units, rounded up (away from zero)
        power = exponent - len(denom) + 9
        nanos = digits * 10**power if power >= 0 else _div_away(digits, 10**-power)
    else:
        nanos = _div_away(digits * 2**exponent * NANO_PER_UNIT, 10 ** len(denom))
        if nanos > _INT64_MAX * NANO_PER_UNIT:
            nanos = _INT64_MAX * NANO_PER_UNIT  # upstream caps binary amounts at MaxInt64
        if 0 < nanos < NANO_PER_UNIT:
            fmt = DECIMAL_SI
    if not positive:
        nanos = -nanos
    return Quantity(nanos, fmt, cached, scale)


def parse_json_quantity(value: object) -> Quantity:
    """A quantity as it arrives in JSON: a string, or a bare number (``cpu: 2``, ``cpu: 0.5``)."""
    if isinstance(value, bool) or value is None:
        raise QuantityError(ERR_FORMAT)
    if isinstance(value, int):
        return parse_quantity(str(value))
    if isinstance(value, float):
        return parse_quantity(repr(value) if value != int(value) else str(int(value)))
    if isinstance(value, str):
        return parse_quantity(value.strip())
    raise QuantityError(ERR_FORMAT)


def must_parse(text: str) -> Quantity:
    """``resource.MustParse``: for constants in code."""
    return parse_quantity(text)


__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "ERR_FORMAT",
    "ERR_NUMERIC",
    "ERR_SUFFIX",
    "Quantity",
    "QuantityError",
    "must_parse",
    "parse_json_quantity",
    "parse_quantity",
]
