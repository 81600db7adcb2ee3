"""The client's metric hooks: every attempt a REST client makes is reported, by code, method and host."""

from __future__ import annotations

import httpx
import pytest

from controlplane.client.errors import NotFound, TransportError
from controlplane.client.rest import ERROR_CODE, RESTClient
from controlplane.metrics import RestClientMetrics
from tests.controlplane.client.conftest import Cluster, configmap


def counts(metrics: RestClientMetrics) -> dict[tuple[str, ...], float]:
    return dict(metrics.requests.values)


async def test_each_request_is_counted_by_code_method_and_host(cluster: Cluster) -> None:
    metrics = RestClientMetrics()
    client = RESTClient(cluster.config(request_metrics=metrics))
    try:
        configmaps = client.resource("", "v1", "configmaps", "default")
        await configmaps.create(configmap("counted"))
        await configmaps.get("counted")
        with pytest.raises(NotFound):
            await configmaps.get("missing")
    finally:
        await client.aclose()
    assert counts(metrics) == {
        ("201", "POST", "inprocess"): 1,
        ("200", "GET", "inprocess"): 1,
        ("404", "GET", "inprocess"): 1,
    }
    (family,) = list(metrics.collect())
    assert family.name == "rest_client_requests" and family.type == "counter"


async def test_an_attempt_without_an_answer_counts_as_an_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    from controlplane.client.config import Config

    metrics = RestClientMetrics()
    config = Config(
        host="https://10.0.0.1:6443/clusters/demo", request_metrics=metrics, qps=-1, max_retries=0
    )
    http = httpx.AsyncClient(transport=httpx.MockTransport(refuse), base_url=config.host)
    client = RESTClient(config, http_client=http)
    try:
        with pytest.raises(TransportError):
            await client.request("POST", "/api/v1/namespaces/default/configmaps", body={})
    finally:
        await http.aclose()
    assert counts(metrics) == {(ERROR_CODE, "POST", "10.0.0.1:6443"): 1}
