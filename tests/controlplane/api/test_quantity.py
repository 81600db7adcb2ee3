"""Quantities against apimachinery's ``pkg/api/resource/quantity_test.go`` (parse, canonical form, errors)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.api.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    ERR_FORMAT,
    ERR_SUFFIX,
    QuantityError,
    parse_json_quantity,
    parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "canonical", "fmt"),
    [
        ("0", "0", DECIMAL_SI),
        ("1", "1", DECIMAL_SI),
        ("1000m", "1", DECIMAL_SI),
        ("100m", "100m", DECIMAL_SI),
        ("1.5", "1500m", DECIMAL_SI),
        ("0.5", "500m", DECIMAL_SI),
        (".5", "500m", DECIMAL_SI),
        ("5.", "5", DECIMAL_SI),
        ("1000", "1k", DECIMAL_SI),
        ("1k", "1k", DECIMAL_SI),
        ("100M", "100M", DECIMAL_SI),
        ("0.001", "1m", DECIMAL_SI),
        ("0.0001", "100u", DECIMAL_SI),
        ("1n", "1n", DECIMAL_SI),
        ("0.1n", "1n", DECIMAL_SI),  # finer than nano rounds *up*: asking for some gets some
        ("-1", "-1", DECIMAL_SI),
        ("-100m", "-100m", DECIMAL_SI),
        ("1Ki", "1Ki", BINARY_SI),
        ("1Gi", "1Gi", BINARY_SI),
        ("1024Mi", "1Gi", BINARY_SI),
        ("0.5Gi", "512Mi", BINARY_SI),
        ("1.5Gi", "1536Mi", BINARY_SI),
        ("1000Mi", "1000Mi", BINARY_SI),
        ("0.5Ki", "512", BINARY_SI),  # binary amounts under 1Ki print as decimal
        ("1e3", "1e3", DECIMAL_EXPONENT),
        ("1E3", "1e3", DECIMAL_EXPONENT),
        ("12e2", "1200", DECIMAL_EXPONENT),
        ("1e-3", "1e-3", DECIMAL_EXPONENT),
    ],
)
def test_parse_and_canonical_form(text: str, canonical: str, fmt: str) -> None:
    quantity = parse_quantity(text)
    assert quantity.canonical() == canonical
    assert quantity.format == fmt
    assert parse_quantity(canonical) == quantity


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", ERR_FORMAT),
        ("abc", ERR_FORMAT),
        ("1Gb", ERR_FORMAT),
        ("1.2.3", ERR_FORMAT),
        ("1 ", ERR_FORMAT),
        ("1Mib", ERR_FORMAT),
        ("1K", ERR_SUFFIX),
        ("1e", ERR_SUFFIX),
        ("1i", ERR_SUFFIX),
        ("1+1", ERR_SUFFIX),  # "+1" is read as the suffix, and there is no such suffix
        ("1Mi1", ERR_SUFFIX),
    ],
)
def test_bad_quantities_fail_with_upstreams_message(text: str, message: str) -> None:
    with pytest.raises(QuantityError) as raised:
        parse_quantity(text)
    assert str(raised.value) == message


def test_the_format_error_quotes_upstreams_regular_expression() -> None:
    assert ERR_FORMAT == (
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


def test_canonical_spellings_are_kept_as_written_and_others_are_canonicalized() -> None:
    # Upstream keeps the client's string only when it is already canonical ("+1" is, oddly).
    assert str(parse_quantity("+1")) == "+1"
    assert parse_quantity("+1").canonical() == "1"
    assert str(parse_quantity("1000m")) == "1"
    assert str(parse_quantity("2048Mi")) == "2Gi"


def test_round_up_to_milli_as_resource_lists_are_defaulted() -> None:
    assert str(parse_quantity("100u").round_up(-3)) == "1m"
    assert str(parse_quantity("0.0001").round_up(-3)) == "1m"
    assert str(parse_quantity("1.5").round_up(-3)) == "1500m"
    assert str(parse_quantity("+1").round_up(-3)) == "+1"  # scale already coarse enough: untouched


def test_comparison_and_arithmetic_are_exact() -> None:
    assert parse_quantity("1") == parse_quantity("1000m")
    assert parse_quantity("999m") < parse_quantity("1")
    assert parse_quantity("1Gi") > parse_quantity("1G")
    total = parse_quantity("100m") + parse_quantity("200m")
    assert total == parse_quantity("300m") and str(total) == "300m"
    assert str(parse_quantity("1Gi") + parse_quantity("512Mi")) == "1536Mi"
    assert str(parse_quantity("1") - parse_quantity("250m")) == "750m"


def test_values_round_up_like_value_and_milli_value() -> None:
    assert parse_quantity("100m").milli_value() == 100
    assert parse_quantity("1.5").value() == 2
    assert parse_quantity("1n").milli_value() == 1
    assert parse_quantity("1Gi").value() == 2**30
    assert parse_quantity("-1.5").value() == -2


def test_json_numbers_are_quantities_too() -> None:
    assert str(parse_json_quantity(2)) == "2"
    assert str(parse_json_quantity(0.5)) == "500m"
    assert str(parse_json_quantity(" 1Gi ")) == "1Gi"
    with pytest.raises(QuantityError):
        parse_json_quantity(True)


_SUFFIXES = ["", "m", "u", "n", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "e3", "e-2"]


@given(
    whole=st.integers(min_value=0, max_value=10**12),
    fraction=st.text(alphabet="0123456789", max_size=6),
    suffix=st.sampled_from(_SUFFIXES),
    negative=st.booleans(),
)
def test_the_canonical_form_parses_back_to_the_same_amount(
    whole: int, fraction: str, suffix: str, negative: bool
) -> None:
    text = ("-" if negative else "") + str(whole) + (f".{fraction}" if fraction else "") + suffix
    quantity = parse_quantity(text)
    again = parse_quantity(quantity.canonical())
    assert again == quantity
    assert again.canonical() == quantity.canonical()
