"""The pure part of webhooks: rules, selectors, the index, AdmissionReview answers, error messages."""

from __future__ import annotations

import base64
import json

import pytest

from controlplane.apiserver.admission.attributes import Attributes
from controlplane.apiserver.admission.webhook import (
    InvalidResponse,
    Rule,
    WebhookIndex,
    denied,
    matches,
    parse_configurations,
    parse_response,
    review_request,
)
from controlplane.identity import UserInfo

ALICE = UserInfo.create("alice", groups=["devs"])


def attributes(
    resource: str = "pods", subresource: str = "", operation: str = "CREATE", **kw: object
) -> Attributes:
    values: dict[str, object] = {
        "user": ALICE,
        "operation": operation,
        "group": "",
        "version": "v1",
        "resource": resource,
        "subresource": subresource,
        "kind": "Pod",
        "kind_group": "",
        "kind_version": "v1",
        "namespace": "default",
        "name": "",
        "namespaced": True,
        "object": {"metadata": {"name": "web", "labels": {"app": "web"}}},
    }
    values.update(kw)
    return Attributes(**values)  # type: ignore[arg-type]


def rule(*resources: str, operations: tuple[str, ...] = ("CREATE",), scope: str = "*") -> Rule:
    return Rule(operations, ("",), ("v1",), resources, scope)


@pytest.mark.parametrize(
    ("resources", "subresource", "expected"),
    [
        (("pods",), "", True),
        (("pods",), "status", False),
        (("pods/status",), "status", True),
        (("pods/*",), "status", True),
        (("pods/*",), "", False),
        (("*",), "", True),
        (("*",), "status", False),
        (("*/status",), "status", True),
        (("*/*",), "binding", True),
        (("services",), "", False),
    ],
)
def test_rule_resources_with_wildcards_and_subresources(
    resources: tuple[str, ...], subresource: str, expected: bool
) -> None:
    assert rule(*resources).matches(attributes(subresource=subresource)) is expected


def test_rule_operations_and_scope() -> None:
    assert not rule("pods").matches(attributes(operation="UPDATE"))
    assert rule("pods", operations=("*",)).matches(attributes(operation="DELETE"))
    assert not rule("pods", scope="Cluster").matches(attributes())


def configuration(name: str, *hooks: dict[str, object]) -> dict[str, object]:
    return {"metadata": {"name": name}, "webhooks": list(hooks)}


def hook(name: str, resources: list[str], **fields: object) -> dict[str, object]:
    return {
        "name": name,
        "clientConfig": {"url": "https://127.0.0.1:1/x"},
        "rules": [
            {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": resources}
        ],
        "sideEffects": "None",
        **fields,
    }


def test_the_index_orders_by_configuration_name_and_finds_wildcards() -> None:
    hooks = parse_configurations(
        [
            configuration("b", hook("b.pods", ["pods"])),
            configuration("a", hook("a.all", ["*"]), hook("a.svc", ["services"])),
        ],
        mutating=True,
    )
    index = WebhookIndex(hooks)
    assert [h.name for h in index.candidates("", "pods")] == ["a.all", "b.pods"]
    assert [h.name for h in index.candidates("", "services")] == ["a.all", "a.svc"]
    assert [h.name for h in WebhookIndex([]).candidates("", "events")] == []


def test_defaults_and_bad_values() -> None:
    (parsed,) = parse_configurations(
        [configuration("c", hook("h", ["pods"], timeoutSeconds=99))], mutating=False
    )
    assert (parsed.failure_policy, parsed.timeout_seconds, parsed.reinvocation_policy) == (
        "Fail",
        10,
        "Never",
    )
    (no_url,) = parse_configurations(
        [configuration("c", {**hook("h", ["pods"]), "clientConfig": {"service": {"name": "s"}}})],
        mutating=False,
    )
    assert "clientConfig.url" in no_url.broken


def test_selectors_look_at_the_namespace_and_the_object() -> None:
    (selective,) = parse_configurations(
        [
            configuration(
                "c",
                hook(
                    "h",
                    ["pods"],
                    namespaceSelector={"matchLabels": {"lab": "webhooks"}},
                    objectSelector={"matchLabels": {"app": "web"}},
                ),
            )
        ],
        mutating=False,
    )
    assert matches(selective, attributes(), {"lab": "webhooks"})
    assert not matches(selective, attributes(), {})
    other = attributes(object={"metadata": {"name": "x", "labels": {"app": "db"}}})
    assert not matches(selective, other, {"lab": "webhooks"})


def test_the_review_carries_upstreams_fields() -> None:
    review = review_request(
        attributes(subresource="status", operation="UPDATE", name="web", old_object={}), "u-1"
    )
    request = review["request"]
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert request["uid"] == "u-1"
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert (request["subResource"], request["namespace"], request["name"]) == ("status", "default", "web")
    assert request["userInfo"] == {"username": "alice", "groups": ["devs"]}
    assert request["options"] == {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}
    assert request["dryRun"] is False


def answer(response: dict[str, object], **review: object) -> bytes:
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response, **review}
    ).encode()


def test_answers_are_checked_like_upstream() -> None:
    patch = base64.b64encode(b'[{"op":"add","path":"/x","value":1}]').decode()
    ok = parse_response(
        answer({"uid": "u", "allowed": True, "patchType": "JSONPatch", "patch": patch}), "u", mutating=True
    )
    assert ok.patch == [{"op": "add", "path": "/x", "value": 1}]
    problems = {
        b"nonsense": "couldn't get version/kind; json parse error",
        answer({"uid": "other", "allowed": True}): 'expected response.uid="u", got "other"',
        json.dumps({"kind": "AdmissionReview"}).encode(): "webhook response was absent",
        answer(
            {"uid": "u", "allowed": True, "patch": patch}
        ): "webhook returned response.patch but not response.patchType",
    }
    for body, message in problems.items():
        with pytest.raises(InvalidResponse, match=message.replace("(", r"\(")):
            parse_response(body, "u", mutating=True)
    with pytest.raises(InvalidResponse, match=r"validating webhook may not return response\.patch"):
        parse_response(
            answer({"uid": "u", "allowed": True, "patch": patch, "patchType": "JSONPatch"}),
            "u",
            mutating=False,
        )


def test_a_denial_keeps_the_webhooks_status() -> None:
    error = denied("no-latest.example", {"code": 403, "message": "images must be pinned"})
    assert (error.code, error.message) == (
        403,
        'admission webhook "no-latest.example" denied the request: images must be pinned',
    )
    assert denied("w", {}).message == 'admission webhook "w" denied the request without explanation'
