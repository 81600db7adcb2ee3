"""The write path against upstream: fieldValidation, metadata.managedFields and server-side apply."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controlplane.api.kinds import builtin_types
from controlplane.apiserver.http import Request
from controlplane.apiserver.patching import Patcher
from controlplane.clock import ManualClock
from controlplane.store.sqlite import SqliteStore
from tests.controlplane.apiserver.conftest import API
from tests.support.apiserver import admin_api

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
CMS = "/api/v1/namespaces/default/configmaps"
APPLY = {"Content-Type": "application/apply-patch+yaml"}
MERGE = {"Content-Type": "application/merge-patch+json"}
KUBECTL_UA = {"User-Agent": "kubectl/v1.37.1 (linux/amd64) kubernetes/f78e722"}


def deployment(name: str = "web", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "replicas": 2,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "containers": [
                    {
                        "name": "web",
                        "image": "nginx:1.25",
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    }
                ]
            },
        },
    }
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": body}


def managers(obj: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [
        (e["manager"], e["operation"], e.get("subresource")) for e in obj["metadata"].get("managedFields", [])
    ]


def fields_of(obj: dict[str, Any], manager: str, operation: str) -> dict[str, Any]:
    for entry in obj["metadata"]["managedFields"]:
        if entry["manager"] == manager and entry["operation"] == operation:
            fields: dict[str, Any] = entry["fieldsV1"]
            return fields
    raise AssertionError(f"no {operation} entry for {manager}: {managers(obj)}")


# -- fieldValidation ----------------------------------------------------------------------------------


async def test_strict_create_rejects_unknown_fields_with_upstreams_message(api: API) -> None:
    body = deployment(replicaz=3)
    response = await api.client.post(f"{DEPLOYMENTS}?fieldValidation=Strict", json=body)
    assert response.status_code == 400
    assert response.json()["reason"] == "BadRequest"
    assert response.json()["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.replicaz"'
    )
    assert (await api.client.get(f"{DEPLOYMENTS}/web")).status_code == 404


async def test_warn_drops_unknown_fields_with_a_warning_and_ignore_drops_them_silently(api: API) -> None:
    body = deployment(replicaz=3)
    body["spec"]["template"]["spec"]["containers"][0]["imagez"] = "x"
    warned = await api.client.post(f"{DEPLOYMENTS}?fieldValidation=Warn", json=body)
    assert warned.status_code == 201
    assert warned.headers["warning"] == (  # one per field, in the order of the document
        '299 - "unknown field \\"spec.template.spec.containers[0].imagez\\"", '
        '299 - "unknown field \\"spec.replicaz\\""'
    )
    assert "replicaz" not in warned.json()["spec"]
    assert "imagez" not in warned.json()["spec"]["template"]["spec"]["containers"][0]
    ignored = await api.client.post(
        f"{DEPLOYMENTS}?fieldValidation=Ignore", json=deployment("quiet", replicaz=3)
    )
    assert ignored.status_code == 201
    assert "warning" not in ignored.headers
    assert "replicaz" not in ignored.json()["spec"]
    default = await api.client.post(CMS, json={"metadata": {"name": "c"}, "data": {}, "dataz": 1})
    assert default.status_code == 201  # no fieldValidation: Warn, the server's default
    assert default.headers["warning"] == '299 - "unknown field \\"dataz\\""'


async def test_duplicate_fields_are_strict_errors_too(api: API) -> None:
    raw = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"},"data":{"a":"1","a":"2"}}'
    strict = await api.client.post(
        f"{CMS}?fieldValidation=Strict", content=raw, headers={"Content-Type": "application/json"}
    )
    assert strict.status_code == 400
    assert strict.json()["message"].endswith('strict decoding error: duplicate field "data.a"')
    warned = await api.client.post(CMS, content=raw, headers={"Content-Type": "application/json"})
    assert warned.status_code == 201
    assert warned.json()["data"] == {"a": "2"}  # the last one wins, as in Go
    assert warned.headers["warning"] == '299 - "duplicate field \\"data.a\\""'


async def test_duplicate_fields_of_a_merge_patch_are_reported(api: API) -> None:
    assert (await api.client.post(CMS, json={"metadata": {"name": "dup"}, "data": {}})).status_code == 201
    raw = b'{"data":{"a":"1","a":"2"}}'
    strict = await api.client.patch(f"{CMS}/dup?fieldValidation=Strict", content=raw, headers=MERGE)
    assert strict.status_code == 422  # field.Invalid(patch, <patched object>, <strict decoding error>)
    assert strict.json()["message"].endswith('": strict decoding error: duplicate field "data.a"')
    warned = await api.client.patch(f"{CMS}/dup", content=raw, headers=MERGE)
    assert warned.status_code == 200
    assert warned.json()["data"] == {"a": "2"}
    assert warned.headers["warning"] == '299 - "duplicate field \\"data.a\\""'


async def _no_body() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


def test_a_merge_patch_run_again_after_a_concurrent_write_applies_the_same_patch() -> None:
    """The first run gives the decoded patch away to the object; a rerun decodes the body again."""
    raw = b'{"data":{"b":"2","gone":null},"metadata":{"labels":{"x":"y"}}}'
    request = Request.from_scope({"type": "http", "method": "PATCH", "path": "/"}, _no_body)
    rtype = builtin_types().lookup("", "v1", "configmaps")
    assert rtype is not None
    document, clock = json.loads(raw), ManualClock()
    patcher = Patcher("merge", document, raw, rtype, request, subresource="", namespace="", clock=clock)
    live = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"gone": "1"}}
    first = patcher.mutate(json.loads(json.dumps(live)))
    first["metadata"]["labels"]["x"] = "changed by whoever holds the first result"
    second = patcher.mutate(json.loads(json.dumps(live)))
    assert second["data"] == {"b": "2"} and second["metadata"]["labels"] == {"x": "y"}


async def test_an_unknown_field_validation_value_is_invalid(api: API) -> None:
    response = await api.client.post(f"{CMS}?fieldValidation=Loose", json={"metadata": {"name": "x"}})
    assert response.status_code == 422
    assert response.json()["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": '
        'supported values: "", "Ignore", "Strict", "Warn"'
    )


async def test_strict_patches_report_unknown_fields_of_the_patched_object(api: API) -> None:
    assert (await api.client.post(DEPLOYMENTS, json=deployment())).status_code == 201
    patch = json.dumps({"spec": {"replicaz": 5, "paused": True}})
    strict = await api.client.patch(f"{DEPLOYMENTS}/web?fieldValidation=Strict", content=patch, headers=MERGE)
    assert strict.status_code == 422  # field.Invalid(patch, <patched object>, <strict decoding error>)
    assert strict.json()["message"].endswith('": strict decoding error: unknown field "spec.replicaz"')
    warned = await api.client.patch(f"{DEPLOYMENTS}/web?fieldValidation=Warn", content=patch, headers=MERGE)
    assert warned.status_code == 200
    assert warned.headers["warning"] == '299 - "unknown field \\"spec.replicaz\\""'
    assert warned.json()["spec"]["paused"] is True and "replicaz" not in warned.json()["spec"]


# -- managedFields ------------------------------------------------------------------------------------


async def test_every_write_is_recorded_under_its_manager(api: API) -> None:
    created = (await api.client.post(f"{DEPLOYMENTS}?fieldManager=kubectl-create", json=deployment())).json()
    [entry] = created["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl-create" and entry["operation"] == "Update"
    assert entry["apiVersion"] == "apps/v1" and entry["fieldsType"] == "FieldsV1"
    assert entry["time"].endswith("Z")
    assert entry["fieldsV1"]["f:spec"]["f:replicas"] == {}
    assert "f:status" not in entry["fieldsV1"]  # status is not the client's to own
    patched = await api.client.patch(
        f"{DEPLOYMENTS}/web", content=json.dumps({"spec": {"replicas": 3}}), headers={**MERGE, **KUBECTL_UA}
    )
    assert patched.status_code == 200
    assert sorted(managers(patched.json())) == [
        ("kubectl", "Update", None),
        ("kubectl-create", "Update", None),
    ]
    assert fields_of(patched.json(), "kubectl", "Update") == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in fields_of(patched.json(), "kubectl-create", "Update")["f:spec"]
    status = patched.json()
    status["status"] = {"observedGeneration": 2}
    written = await api.client.put(
        f"{DEPLOYMENTS}/web/status?fieldManager=deployment-controller", json=status
    )
    assert written.status_code == 200
    assert ("deployment-controller", "Update", "status") in managers(written.json())


async def test_scale_is_recorded_with_its_subresource(api: API) -> None:
    assert (await api.client.post(DEPLOYMENTS, json=deployment())).status_code == 201
    scaled = await api.client.patch(
        f"{DEPLOYMENTS}/web/scale",
        content=json.dumps({"spec": {"replicas": 4}}),
        headers={**MERGE, **KUBECTL_UA},
    )
    assert scaled.status_code == 200
    obj = (await api.client.get(f"{DEPLOYMENTS}/web")).json()
    assert ("kubectl", "Update", "scale") in managers(obj)
    assert fields_of(obj, "kubectl", "Update") == {"f:spec": {"f:replicas": {}}}


# -- server-side apply --------------------------------------------------------------------------------


async def test_apply_creates_then_owns_exactly_what_it_applies(api: API) -> None:
    created = await api.client.patch(
        f"{DEPLOYMENTS}/web?fieldManager=kubectl", json=deployment(), headers=APPLY
    )
    assert created.status_code == 201
    assert managers(created.json()) == [("kubectl", "Apply", None)]
    applied = fields_of(created.json(), "kubectl", "Apply")
    container = applied["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert container["."] == {} and container["f:image"] == {}
    assert set(container["f:env"]) == {'k:{"name":"A"}', 'k:{"name":"B"}'}
    # Apply again without env B and with a new image: B goes, A stays, the image changes.
    config = deployment()
    config["spec"]["template"]["spec"]["containers"][0].update(
        image="nginx:1.26", env=[{"name": "A", "value": "1"}]
    )
    again = await api.client.patch(f"{DEPLOYMENTS}/web?fieldManager=kubectl", json=config, headers=APPLY)
    assert again.status_code == 200
    container_obj = again.json()["spec"]["template"]["spec"]["containers"][0]
    assert container_obj["image"] == "nginx:1.26"
    assert container_obj["env"] == [{"name": "A", "value": "1"}]
    # The same configuration once more is a no-op: nothing is written.
    third = await api.client.patch(f"{DEPLOYMENTS}/web?fieldManager=kubectl", json=config, headers=APPLY)
    assert third.json()["metadata"]["resourceVersion"] == again.json()["metadata"]["resourceVersion"]


async def test_a_conflict_names_the_other_manager_and_force_takes_the_field(api: API) -> None:
    assert (
        await api.client.post(f"{DEPLOYMENTS}?fieldManager=kubectl-client-side-apply", json=deployment())
    ).status_code == 201
    config = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 5},
    }
    conflict = await api.client.patch(f"{DEPLOYMENTS}/web?fieldManager=ci", json=config, headers=APPLY)
    assert conflict.status_code == 409
    assert conflict.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": (
            'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: '
            ".spec.replicas"
        ),
        "reason": "Conflict",
        "details": {
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
                    "field": ".spec.replicas",
                }
            ]
        },
        "code": 409,
    }
    assert (await api.client.get(f"{DEPLOYMENTS}/web")).json()["spec"]["replicas"] == 2
    forced = await api.client.patch(
        f"{DEPLOYMENTS}/web?fieldManager=ci&force=true", json=config, headers=APPLY
    )
    assert forced.status_code == 200
    assert forced.json()["spec"]["replicas"] == 5
    assert fields_of(forced.json(), "ci", "Apply") == {"f:spec": {"f:replicas": {}}}
    # Applying the value the field already has is not a conflict: the field is shared.
    same = {**config, "spec": {"replicas": 5, "template": deployment()["spec"]["template"]}}
    shared = await api.client.patch(f"{DEPLOYMENTS}/web?fieldManager=other", json=same, headers=APPLY)
    assert shared.status_code == 200
    assert fields_of(shared.json(), "other", "Apply")["f:spec"]["f:replicas"] == {}


async def test_apply_options_and_bodies_are_checked_like_upstream(api: API) -> None:
    missing = await api.client.patch(f"{DEPLOYMENTS}/web", json=deployment(), headers=APPLY)
    assert missing.status_code == 422
    assert missing.json()["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )
    forced_merge = await api.client.patch(f"{DEPLOYMENTS}/web?force=true", content="{}", headers=MERGE)
    assert forced_merge.status_code == 422
    assert forced_merge.json()["message"].endswith(
        "force: Forbidden: may not be specified for non-apply patch"
    )
    unknown = await api.client.patch(
        f"{DEPLOYMENTS}/web?fieldManager=kubectl", json=deployment(replicaz=1), headers=APPLY
    )
    assert unknown.status_code == 400
    assert unknown.json()["message"] == (
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): "
        ".spec.replicaz: field not declared in schema"
    )
    with_managed = deployment()
    with_managed["metadata"]["managedFields"] = [{"manager": "me"}]
    refused = await api.client.patch(
        f"{DEPLOYMENTS}/web?fieldManager=kubectl", json=with_managed, headers=APPLY
    )
    assert refused.status_code == 400
    assert refused.json()["message"] == "metadata.managedFields must be nil"
    duplicate = (
        b'{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},'
        b'"spec":{"paused":true,"paused":false}}'
    )
    strict = await api.client.patch(
        f"{DEPLOYMENTS}/web?fieldManager=kubectl&fieldValidation=Strict", content=duplicate, headers=APPLY
    )
    assert strict.status_code == 400
    assert strict.json()["message"].startswith("error strict decoding YAML: error converting YAML to JSON:")
    assert 'key "paused" already set in map' in strict.json()["message"]


async def test_an_apply_that_creates_must_name_the_object_as_its_url_does(api: API) -> None:
    # upstream handlers/rest.go checkName: the body's name and the URL's must agree, or nothing is made.
    response = await api.client.patch(
        f"{DEPLOYMENTS}/other?fieldManager=alice", content=json.dumps(deployment("web")), headers=APPLY
    )
    assert response.status_code == 400
    assert (
        response.json()["message"]
        == "the name of the object (web) does not match the name on the URL (other)"
    )
    assert (await api.client.get(f"{DEPLOYMENTS}/other")).status_code == 404
    assert (await api.client.get(f"{DEPLOYMENTS}/web")).status_code == 404


async def test_a_secret_applied_again_later_with_string_data_is_unchanged(tmp_path: Path) -> None:
    # The strategy turns stringData into data after the field manager ran, so only a comparison after
    # it (upstream's store.go, IgnoreManagedFieldsTimestampsTransformer) sees that nothing changed.
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    clock = ManualClock(1_790_000_000.0)
    secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: password}\nstringData: {password: s3cret}\n"
    path = "/api/v1/namespaces/default/secrets/password?fieldManager=alice"
    try:
        async with admin_api(store, clock=clock) as (_, client):
            first = await client.patch(path, content=secret, headers=APPLY)
            assert first.status_code == 201, first.text
            await clock.advance(60)
            again = await client.patch(path, content=secret, headers=APPLY)
            assert again.status_code == 200, again.text
            before, after = first.json()["metadata"], again.json()["metadata"]
            assert after["resourceVersion"] == before["resourceVersion"], "a no-op apply wrote"
            assert after["managedFields"][0]["time"] == before["managedFields"][0]["time"]
            changed = await client.patch(path, content=secret.replace("s3cret", "other"), headers=APPLY)
            assert int(changed.json()["metadata"]["resourceVersion"]) > int(before["resourceVersion"])
            assert (
                changed.json()["metadata"]["managedFields"][0]["time"] != before["managedFields"][0]["time"]
            )
    finally:
        await store.close()
