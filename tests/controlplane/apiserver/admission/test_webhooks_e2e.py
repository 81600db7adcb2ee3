"""Webhooks end to end: the API server calls the example webhook server over HTTPS on a loopback port."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from controlplane.apiserver.admission.setup import AdmissionOptions
from controlplane.webhooks.example import ANNOTATION, LABEL, SIDECAR, ExampleWebhookServer
from tests.controlplane.apiserver.admission.conftest import AdmissionAPI, Factory, pod
from tests.support.services import free_port

OPTIONS = AdmissionOptions(
    plugins=("NamespaceLifecycle", "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook")
)
MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
VALIDATING = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


@pytest.fixture
async def webhook_server() -> AsyncIterator[ExampleWebhookServer]:
    server = ExampleWebhookServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def webhook(name: str, url: str, ca_bundle: str, **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "rules": [
            {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **fields,
    }


async def configure(api: AdmissionAPI, path: str, name: str, *hooks: dict[str, Any]) -> None:
    kind = "MutatingWebhookConfiguration" if "mutating" in path else "ValidatingWebhookConfiguration"
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": list(hooks),
    }
    created = await api.admin.post(path, json=body)
    assert created.status_code == 201, created.text
    await api.synced()


def good_pod(name: str = "web") -> dict[str, Any]:
    body = pod(name)
    body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "100m", "memory": "64Mi"}}
    return body


async def test_a_mutating_webhook_labels_the_stored_object(
    admission_api: Factory, webhook_server: ExampleWebhookServer
) -> None:
    async with admission_api(OPTIONS) as api:
        hook = webhook(
            "label.kubelab.example", f"{webhook_server.url}/mutate", webhook_server.serving.ca_bundle
        )
        await configure(api, MUTATING, "label", hook)
        created = await api.create("/api/v1/namespaces/default/pods", good_pod())
        assert created.status_code == 201, created.text
        stored = (await api.admin.get("/api/v1/namespaces/default/pods/web")).json()
        assert stored["metadata"]["labels"] == {LABEL: "true"}
        assert stored["metadata"]["annotations"][ANNOTATION] == "example-webhook"
        (request,) = webhook_server.called("/mutate")
        assert (request["operation"], request["namespace"], request["userInfo"]["username"]) == (
            "CREATE",
            "default",
            "admin",
        )
        step = api.steps("label.kubelab.example")[-1]
        assert (step["to"], step["phase"], step["outcome"]) == (
            "webhook:label.kubelab.example",
            "mutating",
            "pass",
        )
        assert step["patch"][0]["path"] == "/metadata/labels"
        # A ConfigMap matches no rule: the webhook is not called.
        assert (
            await api.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c"}})
        ).status_code == 201
        assert len(webhook_server.called("/mutate")) == 1


async def test_a_validating_webhook_denies_with_its_message(
    admission_api: Factory, webhook_server: ExampleWebhookServer
) -> None:
    async with admission_api(OPTIONS) as api:
        hook = webhook(
            "no-latest.kubelab.example", f"{webhook_server.url}/validate", webhook_server.serving.ca_bundle
        )
        await configure(api, VALIDATING, "no-latest", hook)
        latest = pod("latest")
        latest["spec"]["containers"][0]["image"] = "nginx:latest"
        answer = await api.create("/api/v1/namespaces/default/pods", latest)
        assert answer.status_code == 403, answer.text
        assert answer.json()["message"] == (
            'admission webhook "no-latest.kubelab.example" denied the request: container "app" uses image '
            '"nginx:latest": pin a version instead of :latest; container "app" has no resources.limits'
        )
        assert (await api.admin.get("/api/v1/namespaces/default/pods/latest")).status_code == 404
        assert (await api.create("/api/v1/namespaces/default/pods", good_pod())).status_code == 201


async def test_a_dead_webhook_fails_closed_or_open_by_failure_policy(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        dead = f"https://127.0.0.1:{free_port()}/validate"
        await configure(api, VALIDATING, "dead-fail", webhook("fail.example", dead, ""))
        answer = await api.create("/api/v1/namespaces/default/pods", good_pod("a"))
        assert answer.status_code == 500, answer.text
        message = answer.json()["message"]
        assert message.startswith(
            'Internal error occurred: failed calling webhook "fail.example": '
            f'failed to call webhook: Post "{dead}?timeout=10s":'
        )
        assert (await api.admin.get("/api/v1/namespaces/default/pods/a")).status_code == 404
        # The same dead webhook with Ignore: the pod is created.
        replaced = await api.admin.delete(f"{VALIDATING}/dead-fail")
        assert replaced.status_code == 200
        await configure(
            api, VALIDATING, "dead-ignore", webhook("ignore.example", dead, "", failurePolicy="Ignore")
        )
        assert (await api.create("/api/v1/namespaces/default/pods", good_pod("b"))).status_code == 201
        step = api.steps("ignore.example")[-1]
        assert step["outcome"] == "pass" and "failurePolicy Ignore" in step["detail"]


async def test_a_hanging_webhook_times_out(
    admission_api: Factory, webhook_server: ExampleWebhookServer
) -> None:
    async with admission_api(OPTIONS) as api:
        hook = webhook(
            "slow.example", f"{webhook_server.url}/hang", webhook_server.serving.ca_bundle, timeoutSeconds=1
        )
        await configure(api, VALIDATING, "slow", hook)
        answer = await api.create("/api/v1/namespaces/default/pods", good_pod())
        assert answer.status_code == 500, answer.text
        assert answer.json()["message"] == (
            'Internal error occurred: failed calling webhook "slow.example": failed to call webhook: '
            f'Post "{webhook_server.url}/hang?timeout=1s": context deadline exceeded'
        )


async def test_a_malformed_answer_is_refused_not_allowed(
    admission_api: Factory, webhook_server: ExampleWebhookServer
) -> None:
    async with admission_api(OPTIONS) as api:
        hook = webhook("broken.example", f"{webhook_server.url}/malformed", webhook_server.serving.ca_bundle)
        await configure(api, MUTATING, "broken", hook)
        answer = await api.create("/api/v1/namespaces/default/pods", good_pod())
        assert answer.status_code == 500, answer.text
        assert answer.json()["message"] == (
            'Internal error occurred: failed calling webhook "broken.example": '
            "received invalid webhook response: "
            'expected response.uid="' + webhook_server.called("/malformed")[0]["uid"] + '", got ""'
        )


async def test_a_wrong_ca_bundle_is_a_call_failure(
    admission_api: Factory, webhook_server: ExampleWebhookServer
) -> None:
    async with admission_api(OPTIONS) as api:
        from controlplane.webhooks.example import self_signed

        stranger = self_signed().ca_bundle
        await configure(
            api, VALIDATING, "mitm", webhook("mitm.example", f"{webhook_server.url}/validate", stranger)
        )
        answer = await api.create("/api/v1/namespaces/default/pods", good_pod())
        assert answer.status_code == 500
        assert "CERTIFICATE_VERIFY_FAILED" in answer.json()["message"]


async def test_reinvocation_calls_an_if_needed_webhook_again_after_a_later_change(
    admission_api: Factory, webhook_server: ExampleWebhookServer
) -> None:
    async with admission_api(OPTIONS) as api:
        ca = webhook_server.serving.ca_bundle
        # Configurations run in name order: "a-label" first, then "b-sidecar" changes the pod after it.
        await configure(
            api,
            MUTATING,
            "a-label",
            webhook("label.example", f"{webhook_server.url}/mutate", ca, reinvocationPolicy="IfNeeded"),
        )
        await configure(
            api, MUTATING, "b-sidecar", webhook("sidecar.example", f"{webhook_server.url}/sidecar", ca)
        )
        created = await api.create("/api/v1/namespaces/default/pods", good_pod())
        assert created.status_code == 201, created.text
        assert [c["name"] for c in created.json()["spec"]["containers"]] == ["app", SIDECAR]
        calls = webhook_server.called("/mutate")
        assert len(calls) == 2  # once, then once more after the sidecar was added
        assert [c["name"] for c in calls[1]["object"]["spec"]["containers"]] == ["app", SIDECAR]
        assert len(webhook_server.called("/sidecar")) == 1


async def test_a_webhook_with_side_effects_refuses_dry_runs(
    admission_api: Factory, webhook_server: ExampleWebhookServer
) -> None:
    async with admission_api(OPTIONS) as api:
        hook = webhook(
            "effects.example",
            f"{webhook_server.url}/mutate",
            webhook_server.serving.ca_bundle,
            sideEffects="Some",
        )
        await configure(api, MUTATING, "effects", hook)
        answer = await api.admin.post("/api/v1/namespaces/default/pods?dryRun=All", json=good_pod())
        assert answer.status_code == 400
        assert answer.json()["message"] == 'admission webhook "effects.example" does not support dry run'
        assert webhook_server.called("/mutate") == []


async def test_namespace_selector_limits_the_webhook_to_labelled_namespaces(
    admission_api: Factory, webhook_server: ExampleWebhookServer
) -> None:
    async with admission_api(OPTIONS) as api:
        hook = webhook(
            "scoped.example",
            f"{webhook_server.url}/mutate",
            webhook_server.serving.ca_bundle,
            namespaceSelector={"matchLabels": {"webhooks": "on"}},
        )
        await configure(api, MUTATING, "scoped", hook)
        ns = {"metadata": {"name": "lab", "labels": {"webhooks": "on"}}}
        assert (await api.admin.post("/api/v1/namespaces", json=ns)).status_code == 201
        await api.synced()
        labelled = await api.create("/api/v1/namespaces/lab/pods", good_pod())
        plain = await api.create("/api/v1/namespaces/default/pods", good_pod())
        assert labelled.json()["metadata"]["labels"] == {LABEL: "true"}
        assert "labels" not in plain.json()["metadata"]
