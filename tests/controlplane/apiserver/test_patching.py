"""Unknown fields and wrong types in merge and strategic patches: the shortcut that walks only the patch.

``Patcher.mutate`` skips the walks of the whole patched object when the patch itself names no field
outside the kind's schema and has no value of the wrong type (the stored object has neither). These
tests pin that a patch that does bring one is still found, dropped or refused wherever it is, and
that the shortcut answers exactly what the full walks answer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from controlplane.api import gotypes
from controlplane.apiserver.errors import StatusError
from controlplane.apiserver.patching import Patcher, decode_body_once, patched_json
from tests.controlplane.apiserver.conftest import API

PODS = "/api/v1/namespaces/default/pods"
MERGE = {"Content-Type": "application/merge-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
    }


RUNNING: dict[str, Any] = {
    "phase": "Running",
    "podIP": "10.0.0.7",
    "conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}],
    "containerStatuses": [
        {
            "name": "app",
            "image": "nginx:1.25",
            "imageID": "",
            "ready": True,
            "restartCount": 0,
            "started": True,
        }
    ],
}


async def created(api: API, name: str) -> None:
    response = await api.client.post(PODS, json=pod(name))
    assert response.status_code == 201, response.text


async def patch_with_a_typo(api: API, name: str, validation: str) -> httpx.Response:
    """A new pod's status merge-patched to Running, with a misspelt ``phaze`` beside ``phase``."""
    await created(api, name)
    return await api.client.patch(
        f"{PODS}/{name}/status?fieldValidation={validation}",
        json={"status": {**RUNNING, "phaze": "Running"}},
        headers=MERGE,
    )


async def test_unknown_status_field_in_a_merge_patch_is_refused_under_strict(api: API) -> None:
    response = await patch_with_a_typo(api, "a", "Strict")
    # 422, the patched object quoted (apiserver handlers/patch.go: field.Invalid(patch, patchedObjJS, ...)).
    assert response.status_code == 422, response.text
    status = response.json()
    assert status["message"].startswith(' "" is invalid: patch: Invalid value: "{\\"apiVersion\\":\\"v1\\",')
    assert status["message"].endswith('": strict decoding error: unknown field "status.phaze"')
    assert status["details"]["causes"][0]["field"] == "patch"
    stored = (await api.client.get(f"{PODS}/a")).json()
    assert "phase" not in stored["status"] or stored["status"]["phase"] == "Pending"


async def test_unknown_field_in_a_list_item_is_dropped_with_a_warning(api: API) -> None:
    await created(api, "b")
    status = {**RUNNING, "containerStatuses": [{**RUNNING["containerStatuses"][0], "redy": True}]}
    response = await api.client.patch(f"{PODS}/b/status", json={"status": status}, headers=STRATEGIC)
    assert response.status_code == 200, response.text
    assert response.headers["warning"] == '299 - "unknown field \\"status.containerStatuses[0].redy\\""'
    assert "redy" not in response.json()["status"]["containerStatuses"][0]


PATCHES: list[tuple[dict[str, str], dict[str, Any]]] = [
    (MERGE, {"status": RUNNING}),
    (MERGE, {"status": {"podIP": None, "phase": "Running"}}),
    (MERGE, {"metadata": {"labels": {"tier": "front", "app": None}}}),
    (STRATEGIC, {"status": RUNNING}),
    (
        STRATEGIC,
        {
            "status": {
                "$setElementOrder/conditions": [{"type": "Initialized"}, {"type": "Ready"}],
                "conditions": [{"type": "Ready", "status": "False"}],
            }
        },
    ),
    (STRATEGIC, {"metadata": {"labels": {"tier": "back"}, "annotationz": {"x": "y"}}}),
    (MERGE, {"status": {"containerStatuses": [{"name": "app", "restartCount": "two"}]}}),
    (MERGE, {"metadata": {"labels": {"tier": 7}}}),
    (
        STRATEGIC,
        {"status": {"conditions": [{"type": "Ready", "status": "True", "lastProbeTime": "yesterday"}]}},
    ),
]


@pytest.mark.parametrize(("headers", "patch"), PATCHES)
async def test_the_shortcut_answers_what_the_full_walk_answers(
    api: API, monkeypatch: pytest.MonkeyPatch, headers: dict[str, str], patch: dict[str, Any]
) -> None:
    async def patched(name: str) -> tuple[int, Any, str | None]:
        await created(api, name)
        subresource = "/status" if "status" in patch else ""
        await api.client.patch(f"{PODS}/{name}/status", json={"status": RUNNING}, headers=MERGE)
        response = await api.client.patch(f"{PODS}/{name}{subresource}", json=patch, headers=headers)
        body = response.json()
        if response.status_code == 200:  # compare what differs between any two pods only by name
            meta = body["metadata"]
            for key in ("name", "uid", "resourceVersion", "creationTimestamp", "managedFields"):
                meta.pop(key, None)
        else:  # the message quotes the whole patched object: compare Go's error at its end
            body = (
                body["reason"],
                body["details"]["causes"][0]["field"],
                body["message"].rpartition('": ')[2],
            )
        return response.status_code, body, response.headers.get("warning")

    shortcut = await patched("fast")
    monkeypatch.setattr(Patcher, "_is_clean", lambda self, document: False)
    full_walk = await patched("slow")
    assert shortcut == full_walk
    assert shortcut[0] in (200, 422)


async def test_an_ignored_unknown_field_is_still_dropped(api: API) -> None:
    response = await patch_with_a_typo(api, "c", "Ignore")
    assert response.status_code == 200, response.text
    assert "warning" not in response.headers
    assert "phaze" not in response.json()["status"]
    assert response.json()["status"]["phase"] == "Running"


# -- a value of the wrong type: upstream's 422 for each kind of patch -----------------------------------

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
JSON_PATCH = {"Content-Type": "application/json-patch+json"}


def deployment(name: str, container: str = "nginx") -> dict[str, Any]:
    """test/integration/apiserver/field_validation_test.go's validBodyJSON."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": "nginx"}, "annotations": {"a1": "foo", "a2": "bar"}},
        "spec": {
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": container, "image": "nginx:latest"}]},
            },
        },
    }


async def patch_deployment(
    api: API, name: str, body: str, headers: dict[str, str], query: str = ""
) -> httpx.Response:
    return await api.client.patch(f"{DEPLOYMENTS}/{name}{query}", content=body.encode(), headers=headers)


def invalid_patch(response: httpx.Response) -> tuple[str, str]:
    """The quoted value and the error of a 422 ``patch: Invalid value: "<value>": <error>``."""
    assert response.status_code == 422, response.text
    status = response.json()
    assert status["reason"] == "Invalid"
    [cause] = status["details"]["causes"]
    assert cause["field"] == "patch" and cause["reason"] == "FieldValueInvalid"
    assert status["message"] == f' "" is invalid: patch: {cause["message"]}'
    prefix = "Invalid value: "
    assert cause["message"].startswith(prefix)
    quoted, _, error = cause["message"][len(prefix) :].partition('": ')
    return json.loads(quoted + '"'), error


@pytest.mark.parametrize(
    ("patch", "shown", "error"),
    [
        # apiserver handlers/patch.go applyPatchToObject: fmt.Sprintf("%+v", patchMap), and the error of
        # runtime.DefaultUnstructuredConverter (converter.go)
        ('{"spec":{"replicas":"x"}}', "map[spec:map[replicas:x]]", "unrecognized type: int32"),
        ('{"spec":{"paused":1}}', "map[spec:map[paused:1]]", "unrecognized type: bool"),
        ('{"spec":{"template":"x"}}', "map[spec:map[template:x]]", "cannot restore struct from: string"),
        (
            '{"metadata":{"labels":[1, 2.5]}}',
            "map[metadata:map[labels:[1 2.5]]]",
            "cannot restore map from slice",
        ),
        (
            '{"metadata":{"labels":{"a":{}}}}',
            "map[metadata:map[labels:map[a:map[]]]]",
            "unrecognized type: string",
        ),
        (
            '{"metadata":{"labels":{"a":1e6}}}',
            "map[metadata:map[labels:map[a:1e+06]]]",
            "unrecognized type: string",
        ),
        (
            '{"metadata":{"annotations":{"a":null,"b":7}}}',
            "map[metadata:map[annotations:map[a:<nil> b:7]]]",
            "cannot convert int64 to string",
        ),
        (
            # openshift/origin test/extended/router/router.go (a string timeoutSeconds in probes)
            '{"spec":{"template":{"spec":{"containers":[{"name":"router","livenessProbe":{"timeoutSeconds":"abc"},'
            '"readinessProbe":{"timeoutSeconds":"abc"}}]}}}}',
            "map[spec:map[template:map[spec:map[containers:[map[livenessProbe:map[timeoutSeconds:abc] "
            "name:router readinessProbe:map[timeoutSeconds:abc]]]]]]]",
            "unrecognized type: int32",
        ),
    ],
)
async def test_a_strategic_merge_patch_of_the_wrong_type_shows_the_patch_map(
    api: API, patch: str, shown: str, error: str
) -> None:
    assert (await api.client.post(DEPLOYMENTS, json=deployment("router", "router"))).status_code == 201
    assert invalid_patch(await patch_deployment(api, "router", patch, STRATEGIC)) == (shown, error)


async def test_a_merge_or_json_patch_of_the_wrong_type_shows_the_patched_object_as_go_wrote_it(
    api: API,
) -> None:
    assert (await api.client.post(DEPLOYMENTS, json=deployment("web"))).status_code == 201
    merged, error = invalid_patch(await patch_deployment(api, "web", '{"spec": {"replicas": "x"}}', MERGE))
    assert (
        error
        == "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    )
    patched = json.loads(merged)
    assert merged == gotypes.go_json(patched, sort_keys=False)  # compact, as Go writes it
    assert list(patched) == sorted(patched)  # the root and spec are Go maps (evanphx/json-patch v4)
    assert list(patched["spec"]) == sorted(patched["spec"]) and patched["spec"]["replicas"] == "x"
    operations = (
        '[{"op": "replace", "path": "/spec/template/spec/containers/0/ports", "value": [{"name": 80}]}]'
    )
    replaced, error = invalid_patch(await patch_deployment(api, "web", operations, JSON_PATCH))
    assert error == (
        "json: cannot unmarshal number into Go struct field "
        "ContainerPort.spec.template.spec.containers.ports.name of type string"
    )
    container = json.loads(replaced)["spec"]["template"]["spec"]["containers"][0]
    assert list(container) == sorted(container)  # on the operation's path
    assert '"ports":[{"name":80}]' in replaced


def test_the_patched_object_is_written_as_evanphx_json_patch_v4_writes_it() -> None:
    """Objects the patch went into are Go maps (keys sorted); the rest is written back as encoded."""
    current_order = {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {"name": "w", "labels": {"z": "<"}},
    }
    merged = {
        **current_order,
        "spec": {"replicas": "x", "new": {"b": 1, "a": [{"y": 1, "x": 2}]}, "paused": True},
    }
    patch = {"spec": {"replicas": "x", "new": {"b": 1, "a": [{"y": 1, "x": None}]}}}
    assert patched_json("merge", merged, patch) == (
        '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w","labels":{"z":"\\u003c"}},'
        '"spec":{"new":{"a":[{"x":2,"y":1}],"b":1},"paused":true,"replicas":"x"}}'
    )
    # a custom resource's current object is an Unstructured: a Go map all the way down
    assert patched_json("merge", merged, {"spec": {"replicas": "x"}}, sorted_current=True) == (
        '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"z":"\\u003c"},"name":"w"},'
        '"spec":{"new":{"a":[{"x":2,"y":1}],"b":1},"paused":true,"replicas":"x"}}'
    )
    added = {
        **current_order,
        "spec": {"template": {"spec": {"b": 1, "a": {"y": 1, "x": 2}}}, "z": {"b": 1, "a": 2}},
    }
    operations = [{"op": "add", "path": "/spec/template/spec/a", "value": {"y": 1, "x": 2}}]
    assert patched_json("json", added, operations) == (
        '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w","labels":{"z":"\\u003c"}},'
        '"spec":{"template":{"spec":{"a":{"y":1,"x":2},"b":1}},"z":{"b":1,"a":2}}}'
    )


# -- strict decoding errors of patches: 422 too
# (ported from test/integration/apiserver/field_validation_test.go)

MERGE_PATCH_BODY = """
{
    "spec": {
        "unknown1": "val1",
        "unknownDupe": "valDupe",
        "unknownDupe": "valDupe2",
        "paused": true,
        "paused": false,
        "template": {
            "spec": {
                "containers": [{
                    "name": "nginx",
                    "image": "nginx:latest",
                    "unknownNested": "val1",
                    "imagePullPolicy": "Always",
                    "imagePullPolicy": "Never"
                }]
            }
        }
    }
}
"""

JSON_PATCH_BODY = """
[
    {"op": "add", "path": "/spec/unknown1", "value": "val1", "foo":"bar"},
    {"op": "add", "path": "/spec/unknown2", "path": "/spec/unknown3", "value": "val1"},
    {"op": "add", "path": "/spec/unknownDupe", "value": "valDupe"},
    {"op": "add", "path": "/spec/unknownDupe", "value": "valDupe2"},
    {"op": "add", "path": "/spec/paused", "value": true},
    {"op": "add", "path": "/spec/paused", "value": false},
    {"op": "add", "path": "/spec/template/spec/containers/0/unknownNested", "value": "val1"},
    {"op": "add", "path": "/spec/template/spec/containers/0/imagePullPolicy", "value": "Always"},
    {"op": "add", "path": "/spec/template/spec/containers/0/imagePullPolicy", "value": "Never"}
]
"""

SMP_BODY = """
{
    "spec": {
        "unknown1": "val1",
        "unknownDupe": "valDupe",
        "unknownDupe": "valDupe2",
        "paused": true,
        "paused": false,
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {
                "containers": [{
                    "name": "nginx",
                    "unknownNested": "val1",
                    "imagePullPolicy": "Always",
                    "imagePullPolicy": "Never"
                }]
            }
        }
    }
}
"""

MERGE_AND_SMP_ERRORS = [
    'duplicate field "spec.unknownDupe"',
    'duplicate field "spec.paused"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
]

FIELD_VALIDATION_CASES = [
    ("merge-patch", MERGE, MERGE_PATCH_BODY, MERGE_AND_SMP_ERRORS),
    (
        "json-patch",
        JSON_PATCH,
        JSON_PATCH_BODY,
        [
            'json patch unknown field "[0].foo"',
            'json patch duplicate field "[1].path"',
            'unknown field "spec.template.spec.containers[0].unknownNested"',
            'unknown field "spec.unknown1"',
            'unknown field "spec.unknown3"',
            'unknown field "spec.unknownDupe"',
        ],
    ),
    ("smp", STRATEGIC, SMP_BODY, MERGE_AND_SMP_ERRORS),
]


@pytest.mark.parametrize(("name", "headers", "body", "expected"), FIELD_VALIDATION_CASES)
async def test_strict_patches_are_invalid_and_warn_patches_warn(
    api: API, name: str, headers: dict[str, str], body: str, expected: list[str]
) -> None:
    assert (await api.client.post(DEPLOYMENTS, json=deployment(name))).status_code == 201
    strict_answer = await patch_deployment(api, name, body, headers, "?fieldValidation=Strict")
    shown, error = invalid_patch(strict_answer)
    assert error == "strict decoding error: " + ", ".join(expected)
    if headers is STRATEGIC:
        assert shown.startswith(
            "map[spec:map[paused:false selector:map[matchLabels:map[app:nginx]] template:"
        )
    else:
        assert json.loads(shown)["spec"]["unknown1"] == "val1"  # the patched object, unknown fields and all
    for query in ("?fieldValidation=Warn", ""):
        warned = await patch_deployment(api, name, body, headers, query)
        assert warned.status_code == 200, warned.text
        assert warned.headers["warning"] == ", ".join(f"299 - {json.dumps(w)}" for w in expected)
    ignored = await patch_deployment(api, name, body, headers, "?fieldValidation=Ignore")
    assert ignored.status_code == 200 and "warning" not in ignored.headers


async def test_a_wrong_type_is_reported_before_strict_errors(api: API) -> None:
    assert (await api.client.post(DEPLOYMENTS, json=deployment("both"))).status_code == 201
    body = '{"spec": {"replicaz": 1, "replicas": "x"}}'
    answer = await patch_deployment(api, "both", body, STRATEGIC, "?fieldValidation=Strict")
    assert invalid_patch(answer) == ("map[spec:map[replicas:x replicaz:1]]", "unrecognized type: int32")


# -- custom resources: strict decoding errors name their kind as built-in kinds' do -----------------------

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRONTABS = "/apis/stable.example.com/v1/namespaces/default/crontabs"

#: The CronTab of the Kubernetes docs (tasks/extend-kubernetes/custom-resources): a structural schema
#: that preserves no unknown field.
CRONTAB_DEFINITION: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "crontabs.stable.example.com"},
    "spec": {
        "group": "stable.example.com",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "cronSpec": {"type": "string"},
                                    "image": {"type": "string"},
                                    "replicas": {"type": "integer"},
                                },
                            }
                        },
                    }
                },
            }
        ],
        "scope": "Namespaced",
        "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
    },
}


async def crontabs_served(api: API) -> None:
    assert (await api.client.post(CRDS, json=CRONTAB_DEFINITION)).status_code == 201
    for _ in range(200):
        if (await api.client.get(CRONTABS)).status_code == 200:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("crontabs are not served")


def crontab(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": name},
        "spec": spec,
    }


CANNOT_BE_HANDLED = 'CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: '


async def test_a_custom_resources_strict_decoding_error_is_transformed_on_create_and_update(api: API) -> None:
    await crontabs_served(api)
    extra = crontab("c", cronSpec="* * * * */5", extra=1)
    created = await api.client.post(f"{CRONTABS}?fieldValidation=Strict", json=extra)
    assert created.status_code == 400, created.text
    assert created.json()["message"] == CANNOT_BE_HANDLED + 'unknown field "spec.extra"'
    # the JSON decoder's duplicate fields first, then the fields pruning drops (schemaCoercingDecoder)
    raw = (
        b'{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"d"},'
        b'"spec":{"extra":1,"cronSpec":"a","cronSpec":"b"}}'
    )
    duplicated = await api.client.post(
        f"{CRONTABS}?fieldValidation=Strict", content=raw, headers={"Content-Type": "application/json"}
    )
    assert duplicated.json()["message"] == (
        CANNOT_BE_HANDLED + 'duplicate field "spec.cronSpec", unknown field "spec.extra"'
    )
    warned = await api.client.post(CRONTABS, content=raw, headers={"Content-Type": "application/json"})
    assert warned.status_code == 201, warned.text
    assert warned.json()["spec"] == {"cronSpec": "b"}
    assert warned.headers["warning"] == (
        '299 - "duplicate field \\"spec.cronSpec\\"", 299 - "unknown field \\"spec.extra\\""'
    )
    current = warned.json()
    replaced = await api.client.put(
        f"{CRONTABS}/d?fieldValidation=Strict", json={**current, "spec": {"cronSpec": "b", "extra": 1}}
    )
    assert replaced.status_code == 400, replaced.text
    assert replaced.json()["message"] == CANNOT_BE_HANDLED + 'unknown field "spec.extra"'


async def test_a_custom_resources_strict_patch_is_invalid_with_its_patched_object_sorted(api: API) -> None:
    await crontabs_served(api)
    assert (await api.client.post(CRONTABS, json=crontab("p", cronSpec="x"))).status_code == 201
    answer = await api.client.patch(
        f"{CRONTABS}/p?fieldValidation=Strict", json={"spec": {"extra": 1}}, headers=MERGE
    )
    shown, error = invalid_patch(answer)
    assert error == 'strict decoding error: unknown field "spec.extra"'
    # An Unstructured is encoded as a Go map: every object's keys sorted, not only the patch's way.
    assert shown == gotypes.go_json(json.loads(shown), sort_keys=True)
    assert json.loads(shown)["spec"] == {"cronSpec": "x", "extra": 1}


# -- a YAML body that is JSON --------------------------------------------------------------------------

APPLY_YAML = "application/apply-patch+yaml"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"kind":"ConfigMap","data":{"a":"1"}}', {"kind": "ConfigMap", "data": {"a": "1"}}),
        (b'  {"kind": "ConfigMap", "data": {"a": "1"}}\n', {"kind": "ConfigMap", "data": {"a": "1"}}),
        # JSON's number, as yaml.v2 reads it; PyYAML (YAML 1.1) would keep "1e3" a string.
        (b'{"spec": {"replicas": 1e3}}', {"spec": {"replicas": 1000.0}}),
    ],
)
def test_an_apply_body_that_is_json_is_read_as_json_and_known_to_repeat_no_key(
    raw: bytes, expected: dict[str, Any]
) -> None:
    assert decode_body_once(raw, APPLY_YAML) == (expected, True)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"kind: ConfigMap\ndata:\n  a: '1'\n", {"kind": "ConfigMap", "data": {"a": "1"}}),
        # A repeated key: the YAML parser reads it (the last wins) and the strict check says where.
        (b'{"data": {"a": "1", "a": "2"}}', {"data": {"a": "2"}}),
        (b'{"data": {"a": "1"}}\n---\n{"data": {}}\n', None),
    ],
)
def test_an_apply_body_that_is_not_json_goes_through_the_yaml_parser(
    raw: bytes, expected: dict[str, Any] | None
) -> None:
    if expected is None:
        with pytest.raises(StatusError) as refused:
            decode_body_once(raw, APPLY_YAML)
        assert refused.value.code == 400
        return
    assert decode_body_once(raw, APPLY_YAML) == (expected, False)
