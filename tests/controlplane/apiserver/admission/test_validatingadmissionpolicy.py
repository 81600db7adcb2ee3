"""ValidatingAdmissionPolicy: CEL rules bound by bindings, evaluated by the API server itself.

Through a real API server: a policy and its binding written, then the requests they are about
refused (Deny, with the validation's reason and upstream's message), warned about (Warn) or annotated
(Audit); the policies' own kinds are never checked; match conditions, variables, messageExpression,
failurePolicy and the binding's matchResources narrow or shape what happens.
"""

from __future__ import annotations

import json
from typing import Any

from controlplane.apiserver.admission.setup import AdmissionOptions
from tests.controlplane.apiserver.admission.conftest import AdmissionAPI, Factory

POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
SECRETS = "/api/v1/namespaces/default/secrets"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
OPTIONS = AdmissionOptions(plugins=("ValidatingAdmissionPolicy",))
OWNER = "has(object.metadata.labels) && 'owner' in object.metadata.labels"


def policy(
    name: str, *validations: dict[str, Any], resources: str = "secrets", **spec: Any
) -> dict[str, Any]:
    rules = [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": [resources],
        }
    ]
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"matchConstraints": {"resourceRules": rules}, "validations": list(validations), **spec},
    }


def binding(name: str, *actions: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": list(actions), **spec},
    }


def secret(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "labels": labels}}


async def bound(api: AdmissionAPI, *objects: dict[str, Any]) -> None:
    for obj in objects:
        path = POLICIES if obj["kind"] == "ValidatingAdmissionPolicy" else BINDINGS
        answer = await api.create(path, obj)
        assert answer.status_code == 201, answer.text
    await api.synced()


async def test_a_denying_binding_refuses_with_the_policy_s_message(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        assert (await api.create(SECRETS, secret("before"))).status_code == 201, "no binding yet: allowed"
        await bound(
            api,
            policy("owned", {"expression": OWNER, "message": "every Secret needs an owner label"}),
            binding("owned", "Deny"),
        )
        answer = await api.create(SECRETS, secret("db"))
        assert answer.status_code == 422, "the default reason is Invalid"
        status = answer.json()
        assert status["reason"] == "Invalid"
        assert status["message"] == (
            "secrets \"db\" is forbidden: ValidatingAdmissionPolicy 'owned' with binding 'owned' denied "
            "request: every Secret needs an owner label"
        )
        assert (await api.create(SECRETS, secret("db", owner="alice"))).status_code == 201
        (denied,) = [s for s in api.steps("ValidatingAdmissionPolicy") if s["outcome"] == "deny"]
        assert "every Secret needs an owner label" in json.dumps(denied)
        other = await api.create(
            CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
        )
        assert other.status_code == 201, "a ConfigMap is not what the policy is about"


async def test_reason_message_expression_and_the_fallback_message(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        await bound(
            api,
            policy(
                "small",
                {
                    "expression": "size(object.data) <= 1",
                    "messageExpression": (
                        "'configmap ' + object.metadata.name + ' has ' + string(size(object.data)) + ' keys'"
                    ),
                    "reason": "Forbidden",
                },
                {"expression": "object.metadata.name != 'banned'"},
                resources="configmaps",
            ),
            binding("small", "Deny"),
        )
        two = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "two"},
            "data": {"a": "1", "b": "2"},
        }
        answer = await api.create(CONFIGMAPS, two)
        assert answer.status_code == 403 and answer.json()["reason"] == "Forbidden"
        assert answer.json()["message"].endswith("denied request: configmap two has 2 keys")
        banned = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "banned"}, "data": {}}
        answer = await api.create(CONFIGMAPS, banned)
        assert answer.json()["message"].endswith(
            "denied request: failed expression: object.metadata.name != 'banned'"
        )


async def test_an_expression_that_fails_obeys_the_failure_policy(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        check = {"expression": "object.data.size == '1'"}
        await bound(
            api,
            policy("strict", check, resources="configmaps"),
            binding("strict", "Deny"),
            policy("lenient", check, resources="secrets", failurePolicy="Ignore"),
            binding("lenient", "Deny"),
        )
        empty = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
        answer = await api.create(CONFIGMAPS, empty)
        assert answer.status_code == 422
        assert "expression 'object.data.size == '1'' resulted in error: " in answer.json()["message"]
        assert (await api.create(SECRETS, secret("s"))).status_code == 201, "Ignore lets it through"


async def test_warn_and_audit_let_the_request_through(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        await bound(
            api,
            policy("owned", {"expression": OWNER, "message": "no owner"}),
            binding("owned", "Warn", "Audit"),
        )
        answer = await api.create(SECRETS, secret("db"))
        assert answer.status_code == 201
        assert answer.headers["warning"] == (
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'owned' with binding 'owned': no owner\""
        )


async def test_match_conditions_variables_and_the_binding_s_match_resources(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        await bound(
            api,
            policy(
                "owned",
                {
                    "expression": "variables.owned",
                    "messageExpression": "'owner missing on ' + variables.name",
                },
                matchConditions=[{"name": "not-tls", "expression": "object.type != 'kubernetes.io/tls'"}],
                variables=[
                    {"name": "owned", "expression": OWNER},
                    {"name": "name", "expression": "object.metadata.name"},
                ],
            ),
            binding(
                "owned",
                "Deny",
                matchResources={
                    "objectSelector": {"matchExpressions": [{"key": "checked", "operator": "Exists"}]}
                },
            ),
        )
        assert (await api.create(SECRETS, secret("unchecked"))).status_code == 201, "the binding's selector"
        answer = await api.create(SECRETS, secret("checked", checked="yes"))
        assert answer.json()["message"].endswith("denied request: owner missing on checked")
        tls = {
            **secret("tls", checked="yes"),
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": "", "tls.key": ""},
        }
        assert (await api.create(SECRETS, tls)).status_code == 201, "its match condition is false"


async def test_the_policies_own_kinds_are_never_checked(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        everything = {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}
        locked = policy("locked", {"expression": "false"})
        locked["spec"]["matchConstraints"] = {"resourceRules": [everything]}
        await bound(api, locked, binding("locked", "Deny"))
        answer = await api.admin.delete(f"{BINDINGS}/locked")
        assert answer.status_code == 200, "the binding that locks everything can still be removed"


async def test_a_policy_or_binding_that_is_not_valid_is_refused(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        bad = policy("bad", {"expression": "object.data[", "reason": "Nope"})
        bad["spec"]["matchConstraints"]["resourceRules"][0].pop("operations")
        answer = await api.create(POLICIES, bad)
        assert answer.status_code == 422
        message = answer.json()["message"]
        assert "spec.matchConstraints.resourceRules[0].operations: Required value" in message
        assert (
            'spec.validations[0].expression: Invalid value: "object.data[": compilation failed: ' in message
        )
        assert 'spec.validations[0].reason: Unsupported value: "Nope"' in message
        answer = await api.create(BINDINGS, binding("bad", "Deny", "Warn", "Deny"))
        message = answer.json()["message"]
        assert 'spec.validationActions[2]: Duplicate value: "Deny"' in message
        assert "must not contain both Deny and Warn" in message
        answer = await api.create(BINDINGS, binding("none"))
        assert (
            "spec.validationActions: Required value: at least one validation action is required"
            in answer.json()["message"]
        )
        params = policy("params", {"expression": "true"}, paramKind={"apiVersion": "v1", "kind": "ConfigMap"})
        answer = await api.create(POLICIES, params)
        assert answer.status_code == 422 and "spec.paramKind: Forbidden" in answer.json()["message"]


async def test_without_bindings_the_plugin_is_silent(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        await bound(api, policy("owned", {"expression": OWNER}))
        assert (await api.create(SECRETS, secret("db"))).status_code == 201, "a policy alone does nothing"
        assert api.steps("ValidatingAdmissionPolicy") == [], "and the trace shows no step for it"


async def test_expressions_see_the_admission_request(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        who = (
            "request.userInfo.username != 'admin' || request.namespace != 'default'"
            " || request.subResource != ''"
        )
        await bound(
            api,
            policy("not-admin", {"expression": who, "message": "not as admin here"}),
            binding("not-admin", "Deny"),
        )
        answer = await api.create(SECRETS, secret("db"))
        assert answer.status_code == 422
        assert answer.json()["message"].endswith("denied request: not as admin here")
