"""A mutating webhook's patched object is decoded back as upstream's dispatcher decodes it.

(admission ``plugin/webhook/mutating/dispatcher.go``: a non-strict JSON decode into the kind's Go
struct.) What a webhook adds cannot store what a client could not: unknown fields are dropped, a value
of the wrong type is an InternalError (500, as upstream answers it: the webhook is at fault, not the
client).
"""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.apiserver import errors
from controlplane.apiserver.admission.mutatingwebhook import _decoded
from tests.controlplane.apiserver.admission.test_webhook import attributes

SPEC: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
POD: dict[str, Any] = {"metadata": {"name": "web"}, "spec": SPEC}


def test_unknown_fields_a_webhook_adds_are_dropped_without_a_word() -> None:
    patched = {**POD, "spec": {**SPEC, "nodeNayme": "n1"}, "extra": True}
    assert _decoded(patched, attributes()) == POD


def test_a_value_of_the_wrong_type_is_an_internal_error() -> None:
    patched = {**POD, "spec": {**SPEC, "priority": "high"}}
    with pytest.raises(errors.StatusError) as refused:
        _decoded(patched, attributes())
    assert refused.value.code == 500
    assert refused.value.message == (
        "Internal error occurred: json: cannot unmarshal string into Go struct field "
        "PodSpec.spec.priority of type int32"
    )


def test_a_kind_without_a_schema_passes_as_it_is() -> None:
    patched = {"metadata": {"name": "w"}, "anything": {"goes": 1}}
    widget = attributes(resource="widgets", kind="Widget", kind_group="example.com")
    assert _decoded(patched, widget) is patched
