"""Submitting manifests to a real API server (courses/manifests/services.py).

Server-side apply through the student's own identity: created, configured, unchanged with the
objects' resourceVersions; the whole submission dry-run first, so that one refused document leaves
the cluster as it was; and the API server's refusals explained at the lines they are about.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from controlplane.runtime import Lab
from courses import gateway
from courses.manifests import services
from courses.manifests.results import State, SubmitResult
from courses.sandboxes.services import SandboxAccess
from tests.courses.manifests.conftest import access_for, read, snapshot

THREE = """apiVersion: v1
kind: ConfigMap
metadata:
  name: colours
data:
  sky: blue
---
apiVersion: v1
kind: Secret
metadata:
  name: password
stringData:
  password: s3cret
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: robot
"""

POD_WITH_ERRORS = """apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: web
    image: ""
  - name: sidecar
    image: busybox
    ports:
    - containerPort: 99999
"""


def states(result: SubmitResult) -> list[tuple[str, State, bool]]:
    return [(d.label, d.state, d.dry_run) for d in result.documents]


async def test_apply_creates_then_leaves_unchanged_then_configures(admin: SandboxAccess) -> None:
    created = await services.submit(access=admin, text=THREE, action="apply", field_manager="alice")
    assert created.ok, created.summary
    assert created.summary == "Applied 3 documents: 3 created, 0 configured, 0 unchanged."
    assert states(created) == [
        ("ConfigMap/colours", State.CREATED, False),
        ("Secret/password", State.CREATED, False),
        ("ServiceAccount/robot", State.CREATED, False),
    ]
    assert [d.namespace for d in created.documents] == ["default"] * 3
    assert created.changed and not created.refused and created.diagnostics == ()
    colours = await read(admin, "/api/v1/namespaces/default/configmaps/colours")
    metadata: Any = colours["metadata"]
    assert created.documents[0].resource_version == metadata["resourceVersion"]
    assert [(f["manager"], f["operation"]) for f in metadata["managedFields"]] == [("alice", "Apply")]

    again = await services.submit(access=admin, text=THREE, action="apply", field_manager="alice")
    assert again.ok
    assert [d.state for d in again.documents] == [State.UNCHANGED] * 3
    assert [d.resource_version for d in again.documents] == [d.resource_version for d in created.documents]
    assert again.summary == "Applied 3 documents: 0 created, 0 configured, 3 unchanged."

    changed = await services.submit(
        access=admin, text=THREE.replace("blue", "grey"), action="apply", field_manager="alice"
    )
    assert [d.state for d in changed.documents] == [State.CONFIGURED, State.UNCHANGED, State.UNCHANGED]
    assert changed.documents[0].resource_version != created.documents[0].resource_version
    colours = await read(admin, "/api/v1/namespaces/default/configmaps/colours")
    assert colours["data"] == {"sky": "grey"}


async def test_a_dry_run_says_what_would_happen_and_changes_nothing(admin: SandboxAccess) -> None:
    before = await snapshot(admin)
    would = await services.submit(access=admin, text=THREE, action="dry-run", field_manager="alice")
    assert would.ok and not would.changed
    assert (
        would.summary
        == "The dry run passed: the API server would accept all 3 documents. Nothing was changed."
    )
    assert states(would) == [
        ("ConfigMap/colours", State.CREATED, True),
        ("Secret/password", State.CREATED, True),
        ("ServiceAccount/robot", State.CREATED, True),
    ]
    assert would.documents[0].outcome == "created (server dry run)"
    assert await snapshot(admin) == before

    await services.submit(access=admin, text=THREE, action="apply", field_manager="alice")
    grey = THREE.replace("blue", "grey")
    would = await services.submit(access=admin, text=grey, action="dry-run", field_manager="alice")
    assert [d.state for d in would.documents] == [State.CONFIGURED, State.UNCHANGED, State.UNCHANGED]
    assert (await read(admin, "/api/v1/namespaces/default/configmaps/colours"))["data"] == {"sky": "blue"}


async def test_an_invalid_second_document_of_three_leaves_the_cluster_as_it_was(admin: SandboxAccess) -> None:
    first, _, third = THREE.split("---\n")
    text = first + "---\n" + POD_WITH_ERRORS + "---\n" + third
    before = await snapshot(admin), await snapshot(admin, "/api/v1/serviceaccounts")
    result = await services.submit(access=admin, text=text, action="apply", field_manager="alice")
    assert not result.ok and not result.changed
    assert result.summary == (
        "Document 2 of 3 (Pod/web) was refused in the dry run, so none of the documents was applied."
    )
    assert states(result) == [
        ("ConfigMap/colours", State.NOT_APPLIED, False),
        ("Pod/web", State.FAILED, False),
        ("ServiceAccount/robot", State.NOT_APPLIED, False),
    ]
    problem = result.documents[1].problem
    assert problem is not None and problem.code == 422
    assert problem.summary == 'The API server found 2 invalid fields in Pod "web".'
    # Each cause at the line of its field, in the whole text: the Pod starts at line 8.
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (15, 5, "spec.containers[0].image: Required value"),
        (
            19,
            7,
            "spec.containers[1].ports[0].containerPort: Invalid value: 99999: must be between 1 and 65535, "
            "inclusive",
        ),
    ]
    assert result.diagnostics_json()[0] == {
        "line": 15,
        "column": 5,
        "message": "spec.containers[0].image: Required value",
        "severity": "error",
    }
    assert (await snapshot(admin), await snapshot(admin, "/api/v1/serviceaccounts")) == before


async def test_an_unprivileged_user_is_refused_with_the_rbac_explanation(stranger: SandboxAccess) -> None:
    result = await services.submit(access=stranger, text=THREE, action="apply", field_manager="bob")
    assert not result.ok
    assert [d.state for d in result.documents] == [State.FAILED] * 3
    problem = result.documents[0].problem
    assert problem is not None and problem.code == 403
    assert problem.summary == (
        'Authorization refused it (403 Forbidden): configmaps "colours" is forbidden: User "bob" cannot '
        "patch "
        'resource "configmaps" in API group "" in the namespace "default"'
    )
    # The trace's rbac.decision says why, binding by binding.
    assert problem.details[0].startswith('Why: no RBAC rule lets bob patch configmaps "colours"')
    assert any(
        d.startswith('ClusterRoleBinding "system:discovery" gives Group "system:authenticated"')
        for d in problem.details
    )
    assert [d.line for d in result.diagnostics] == [1, 8, 15]


async def test_an_apply_conflict_names_the_other_manager_and_the_field(admin: SandboxAccess) -> None:
    await services.submit(access=admin, text=THREE, action="apply", field_manager="alice")
    # Someone else (another field manager) wants the ConfigMap's sky another colour.
    text = THREE.split("---\n")[0].replace("blue", "red")
    result = await services.submit(access=admin, text=text, action="apply", field_manager="carol")
    assert not result.ok
    problem = result.documents[0].problem
    assert problem is not None and (problem.code, problem.reason) == (409, "Conflict")
    assert problem.summary == (
        'Apply conflict: 1 field of ConfigMap "colours" is owned by another field manager, so nothing was '
        "changed."
    )
    assert problem.details[0].startswith('.data.sky belongs to the field manager "alice", which set it last.')
    assert [(d.line, d.column) for d in result.diagnostics] == [(6, 3)]
    assert (await read(admin, "/api/v1/namespaces/default/configmaps/colours"))["data"] == {"sky": "blue"}


async def test_a_stale_resource_version_is_a_conflict_explained(admin: SandboxAccess) -> None:
    await services.submit(access=admin, text=THREE, action="apply", field_manager="alice")
    stale = THREE.split("---\n")[0].replace("  name: colours\n", '  name: colours\n  resourceVersion: "1"\n')
    result = await services.submit(access=admin, text=stale, action="apply", field_manager="alice")
    problem = result.documents[0].problem
    assert problem is not None and problem.code == 409
    assert 'your manifest carries metadata.resourceVersion "1"' in problem.summary
    assert [(d.line, d.column) for d in result.diagnostics] == [(5, 3)]


async def test_delete_dry_runs_the_whole_submission_first(admin: SandboxAccess) -> None:
    await services.submit(access=admin, text=THREE, action="apply", field_manager="alice")
    before = await snapshot(admin)
    missing = THREE + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: never-made\n"
    refused = await services.submit(access=admin, text=missing, action="delete", field_manager="alice")
    assert not refused.ok
    assert (
        refused.summary == "Document 4 of 4 (ConfigMap/never-made) was refused in the dry run, "
        "so none of the documents was deleted."
    )
    assert refused.documents[3].problem is not None
    assert (
        refused.documents[3].problem.summary
        == 'ConfigMap "never-made" was not found: configmaps "never-made" not found'
    )
    assert await snapshot(admin) == before

    deleted = await services.submit(access=admin, text=THREE, action="delete", field_manager="alice")
    assert deleted.ok and deleted.summary == "Deleted 3 objects."
    assert [d.state for d in deleted.documents] == [State.DELETED] * 3
    assert await snapshot(admin) == {}


async def test_kinds_are_mapped_by_discovery_with_hints(admin: SandboxAccess) -> None:
    text = (
        "apiVersion: v1\nkind: Deployment\nmetadata: {name: a}\n---\n"
        "apiVersion: apps/v1\nkind: deployment\nmetadata: {name: b}\n---\n"
        "apiVersion: apps/v9\nkind: Deployment\nmetadata: {name: c}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: d}\n"
    )
    result = await services.submit(access=admin, text=text, action="dry-run", field_manager="alice")
    summaries = [d.problem.summary if d.problem else None for d in result.documents]
    assert summaries == [
        'There is no kind "Deployment" in v1. Deployment is served as apps/v1: change apiVersion.',
        'There is no kind "deployment" in apps/v1. Did you mean Deployment?',
        'The API server does not serve apiVersion "apps/v9". Deployment is served as apps/v1.',
        None,
    ]
    assert [(d.line, d.column) for d in result.diagnostics] == [(2, 1), (6, 1), (9, 1)]
    assert result.documents[3].namespace is None  # a cluster-scoped kind


async def test_a_namespace_made_by_the_same_submission_is_explained(admin: SandboxAccess) -> None:
    text = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n---\n" + THREE.split("---\n")[
        0
    ].replace("  name: colours\n", "  name: colours\n  namespace: team\n")
    result = await services.submit(access=admin, text=text, action="apply", field_manager="alice")
    assert not result.ok
    problem = result.documents[1].problem
    assert problem is not None
    assert problem.summary.startswith('The namespace "team" does not exist yet: document 1 creates it')
    assert [(d.line, d.column) for d in result.diagnostics] == [(10, 3)]
    # Done in two steps, as the message says, it works.
    first, second = text.split("---\n")
    assert (await services.submit(access=admin, text=first, action="apply", field_manager="alice")).ok
    result = await services.submit(access=admin, text=second, action="apply", field_manager="alice")
    assert result.ok and result.documents[0].namespace == "team"


async def test_impersonation_lets_the_api_server_decide(lab: Lab, admin: SandboxAccess) -> None:
    robot = "system:serviceaccount:default:robot"
    result = await services.submit(
        access=admin, text=THREE.split("---\n")[0], action="apply", field_manager="alice", impersonate=robot
    )
    assert result.impersonated == robot
    problem = result.documents[0].problem
    assert problem is not None and f'User "{robot}" cannot patch resource "configmaps"' in problem.summary
    rbac = """apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: configmap-writer
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, patch, create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: robot-writes-configmaps
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmap-writer}
subjects:
- {kind: ServiceAccount, name: robot, namespace: default}
"""
    assert (await services.submit(access=admin, text=rbac, action="apply", field_manager="alice")).ok
    result = await services.submit(
        access=admin, text=THREE.split("---\n")[0], action="apply", field_manager="alice", impersonate=robot
    )
    assert result.ok, result.summary
    colours: Any = await read(admin, "/api/v1/namespaces/default/configmaps/colours")
    assert colours["metadata"]["managedFields"][0]["manager"] == "alice"
    # A user nobody may impersonate as is refused by the API server, not by the form.
    stranger = access_for(lab, "bob")
    result = await services.submit(
        access=stranger, text=THREE.split("---\n")[0], action="apply", field_manager="bob", impersonate=robot
    )
    assert not result.ok and result.documents[0].problem is not None
    assert result.documents[0].problem.code == 403


REFUSED = [
    ("a: [", "YAML syntax error"),
    ("a: b\x00", "NUL byte"),
    ("- a\n", "is a list"),
    ("apiVersion: v1\nmetadata: {name: x}\n", "has no kind"),
    ("# nothing\n", "nothing to submit"),
]


@pytest.mark.parametrize(("text", "words"), REFUSED)
async def test_refusals_never_reach_the_cluster(
    admin: SandboxAccess, monkeypatch: pytest.MonkeyPatch, text: str, words: str
) -> None:
    def no_client(**_: Any) -> Any:
        raise AssertionError("a refused text must not reach the API server")

    monkeypatch.setattr(gateway, "api_client", no_client)
    result = await services.submit(access=admin, text=text, action="apply", field_manager="alice")
    assert result.refused and not result.ok and not result.changed
    assert words in result.summary


async def test_several_refusals_are_listed(admin: SandboxAccess) -> None:
    text = "apiVersion: v1\nmetadata: {name: a}\n---\n- a\n"
    result = await services.submit(access=admin, text=text, action="apply", field_manager="alice")
    assert result.refused
    assert result.summary == "2 problems were found in the text."
    assert [d.line for d in result.diagnostics] == [1, 4]
    assert result.notes[1].startswith("Line 4, column 1: Document 2 is a list")


async def test_an_unexpected_error_is_logged_and_becomes_a_result(
    admin: SandboxAccess, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("something nobody expected")

    monkeypatch.setattr(services._Session, "run", broken)
    with caplog.at_level(logging.ERROR, logger="courses.manifests.services"):
        result = await services.submit(access=admin, text=THREE, action="apply", field_manager="alice")
    assert not result.ok
    assert result.summary.startswith("Could not submit the manifest: something went wrong on the lab's side")
    assert "something nobody expected" in caplog.text


async def test_a_cluster_that_is_not_here(lab: Lab) -> None:
    elsewhere = SandboxAccess(cluster="sb-404", user="student:x", token="t")
    result = await services.submit(access=elsewhere, text=THREE, action="apply", field_manager="x")
    assert not result.ok
    assert result.summary.startswith("Your cluster is not running in this server process")


async def test_a_long_field_manager_is_cut_to_what_the_api_server_takes(admin: SandboxAccess) -> None:
    name = "é" * 100  # 200 bytes
    result = await services.submit(
        access=admin, text=THREE.split("---\n")[0], action="apply", field_manager=name
    )
    assert result.ok, result.summary
    colours: Any = await read(admin, "/api/v1/namespaces/default/configmaps/colours")
    assert colours["metadata"]["managedFields"][0]["manager"] == "é" * 64


def test_an_unknown_action_is_a_programming_error() -> None:
    import asyncio

    access = SandboxAccess(cluster="demo", user="x", token="t")
    with pytest.raises(ValueError, match="unknown action"):
        asyncio.run(services.submit(access=access, text="", action="create", field_manager="x"))  # type: ignore[arg-type]


# -- flow control, with an API server that throttles on demand ---------------------------------------

CONFIGMAPS = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [{"name": "configmaps", "kind": "ConfigMap", "namespaced": True, "verbs": ["patch"]}],
}


def throttling(monkeypatch: pytest.MonkeyPatch, answers: list[int]) -> list[str]:
    """``gateway.api_client`` gives a client whose API server answers PATCHes with ``answers`` in turn
    (429 with Retry-After: 0, or the code with a ConfigMap); the list returned is what was asked."""
    from contextlib import asynccontextmanager

    import httpx

    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json=CONFIGMAPS)
        asked.append(("dry " if "dryRun=All" in str(request.url) else "") + request.method)
        code = answers.pop(0)
        if code == 429:
            return httpx.Response(
                429, text="Too many requests, please try again later.\n", headers={"Retry-After": "0"}
            )
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "colours", "resourceVersion": "7"},
        }
        return httpx.Response(code, json=body)

    @asynccontextmanager
    async def api_client(**_: Any) -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://lab") as client:
            yield client

    monkeypatch.setattr(gateway, "api_client", api_client)

    def no_trace(**_: Any) -> Any:
        raise gateway.NotServedHere("mock")

    monkeypatch.setattr(gateway, "subscribe_trace", no_trace)
    return asked


async def test_a_throttled_dry_run_says_when_to_try_again(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = throttling(monkeypatch, [429])
    access = SandboxAccess(cluster="mock", user="x", token="t")
    result = await services.submit(
        access=access, text=THREE.split("---\n")[0], action="apply", field_manager="x"
    )
    assert asked == ["dry PATCH"]
    problem = result.documents[0].problem
    assert problem is not None and (problem.code, problem.retry_after) == (429, 0)
    assert "wait 0 s and try again" in problem.summary


async def test_a_throttled_real_request_is_sent_again_after_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = throttling(monkeypatch, [201, 429, 429, 201])
    access = SandboxAccess(cluster="mock", user="x", token="t")
    result = await services.submit(
        access=access, text=THREE.split("---\n")[0], action="apply", field_manager="x"
    )
    assert asked == ["dry PATCH", "PATCH", "PATCH", "PATCH"]
    assert result.ok and result.documents[0].state is State.CREATED
