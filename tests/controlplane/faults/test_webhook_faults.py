"""webhook-down and webhook-slow: the API server's calls to an admission webhook refused or delayed.

Upstream (apiserver ``pkg/admission/plugin/webhook/validating/dispatcher.go``): a call that fails
(a refused connect, a timeout) is an ``ErrCallingWebhook``; with ``failurePolicy: Fail`` the request is
refused with ``apierrors.NewInternalError`` (500, reason InternalError, ``Internal error occurred:
failed calling webhook "x": ...``), with ``Ignore`` it goes on as if the webhook were not there.
The tests run a real cluster and the example webhook server, over HTTPS on a loopback port.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from controlplane.apiserver.admission.webhookclient import WebhookCondition, dial_address
from controlplane.client.errors import APIError
from controlplane.faults.catalogue import CATALOGUE, InvalidFault, check
from controlplane.faults.webhooklinks import WebhookLinkBook
from controlplane.webhooks.example import ExampleWebhookServer
from tests.controlplane.faults.conftest import Event, Running

HOOK = "check.kubelab.example"
#: Only the test's own ConfigMaps go to the webhook (not those the controllers write).
SELECTED = {"kubelab.example/webhook-faults": "yes"}


# -- the pure book and the parameters --------------------------------------------------------------


def test_the_book_says_which_webhooks_are_down_or_slow() -> None:
    book = WebhookLinkBook()
    assert book.empty and book.condition(HOOK) is None
    book.down("f1", HOOK)
    assert book.condition(HOOK) == WebhookCondition(down=True)
    assert book.condition("other.kubelab.example") is None, "another webhook is reachable"
    book.slow("f2", "*", 0.2)
    book.slow("f3", HOOK, 0.3)
    assert book.condition(HOOK) == WebhookCondition(down=True, delay=0.5), "delays add up, as hops do"
    assert book.condition("other.kubelab.example") == WebhookCondition(delay=0.2), "* is every webhook"
    book.remove("f1")
    book.remove("f3")
    assert book.condition(HOOK) == WebhookCondition(delay=0.2)
    book.remove("f2")
    assert book.empty and book.condition(HOOK) is None


def test_the_dialed_address_is_the_url_s_host_and_port() -> None:
    assert dial_address("https://127.0.0.1:9443/validate?timeout=10s") == "127.0.0.1:9443"
    assert dial_address("https://webhook.example/validate") == "webhook.example:443"
    assert dial_address("https://[::1]:8443/x") == "[::1]:8443"


def test_the_webhook_is_named_or_every_one() -> None:
    everyone = check("webhook-down", {})
    assert everyone.parameters() == {"webhook": "*"} and everyone.target == "webhook:*"
    assert everyone.label() == "Take every admission webhook down"
    assert everyone.label("zh-hans") == "让 所有准入 webhook 宕机"
    assert everyone.clear_label() == "Bring every admission webhook back up"
    named = check("webhook-down", {"webhook": HOOK, "for": 60}, nodes=3)
    assert named.target == f"webhook:{HOOK}" and named.duration == 60.0
    assert named.label() == f"Take webhook {HOOK} down for 60 s"
    assert check("webhook-down", {"webhook": f"webhook:{HOOK}"}).parameters() == {"webhook": HOOK}, (
        "its diagram id names it too"
    )
    slow = check("webhook-slow", {"webhook": HOOK, "ms": "1500"})
    assert slow.parameters() == {"webhook": HOOK, "ms": 1500}
    assert slow.label() == f"Delay calls to webhook {HOOK} by 1500 ms"
    assert slow.label("zh-hans") == f"让对 webhook {HOOK} 的调用延迟 1500 毫秒"
    assert slow.clear_label() == f"Give webhook {HOOK} a fast link again"
    assert check("webhook-slow", {"ms": 100}).target == "webhook:*"
    for kind in ("webhook-down", "webhook-slow"):
        assert CATALOGUE[kind].link_to == "apiserver", "the diagram draws the link to the API server"


@pytest.mark.parametrize(
    ("kind", "values", "parameter", "message"),
    [
        ("webhook-down", {"webhook": "Check_Pods"}, "webhook", "'Check_Pods' is not an admission webhook"),
        ("webhook-down", {"webhook": "a..b"}, "webhook", "is not an admission webhook's name"),
        ("webhook-down", {"webhook": 7}, "webhook", "7 is not an admission webhook's name"),
        ("webhook-down", {"webhook": "x" * 254}, "webhook", "is not an admission webhook's name"),
        ("webhook-down", {"webhook": HOOK, "ms": 100}, "ms", "webhook-down has no parameter 'ms'"),
        ("webhook-down", {"for": 0}, "for", "for must be from 1 to 1800 seconds"),
        ("webhook-slow", {"webhook": HOOK}, "ms", "webhook-slow needs 'ms'"),
        ("webhook-slow", {"ms": 0}, "ms", "ms must be from 1 to 10000 ms, not 0"),
        ("webhook-slow", {"ms": 10_001}, "ms", "ms must be from 1 to 10000 ms, not 10001"),
        ("webhook-slow", {"ms": 1.5}, "ms", "ms is a whole number of milliseconds, not 1.5"),
        ("webhook-slow", {"ms": True}, "ms", "ms is a whole number of milliseconds, not True"),
    ],
)
def test_what_is_refused_and_why(kind: str, values: dict[str, Any], parameter: str, message: str) -> None:
    with pytest.raises(InvalidFault) as refused:
        check(kind, values, nodes=3)
    assert message in str(refused.value)
    assert refused.value.parameter == parameter


# -- on a running cluster --------------------------------------------------------------------------


@pytest.fixture
async def webhook_server() -> AsyncIterator[ExampleWebhookServer]:
    server = ExampleWebhookServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def configure(
    running: Running,
    server: ExampleWebhookServer,
    *,
    policy: str,
    seconds: int = 10,
    kind: str = "ValidatingWebhookConfiguration",
) -> dict[str, Any]:
    """A ValidatingWebhookConfiguration of one webhook, ``HOOK``, calling the example server's
    ``/validate`` for the test's ConfigMaps; returned once the API server's watch cache has it (what
    admission reads)."""
    hook = {
        "name": HOOK,
        "clientConfig": {
            "url": f"{server.url}/{'validate' if kind.startswith('Validating') else 'mutate'}",
            "caBundle": server.serving.ca_bundle,
        },
        "rules": [
            {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}
        ],
        "objectSelector": {"matchLabels": SELECTED},
        "failurePolicy": policy,
        "timeoutSeconds": seconds,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    plural = f"{kind.lower()}s"
    configurations = running.admin.resource("admissionregistration.k8s.io", "v1", plural)
    created = await configurations.create(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": "webhook-faults"},
            "webhooks": [hook],
        }
    )
    apiserver = running.cluster.apiserver
    assert apiserver is not None
    cache = apiserver.caches[f"/registry/{plural}"]
    assert await cache.wait_for(int(created["metadata"]["resourceVersion"]), 10.0)
    return created


async def create_configmap(running: Running, name: str) -> dict[str, Any]:
    configmaps = running.admin.resource("", "v1", "configmaps", "default")
    return await configmaps.create({"metadata": {"name": name, "labels": SELECTED}, "data": {"a": "b"}})


async def step_of(running: Running, start: int) -> Event:
    """The webhook's admission.step of the next request after index ``start``."""
    return await running.trace.until(
        lambda e: e["type"] == "admission.step" and e.get("plugin") == HOOK, after=start
    )


async def audited(running: Running, audit_id: str) -> dict[str, Any]:
    """The audit event of the request ``audit_id`` at its last stage (ResponseComplete)."""
    auditor = running.cluster.apiserver.auditor if running.cluster.apiserver else None
    assert auditor is not None, "the cluster audits"
    await auditor.log.flush()
    events = [json.loads(line) for line in auditor.log.path.read_text().splitlines()]
    (event,) = [e for e in events if e["auditID"] == audit_id and e["stage"] == "ResponseComplete"]
    found: dict[str, Any] = event
    return found


async def completed(running: Running, step: Event) -> Event:
    """The request.completed of the request ``step`` was part of."""
    return await running.trace.until(
        lambda e: e["type"] == "request.completed" and e.get("id") == step["id"],
        after=running.trace.index(step),
    )


async def test_a_down_webhook_with_failure_policy_fail_refuses_the_request(
    running: Running, webhook_server: ExampleWebhookServer
) -> None:
    cluster, trace = running.cluster, running.trace
    await configure(running, webhook_server, policy="Fail")
    await create_configmap(running, "before")
    assert len(webhook_server.called("/validate")) == 1
    start = len(trace.events)

    await running.faults.apply(cluster.name, "webhook-down", {"webhook": HOOK}, reason="test")

    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    assert (on["fault"], on["target"], on["from"], on["to"]) == (
        "webhook-down",
        f"webhook:{HOOK}",
        f"webhook:{HOOK}",
        "apiserver",
    ), "the diagram draws the API server's link to the webhook's box cut"
    assert cluster.faults_in_force == [
        {"fault": "webhook-down", "target": f"webhook:{HOOK}", "to": "apiserver"}
    ]
    with pytest.raises(APIError) as refused:
        await create_configmap(running, "refused")
    url = f"{webhook_server.url}/validate?timeout=10s"
    message = (
        f'Internal error occurred: failed calling webhook "{HOOK}": failed to call webhook: '
        f'Post "{url}": dial tcp 127.0.0.1:{webhook_server.port}: connect: connection refused'
    )
    assert (refused.value.code, refused.value.reason, refused.value.status["message"]) == (
        500,
        "InternalError",
        message,
    )
    assert len(webhook_server.called("/validate")) == 1, "the webhook's server was not reached"
    step = await step_of(running, start)
    assert (step["outcome"], step["to"]) == ("deny", f"webhook:{HOOK}")
    assert "connection refused" in step["detail"] and "failurePolicy Fail" in step["detail"]
    assert (await completed(running, step))["code"] == 500
    configmaps = running.admin.resource("", "v1", "configmaps", "default")
    with pytest.raises(APIError) as missing:
        await configmaps.get("refused")
    assert missing.value.code == 404, "nothing was stored"
    start = len(trace.events)

    await running.faults.clear(cluster.name, "webhook-down", {"webhook": HOOK}, reason="test")

    off = await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    assert (off["target"], off["to"]) == (f"webhook:{HOOK}", "apiserver")
    assert cluster.faults_in_force == [] and cluster.webhook_network is None
    await create_configmap(running, "after")
    step = await step_of(running, start)
    assert (step["outcome"], step["to"], step.get("detail")) == ("pass", f"webhook:{HOOK}", None), (
        "cleared, the webhook is called again and answers"
    )
    assert [r["name"] for r in webhook_server.called("/validate")] == ["before", "after"]


async def test_a_down_webhook_with_failure_policy_ignore_lets_the_request_through(
    running: Running, webhook_server: ExampleWebhookServer
) -> None:
    cluster, trace = running.cluster, running.trace
    await configure(running, webhook_server, policy="Ignore")
    start = len(trace.events)

    await running.faults.apply(cluster.name, "webhook-down", {}, reason="every webhook")

    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    assert (on["target"], on["to"], on["params"]) == ("webhook:*", "apiserver", {"webhook": "*"})
    created = await create_configmap(running, "through")
    assert created["metadata"]["name"] == "through"
    assert webhook_server.called("/validate") == [], "the call failed: the webhook saw nothing"
    step = await step_of(running, start)
    assert step["outcome"] == "pass"
    assert "connection refused" in step["detail"] and "failurePolicy Ignore" in step["detail"]
    assert (await completed(running, step))["code"] == 201
    # Upstream notes in the request's audit event that a webhook failed open (validating
    # dispatcher.go: ValidatingAuditAnnotationFailedOpenKeyPrefix + round_0_index_<i>).
    annotations = (await audited(running, step["id"]))["annotations"]
    assert annotations["failed-open.validating.webhook.admission.k8s.io/round_0_index_0"] == HOOK

    await running.faults.clear(cluster.name, "webhook-down", None, reason="test")

    assert cluster.webhook_network is None
    assert cluster.apiserver is not None and cluster.apiserver.webhook_client.network is None
    await create_configmap(running, "called")
    assert [r["name"] for r in webhook_server.called("/validate")] == ["called"]
    step = await step_of(running, running.trace.index(step) + 1)
    annotations = (await audited(running, step["id"])).get("annotations", {})
    assert not any(key.startswith("failed-open.") for key in annotations), "it did not fail open"


async def test_a_down_mutating_webhook_that_fails_open_is_noted_in_the_audit_log(
    running: Running, webhook_server: ExampleWebhookServer
) -> None:
    cluster, trace = running.cluster, running.trace
    await configure(running, webhook_server, policy="Ignore", kind="MutatingWebhookConfiguration")
    start = len(trace.events)
    await running.faults.apply(cluster.name, "webhook-down", {"webhook": HOOK}, reason="test")

    created = await create_configmap(running, "unlabelled")

    assert "kubelab.example/mutated" not in created["metadata"].get("labels", {}), "no patch was made"
    step = await step_of(running, start)
    assert (step["phase"], step["outcome"]) == ("mutating", "pass")
    annotations = (await audited(running, step["id"]))["annotations"]
    assert annotations["failed-open.mutation.webhook.admission.k8s.io/round_0_index_0"] == HOOK


async def test_a_webhook_stays_down_across_an_api_server_restart(
    running: Running, webhook_server: ExampleWebhookServer
) -> None:
    cluster = running.cluster
    await configure(running, webhook_server, policy="Fail")
    await running.faults.apply(cluster.name, "webhook-down", {"webhook": HOOK}, reason="test")
    old = cluster.apiserver

    await running.lab.restart_apiserver(cluster.name)

    assert cluster.apiserver is not old and cluster.apiserver is not None
    assert cluster.apiserver.webhook_client.network is cluster.webhook_network is not None
    with pytest.raises(APIError) as refused:
        await create_configmap(running, "refused")
    assert refused.value.code == 500 and "connection refused" in refused.value.status["message"]
    await running.faults.clear(cluster.name, "webhook-down", {"webhook": HOOK}, reason="test")
    assert cluster.apiserver.webhook_client.network is None


async def test_a_slow_webhook_delays_the_request_below_its_timeout(
    running: Running, webhook_server: ExampleWebhookServer
) -> None:
    cluster, trace = running.cluster, running.trace
    await configure(running, webhook_server, policy="Fail", seconds=5)
    start = len(trace.events)

    await running.faults.apply(cluster.name, "webhook-slow", {"webhook": HOOK, "ms": 300}, reason="test")

    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    assert (on["fault"], on["target"], on["to"]) == ("webhook-slow", f"webhook:{HOOK}", "apiserver")
    await create_configmap(running, "late")
    step = await step_of(running, start)
    assert (step["outcome"], step.get("detail")) == ("pass", None), "it answered, in time"
    assert (await completed(running, step))["duration"] >= 0.3
    assert [r["name"] for r in webhook_server.called("/validate")] == ["late"]
    start = len(trace.events)

    await running.faults.clear(cluster.name, "webhook-slow", None, reason="test")

    await create_configmap(running, "prompt")
    step = await step_of(running, start)
    assert step["outcome"] == "pass"
    assert (await completed(running, step))["duration"] < 0.3, "cleared, the call is fast again"


async def test_a_slow_webhook_beyond_its_timeout_fails_the_call(
    running: Running, webhook_server: ExampleWebhookServer
) -> None:
    cluster, trace = running.cluster, running.trace
    await configure(running, webhook_server, policy="Fail", seconds=1)
    start = len(trace.events)
    await running.faults.apply(cluster.name, "webhook-slow", {"ms": 1500}, reason="test")

    with pytest.raises(APIError) as refused:
        await create_configmap(running, "too-late")

    url = f"{webhook_server.url}/validate?timeout=1s"
    assert (refused.value.code, refused.value.reason, refused.value.status["message"]) == (
        500,
        "InternalError",
        f'Internal error occurred: failed calling webhook "{HOOK}": failed to call webhook: '
        f'Post "{url}": context deadline exceeded',
    )
    assert webhook_server.called("/validate") == [], "the call gave up before it reached the webhook"
    step = await step_of(running, start)
    assert step["outcome"] == "deny" and "context deadline exceeded" in step["detail"]
    done = await completed(running, step)
    assert done["code"] == 500
    assert 1.0 <= done["duration"] < 1.5, "it waited timeoutSeconds, not the whole delay"
