"""ObjectMeta helpers: the metadata section, the cache key, and metav1.Time read and written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controlplane.api.meta import (
    format_micro_time,
    format_time,
    object_key,
    object_meta,
    parse_time,
    parse_timestamp,
)

#: 2023-11-14T22:13:20Z
T0 = 1_700_000_000.0


def test_the_metadata_section_or_an_empty_one() -> None:
    assert object_meta({"metadata": {"name": "web"}}) == {"name": "web"}
    assert object_meta({}) == {}
    assert object_meta({"metadata": None}) == {}


def test_the_key_is_namespace_slash_name_or_the_name_alone_for_a_cluster_scoped_object() -> None:
    # client-go's MetaNamespaceKeyFunc: no "default" is made up, no leading "/" for cluster scope.
    assert object_key({"metadata": {"namespace": "default", "name": "web-0"}}) == "default/web-0"
    assert object_key({"metadata": {"name": "node-1"}}) == "node-1"
    assert object_key({"metadata": {"namespace": "", "name": "node-1"}}) == "node-1"


def test_a_time_is_rfc3339_in_utc_and_reads_back() -> None:
    assert format_time(T0) == "2023-11-14T22:13:20Z"
    assert format_time(T0 + 0.75) == "2023-11-14T22:13:20Z", "whole seconds, cut down"
    assert parse_timestamp(format_time(T0)) == T0
    assert parse_time("2023-11-14T22:13:20Z") == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)


def test_a_micro_time_keeps_microseconds() -> None:
    assert format_micro_time(T0 + 0.123456) == "2023-11-14T22:13:20.123456Z"
    assert parse_timestamp("2023-11-14T22:13:20.123456Z") == pytest.approx(T0 + 0.123456)
    # Nanoseconds (Go's RFC3339Nano) are cut to the microsecond.
    assert parse_time("2023-11-14T22:13:20.123456789Z") == datetime(
        2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC
    )


def test_an_offset_is_honoured_and_a_time_without_one_is_utc() -> None:
    plus_two = parse_time("2023-11-15T00:13:20+02:00")
    assert plus_two == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert plus_two is not None and plus_two.utcoffset() == timedelta(hours=2)
    # Not RFC 3339 (no offset): read as UTC, the only zone the API server writes, whatever the
    # local time zone of this machine.
    naive = parse_time("2023-11-14T22:13:20")
    assert naive == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert naive is not None and naive.tzinfo is UTC
    assert parse_timestamp("2023-11-14T22:13:20") == T0


@pytest.mark.parametrize(
    "value", [None, "", "yesterday", 42, "0001-01-01T00:00:00Z", datetime(2023, 1, 1, tzinfo=UTC)]
)
def test_unset_or_unreadable_times_are_none(value: object) -> None:
    # Go's zero time is how an unset metav1.Time reads (upstream writes it as null).
    assert parse_time(value) is None
    assert parse_timestamp(value) is None
