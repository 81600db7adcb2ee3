"""The JSON serializer: compact bytes out, the same objects back, and no int64-breaking integers."""

from __future__ import annotations

import json

import pytest

from controlplane.api import serializer


def test_an_object_round_trips_as_the_standard_library_writes_it() -> None:
    pod = {"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"replicas": 3, "ratio": 0.5}}
    data = serializer.encode(pod)
    assert data == json.dumps(pod, separators=(",", ":")).encode()
    assert serializer.decode(data) == pod


def test_text_is_written_as_utf8_as_go_does() -> None:
    assert serializer.encode({"note": "café"}) == '{"note":"café"}'.encode()
    assert serializer.decode('{"note":"café"}'.encode()) == {"note": "café"}


def test_an_integer_beyond_64_bits_is_refused_not_stored() -> None:
    with pytest.raises(serializer.UnencodableObject, match="64-bit"):
        serializer.encode({"spec": {"terminationGracePeriodSeconds": 2**70}})


def test_decoded_objects_share_their_key_strings() -> None:
    first = serializer.decode(b'{"metadata":{"name":"a"}}')
    second = serializer.decode(b'{"metadata":{"name":"b"}}')
    assert next(iter(first)) is next(iter(second))  # one "metadata" string, not one per object


def test_what_is_not_json_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        serializer.decode(b"{not json")
    assert serializer.decode(b"1e400") == float("inf")  # read as the standard library reads it
