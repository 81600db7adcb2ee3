"""Deprecated kinds: every request to one carries upstream's warning, and nothing else does."""

from __future__ import annotations

import pytest

from controlplane.apiserver import deprecation
from controlplane.apiserver.deprecation import Lifecycle
from tests.controlplane.apiserver.conftest import API

ENDPOINTS_WARNING = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"


def test_warnings_read_as_upstreams_warning_message(monkeypatch: pytest.MonkeyPatch) -> None:
    assert deprecation.warning("", "v1", "Endpoints") == ENDPOINTS_WARNING
    assert deprecation.warning("", "v1", "ComponentStatus") == "v1 ComponentStatus is deprecated in v1.19+"
    assert deprecation.warning("discovery.k8s.io", "v1", "EndpointSlice") is None
    monkeypatch.setitem(
        deprecation.DEPRECATED,
        ("policy", "v1beta1", "PodDisruptionBudget"),
        Lifecycle((1, 21), removed=(1, 25), replacement=("policy", "v1", "PodDisruptionBudget")),
    )
    assert deprecation.warning("policy", "v1beta1", "PodDisruptionBudget") == (
        "policy/v1beta1 PodDisruptionBudget is deprecated in v1.21+, unavailable in v1.25+;"
        " use policy/v1 PodDisruptionBudget"
    )


async def test_every_verb_on_endpoints_carries_the_warning(api: API) -> None:
    expected = f'299 - "{ENDPOINTS_WARNING}"'
    body = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "legacy"}}
    path = "/api/v1/namespaces/default/endpoints"
    created = await api.client.post(path, json=body)
    assert created.status_code == 201 and created.headers["Warning"] == expected
    got = await api.client.get(f"{path}/legacy")
    assert got.status_code == 200 and got.headers["Warning"] == expected
    listed = await api.client.get(path)
    assert listed.status_code == 200 and listed.headers["Warning"] == expected
    missing = await api.client.get(f"{path}/nope")
    assert missing.status_code == 404 and missing.headers["Warning"] == expected
    async with api.client.stream("GET", f"{path}?watch=true&timeoutSeconds=1") as watching:
        assert watching.status_code == 200 and watching.headers["Warning"] == expected
    deleted = await api.client.delete(f"{path}/legacy")
    assert deleted.status_code == 200 and deleted.headers["Warning"] == expected


async def test_a_kind_that_is_not_deprecated_carries_no_warning(api: API) -> None:
    listed = await api.client.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices")
    assert listed.status_code == 200 and "Warning" not in listed.headers
    async with api.client.stream(
        "GET", "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1"
    ) as w:
        assert w.status_code == 200 and "Warning" not in w.headers
