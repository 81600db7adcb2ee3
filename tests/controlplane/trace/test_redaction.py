"""Redaction's quick check agrees with the full scrub: an event with nothing to hide comes back as
itself (no copy), and one with a Secret's data or raw bytes anywhere, however deep, is scrubbed."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controlplane.trace.redaction import _holds_secret_values, _scrub, is_secret_key, redact

_leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.binary(max_size=3)
_secrets = st.fixed_dictionaries(
    {"kind": st.just("Secret"), "data": st.dictionaries(st.text(max_size=3), st.text(max_size=3))}
)
_values = st.recursive(
    _leaves | _secrets,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


@given(_values)
def test_the_quick_check_says_what_the_scrub_would_do(value: Any) -> None:
    _, changed = _scrub(value)
    assert _holds_secret_values(value) is changed


def test_an_event_with_nothing_to_hide_is_returned_itself() -> None:
    event = {
        "type": "watch.event",
        "object": {"kind": "Pod", "metadata": {"name": "a"}, "spec": {"x": [1, "b"]}},
    }
    assert redact(event) is event


def test_a_secret_deep_in_a_list_and_bytes_are_hidden() -> None:
    event = {
        "type": "x",
        "items": [{"nested": {"kind": "Secret", "data": {"password": "aHVudGVyMg=="}}}],
        "raw": b"ab",
    }
    hidden = redact(event)
    assert hidden["items"][0]["nested"]["data"] == {"password": "<redacted: 12 bytes>"}
    assert hidden["raw"] == "<2 bytes>"
    assert event["raw"] == b"ab"  # a copy: the event itself is left as it was


def test_secret_locations_are_found_by_their_path_segment_only() -> None:
    assert is_secret_key("/registry/secrets/default/db")
    assert is_secret_key("/api/v1/namespaces/default/secrets")
    assert not is_secret_key("/registry/configmaps/default/my-secrets-list")
    assert not is_secret_key("/registry/configmaps/default/app")
