"""/metrics: upstream's API server and storage series, in a text Prometheus' own parser reads."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from controlplane.apiserver.apiservermetrics import REQUEST_DURATION_BUCKETS, clean_scope, reported_verb
from controlplane.apiserver.kubesystemaddons import coredns_objects, kube_proxy_objects
from controlplane.apiserver.requestinfo import parse
from tests.controlplane.apiserver.conftest import API

#: What kubeadm's addon phase writes when the server starts, by resource (``kubesystemaddons.py``).
ADDONS = Counter(plural for (_, _, plural), _ in [*kube_proxy_objects(), *coredns_objects()])

CMS = "/api/v1/namespaces/default/configmaps"


async def scrape(api: API, accept: str = "") -> dict[str, Any]:
    response = await api.client.get("/metrics", headers={"Accept": accept} if accept else {})
    assert response.status_code == 200
    return {family.name: family for family in text_string_to_metric_families(response.text)}


def samples(family: Any, name: str, **labels: str) -> list[Any]:
    return [
        s for s in family.samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]


async def test_requests_are_counted_with_upstreams_names_and_labels(api: API) -> None:
    assert (
        await api.client.post(CMS, json={"kind": "ConfigMap", "metadata": {"name": "m"}})
    ).status_code == 201
    assert (await api.client.get(CMS + "/m")).status_code == 200
    assert (await api.client.get(CMS + "/missing")).status_code == 404
    assert (await api.client.get(CMS)).status_code == 200
    assert (await api.client.get("/api/v1/configmaps")).status_code == 200
    families = await scrape(api)

    requests = families["apiserver_request"]
    assert requests.type == "counter"
    (created,) = samples(requests, "apiserver_request_total", verb="POST", resource="configmaps")
    assert created.labels == {
        "verb": "POST",
        "dry_run": "",
        "group": "",
        "version": "v1",
        "resource": "configmaps",
        "subresource": "",
        "scope": "resource",
        "component": "apiserver",
        "code": "201",
    }
    assert created.value == 1
    assert samples(
        requests, "apiserver_request_total", verb="GET", resource="configmaps", code="200", scope="resource"
    )
    assert samples(requests, "apiserver_request_total", verb="GET", resource="configmaps", code="404")
    assert samples(requests, "apiserver_request_total", verb="LIST", resource="configmaps", scope="namespace")
    assert samples(requests, "apiserver_request_total", verb="LIST", resource="configmaps", scope="cluster")

    durations = families["apiserver_request_duration_seconds"]
    assert durations.type == "histogram"
    buckets = samples(
        durations, "apiserver_request_duration_seconds_bucket", verb="POST", resource="configmaps"
    )
    assert [float(b.labels["le"]) for b in buckets] == [*REQUEST_DURATION_BUCKETS, float("inf")]
    assert "code" not in buckets[0].labels and buckets[-1].value == 1
    (count,) = samples(
        durations, "apiserver_request_duration_seconds_count", verb="POST", resource="configmaps"
    )
    assert count.value == 1

    inflight = families["apiserver_current_inflight_requests"]
    assert inflight.type == "gauge"
    kinds = {s.labels["request_kind"]: s.value for s in inflight.samples}
    assert set(kinds) == {"readOnly", "mutating"} and kinds["readOnly"] >= 1  # the scrape itself


async def test_store_requests_and_stored_objects_are_reported(api: API) -> None:
    for name in ("a", "b"):
        await api.client.post(CMS, json={"kind": "ConfigMap", "metadata": {"name": name}})
    await api.client.post(
        "/apis/apps/v1/namespaces/default/deployments",
        json={
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        },
    )
    families = await scrape(api)
    etcd = families["etcd_request_duration_seconds"]
    assert etcd.type == "histogram"
    (creates,) = samples(
        etcd, "etcd_request_duration_seconds_count", operation="create", group="", resource="configmaps"
    )
    assert creates.value == 2 + ADDONS["configmaps"]
    assert samples(
        etcd, "etcd_request_duration_seconds_count", operation="create", group="apps", resource="deployments"
    )
    assert (
        samples(families["etcd_requests"], "etcd_requests_total", operation="create", resource="configmaps")[
            0
        ].value
        == 2 + ADDONS["configmaps"]
    )
    objects = {s.labels["resource"]: s.value for s in families["apiserver_storage_objects"].samples}
    assert objects["configmaps"] == 2 + ADDONS["configmaps"]
    assert objects["deployments.apps"] == 1 + ADDONS["deployments"]
    assert objects["namespaces"] == 4  # the system namespaces


async def test_openmetrics_is_served_to_a_scraper_that_asks(api: API) -> None:
    response = await api.client.get(
        "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"}
    )
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.rstrip().endswith("# EOF")
    plain = await api.client.get("/metrics")
    assert plain.headers["content-type"].startswith("text/plain")


async def test_watches_and_applies_get_their_own_verbs(api: API) -> None:
    await api.client.get(CMS, params={"watch": "true", "timeoutSeconds": "1"})
    await api.client.patch(
        CMS + "/applied",
        params={"fieldManager": "test"},
        content='{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}}',
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    await api.client.post(
        CMS, params={"dryRun": "All"}, json={"kind": "ConfigMap", "metadata": {"name": "dry"}}
    )
    requests = (await scrape(api))["apiserver_request"]
    assert samples(requests, "apiserver_request_total", verb="WATCH", resource="configmaps", code="200")
    assert samples(requests, "apiserver_request_total", verb="APPLY", resource="configmaps")
    assert samples(requests, "apiserver_request_total", verb="POST", dry_run="All")


@pytest.mark.parametrize(
    ("method", "path", "query", "verb", "scope"),
    [
        ("GET", "/api/v1/namespaces/default/pods/web", {}, "GET", "resource"),
        ("GET", "/api/v1/namespaces/default/pods", {}, "LIST", "namespace"),
        ("GET", "/api/v1/pods", {"watch": "1"}, "WATCH", "cluster"),
        ("GET", "/api/v1/watch/pods", {}, "WATCH", "cluster"),
        ("POST", "/api/v1/namespaces/default/pods", {}, "POST", "resource"),
        ("DELETE", "/api/v1/namespaces/default/pods", {}, "DELETE", "namespace"),
        ("GET", "/healthz", {}, "GET", ""),
        ("TRACE", "/api/v1/namespaces/default/pods/web", {}, "other", "resource"),
    ],
)
def test_verbs_and_scopes_as_upstream_cleans_them(
    method: str, path: str, query: dict[str, str], verb: str, scope: str
) -> None:
    info = parse(method, path, query)
    assert clean_scope(info) == scope
    assert reported_verb(method, scope, query, "", info) == verb


async def test_flow_control_reports_its_levels_and_what_it_dispatched(api: API) -> None:
    await api.client.post(CMS, json={"kind": "ConfigMap", "metadata": {"name": "seen"}})
    families = await scrape(api)
    limits = {
        s.labels["priority_level"]: s.value
        for s in families["apiserver_flowcontrol_nominal_limit_seats"].samples
    }
    assert limits["exempt"] == 0 and limits["global-default"] > 0
    executing = families["apiserver_flowcontrol_current_executing_requests"]
    assert executing.type == "gauge" and {s.labels["priority_level"] for s in executing.samples} >= {
        "workload-low"
    }
    dispatched = families["apiserver_flowcontrol_dispatched_requests"]
    assert dispatched.type == "counter"
    assert sum(s.value for s in dispatched.samples if s.name.endswith("_total")) >= 1
