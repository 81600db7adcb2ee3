"""lightkube, unmodified (its sync ``Client`` and its ``AsyncClient``), against a live lab.

Each test drives one part of the API as a lightkube program would: CRUD of ConfigMaps and Secrets,
selectors, server-side apply and every patch type, the status and scale subresources, garbage
collection, collections, watches and ``wait``, pod logs, the Status of errors, custom resources
through lightkube's generic resources, and server-side dry runs. Upstream Kubernetes 1.37 is the
reference for every code, reason and message asserted here.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from lightkube import ApiError, AsyncClient, Client, KubeConfig
from lightkube import operators as op
from lightkube.generic_resource import (
    create_namespaced_resource,
    get_generic_resource,
    load_in_cluster_generic_resources,
)
from lightkube.models.apiextensions_v1 import (
    CustomResourceDefinitionNames,
    CustomResourceDefinitionSpec,
    CustomResourceDefinitionVersion,
    CustomResourceSubresources,
    CustomResourceSubresourceScale,
    CustomResourceValidation,
    JSONSchemaProps,
)
from lightkube.models.apps_v1 import DeploymentSpec
from lightkube.models.core_v1 import Container, PodSpec, PodTemplateSpec
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import Deployment, ReplicaSet
from lightkube.resources.core_v1 import ConfigMap, Namespace, Pod, Secret, ServiceAccount
from lightkube.types import CascadeType, PatchType

from tests.support.lab import LiveLab

CRD_GROUP = "lightkube.example.com"


@pytest.fixture(scope="module")
def kube(lab: LiveLab) -> Iterator[Client]:
    with Client(KubeConfig.from_file(str(lab.kubeconfig))) as client:
        yield client


@pytest.fixture(scope="module")
def made_namespaces(kube: Client) -> Iterator[list[str]]:
    """The namespaces the module's tests made, deleted (without waiting) once they have all run: deleting
    a namespace keeps the namespace controller and the garbage collector busy for a while, which would
    slow the controllers the later tests wait for."""
    names: list[str] = []
    yield names
    for name in names:
        kube.delete(Namespace, name)


@pytest.fixture
def ns(kube: Client, made_namespaces: list[str], request: pytest.FixtureRequest) -> str:
    """A namespace of the test's own, made by lightkube."""
    name: str = "lk-" + request.node.name.removeprefix("test_").replace("_", "-")[:40].strip("-")
    kube.create(Namespace(metadata=ObjectMeta(name=name)))
    made_namespaces.append(name)
    return name


@pytest.fixture
def pod_ns(kube: Client, ns: str) -> str:
    """``ns``, once its default ServiceAccount exists: pods need it, and the controller manager makes it a
    moment after the namespace (as ``conftest.namespace`` waits with kubectl, this waits with a watch)."""
    for _ in kube.watch(ServiceAccount, namespace=ns, fields={"metadata.name": "default"}):
        break
    return ns


@pytest.fixture
async def akube(lab: LiveLab) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(KubeConfig.from_file(str(lab.kubeconfig))) as client:
        yield client


def configmap(
    name: str, labels: dict[str, str] | None = None, namespace: str | None = None, **data: str
) -> ConfigMap:
    return ConfigMap(metadata=ObjectMeta(name=name, namespace=namespace, labels=labels), data=data)


def deployment(name: str, replicas: int, namespace: str | None = None) -> Deployment:
    labels = {"app": name}
    return Deployment(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=DeploymentSpec(
            replicas=replicas,
            selector=LabelSelector(matchLabels=labels),
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels=labels),
                spec=PodSpec(containers=[Container(name="web", image="nginx:1.27")]),
            ),
        ),
    )


def api_error(call: Any) -> ApiError:
    """The ``ApiError`` a lightkube call raises (fails the test if it returns)."""
    with pytest.raises(ApiError) as caught:
        call()
    return caught.value


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# -- ConfigMaps and Secrets ---------------------------------------------------------------------------


def test_configmap_create_get_list_replace_delete_round_trip(kube: Client, ns: str) -> None:
    made = kube.create(configmap("settings", mode="a"), namespace=ns, field_manager="lk-tests")
    assert made.metadata.resourceVersion and made.metadata.uid
    assert made.metadata.namespace == ns
    assert [(m.manager, m.operation) for m in made.metadata.managedFields or []] == [("lk-tests", "Update")]

    got = kube.get(ConfigMap, "settings", namespace=ns)
    assert got.data == {"mode": "a"}
    assert "settings" in {c.metadata.name for c in kube.list(ConfigMap, namespace=ns)}

    got.data = {"mode": "b"}
    replaced = kube.replace(got)
    assert replaced.data == {"mode": "b"}
    assert int(replaced.metadata.resourceVersion or 0) > int(made.metadata.resourceVersion or 0)

    kube.delete(ConfigMap, "settings", namespace=ns)
    gone = api_error(lambda: kube.get(ConfigMap, "settings", namespace=ns))
    assert (gone.status.code, gone.status.reason) == (404, "NotFound")


def test_a_replace_carrying_a_stale_resource_version_is_409_conflict(kube: Client, ns: str) -> None:
    first = kube.create(configmap("stale", k="1"), namespace=ns)
    first.data = {"k": "2"}
    kube.replace(first)
    first.data = {"k": "3"}  # still carries the first resourceVersion
    error = api_error(lambda: kube.replace(first))
    assert (error.status.code, error.status.reason, error.status.status) == (409, "Conflict", "Failure")
    assert error.status.message == (
        'Operation cannot be fulfilled on configmaps "stale": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert (error.status.details.name, error.status.details.kind) == ("stale", "configmaps")


def test_secret_data_is_base64_and_string_data_is_folded_into_it(kube: Client, ns: str) -> None:
    made = kube.create(
        Secret(metadata=ObjectMeta(name="creds"), data={"user": b64("admin")}, stringData={"pw": "s3cr3t"}),
        namespace=ns,
    )
    assert made.type == "Opaque"
    assert made.stringData is None, "stringData is write-only: merged into data, never stored"
    assert made.data == {"user": b64("admin"), "pw": b64("s3cr3t")}

    read = kube.get(Secret, "creds", namespace=ns)
    assert base64.b64decode((read.data or {})["pw"]) == b"s3cr3t"
    read.data = {"user": b64("root")}
    assert kube.replace(read).data == {"user": b64("root")}


def test_secret_with_data_that_is_not_base64_is_400_bad_request(kube: Client, ns: str) -> None:
    error = api_error(
        lambda: kube.create(Secret(metadata=ObjectMeta(name="bad"), data={"k": "not base64!"}), namespace=ns)
    )
    assert (error.status.code, error.status.reason) == (400, "BadRequest")
    assert error.status.message == (
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3'
    )


# -- selectors and paging -------------------------------------------------------------------------------


def test_list_filters_by_label_and_field_selectors(kube: Client, ns: str) -> None:
    for i, tier in enumerate(["front", "front", "back", "back"]):
        kube.create(configmap(f"sel-{i}", labels={"tier": tier, "n": str(i)}), namespace=ns)
    kube.create(configmap("sel-unlabelled"), namespace=ns)

    def names(**selectors: Any) -> list[str]:
        found = kube.list(ConfigMap, namespace=ns, **selectors)
        return sorted(name for c in found if (name := str(c.metadata.name)).startswith("sel-"))

    assert names(labels={"tier": "front"}) == ["sel-0", "sel-1"]
    assert names(labels={"tier": op.in_(["front", "back"]), "n": op.not_in(["0", "3"])}) == ["sel-1", "sel-2"]
    assert names(labels={"tier": op.not_equal("front")}) == ["sel-2", "sel-3", "sel-unlabelled"]
    assert names(labels={"tier": op.exists()}) == ["sel-0", "sel-1", "sel-2", "sel-3"]
    assert names(labels={"tier": op.not_exists()}) == ["sel-unlabelled"]
    assert names(fields={"metadata.name": "sel-2"}) == ["sel-2"]
    assert names(fields={"metadata.name": op.not_in(["sel-0", "sel-1"])}) == [
        "sel-2",
        "sel-3",
        "sel-unlabelled",
    ]
    assert names(labels={"tier": "back"}, fields={"metadata.name": op.not_equal("sel-2")}) == ["sel-3"]

    kube.create(
        Secret(
            metadata=ObjectMeta(name="sel-tls"), type="kubernetes.io/tls", data={"tls.crt": "", "tls.key": ""}
        ),
        namespace=ns,
    )
    kube.create(Secret(metadata=ObjectMeta(name="sel-opaque")), namespace=ns)
    tls = kube.list(Secret, namespace=ns, fields={"type": "kubernetes.io/tls"})
    assert [s.metadata.name for s in tls] == ["sel-tls"]


def test_an_unknown_field_selector_is_400_bad_request(kube: Client, ns: str) -> None:
    error = api_error(lambda: list(kube.list(ConfigMap, namespace=ns, fields={"data.k": "v"})))
    assert (error.status.code, error.status.reason) == (400, "BadRequest")
    assert (
        error.status.message
        == '"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )


def test_list_in_chunks_follows_continue_tokens_across_namespaces(kube: Client, ns: str) -> None:
    for i in range(5):
        kube.create(configmap(f"page-{i}", labels={"paged": ns}), namespace=ns)
    pages = kube.list(ConfigMap, namespace="*", chunk_size=2, labels={"paged": ns})
    seen = [(c.metadata.namespace, c.metadata.name) for c in pages]
    assert seen == [(ns, f"page-{i}") for i in range(5)]
    assert int(pages.resourceVersion) > 0


# -- server-side apply and patches --------------------------------------------------------------------


def test_apply_shares_fields_between_managers_and_a_conflict_is_409(kube: Client, ns: str) -> None:
    applied = kube.apply(configmap("shared", namespace=ns, a="1"), field_manager="one")
    assert [(m.manager, m.operation) for m in applied.metadata.managedFields or []] == [("one", "Apply")]

    error = api_error(lambda: kube.apply(configmap("shared", namespace=ns, a="2"), field_manager="two"))
    assert (error.status.code, error.status.reason) == (409, "Conflict")
    assert error.status.message == 'Apply failed with 1 conflict: conflict with "one": .data.a'
    [cause] = error.status.details.causes or []
    assert (cause.reason, cause.field, cause.message) == (
        "FieldManagerConflict",
        ".data.a",
        'conflict with "one"',
    )
    assert kube.get(ConfigMap, "shared", namespace=ns).data == {"a": "1"}

    forced = kube.apply(configmap("shared", namespace=ns, a="2"), field_manager="two", force=True)
    assert forced.data == {"a": "2"}
    owners = {m.manager: m.fieldsV1 for m in forced.metadata.managedFields or []}
    assert owners == {"two": {"f:data": {"f:a": {}}}}, "forcing takes the field away from its old owner"

    both = kube.apply(configmap("shared", namespace=ns, b="3"), field_manager="one")
    assert both.data == {"a": "2", "b": "3"}


def test_apply_conflict_with_an_update_names_the_manager_and_its_version(kube: Client, ns: str) -> None:
    kube.create(configmap("edited", a="1", b="2"), namespace=ns, field_manager="editor")
    error = api_error(
        lambda: kube.apply(configmap("edited", namespace=ns, a="9", b="8"), field_manager="applier")
    )
    assert error.status.code == 409
    assert error.status.message == (
        'Apply failed with 2 conflicts: conflicts with "editor" using v1:\n- .data.a\n- .data.b'
    )
    causes = sorted((c.field, c.message) for c in error.status.details.causes or [])
    assert causes == [
        (".data.a", 'conflict with "editor" using v1'),
        (".data.b", 'conflict with "editor" using v1'),
    ]


def test_an_apply_patch_without_apiversion_and_kind_is_400(kube: Client, ns: str) -> None:
    kube.create(configmap("typed", a="1"), namespace=ns)
    error = api_error(
        lambda: kube.patch(
            ConfigMap,
            "typed",
            {"data": {"a": "2"}},
            namespace=ns,
            patch_type=PatchType.APPLY,
            field_manager="x",
        )
    )
    assert (error.status.code, error.status.reason) == (400, "BadRequest")
    assert error.status.message == "invalid object type: /, Kind="


def test_each_patch_type_changes_a_configmap(kube: Client, ns: str) -> None:
    kube.create(configmap("patched", keep="1", drop="2"), namespace=ns)

    merged = kube.patch(
        ConfigMap,
        "patched",
        {"data": {"drop": None, "m": "x"}},
        namespace=ns,
        patch_type=PatchType.MERGE,
    )
    assert merged.data == {"keep": "1", "m": "x"}

    ops = [
        {"op": "test", "path": "/data/m", "value": "x"},
        {"op": "replace", "path": "/data/m", "value": "y"},
    ]
    jsoned = kube.patch(ConfigMap, "patched", ops, namespace=ns, patch_type=PatchType.JSON)
    assert jsoned.data == {"keep": "1", "m": "y"}

    strategic = kube.patch(ConfigMap, "patched", {"data": {"s": "z"}}, namespace=ns)
    assert strategic.data == {"keep": "1", "m": "y", "s": "z"}, "lightkube's default patch type is strategic"

    body = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"ssa": "on"}}
    applied = kube.patch(
        ConfigMap, "patched", body, namespace=ns, patch_type=PatchType.APPLY, field_manager="ssa"
    )
    assert applied.data == {"keep": "1", "m": "y", "s": "z", "ssa": "on"}
    assert ("ssa", "Apply") in [(m.manager, m.operation) for m in applied.metadata.managedFields or []]


def test_strategic_merge_patch_merges_containers_by_name(kube: Client, ns: str) -> None:
    dep = deployment("merged", replicas=0)
    assert dep.spec is not None and dep.spec.template.spec is not None
    dep.spec.template.spec.containers.append(Container(name="sidecar", image="busybox"))
    kube.create(dep, namespace=ns)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.37"}]}}}}
    strategic = kube.patch(Deployment, "merged", patch, namespace=ns, patch_type=PatchType.STRATEGIC)
    assert strategic.spec is not None and strategic.spec.template.spec is not None
    images = [(c.name, c.image) for c in strategic.spec.template.spec.containers]
    assert images == [("web", "nginx:1.27"), ("sidecar", "busybox:1.37")]

    replaced = kube.patch(Deployment, "merged", patch, namespace=ns, patch_type=PatchType.MERGE)
    assert replaced.spec is not None and replaced.spec.template.spec is not None
    assert [c.name for c in replaced.spec.template.spec.containers] == ["sidecar"], (
        "a merge patch replaces lists"
    )


def test_a_failing_json_patch_is_422_with_the_patch_error_as_cause(kube: Client, ns: str) -> None:
    kube.create(configmap("tested", k="v"), namespace=ns)
    error = api_error(
        lambda: kube.patch(
            ConfigMap,
            "tested",
            [{"op": "test", "path": "/data/k", "value": "other"}],
            namespace=ns,
            patch_type=PatchType.JSON,
        )
    )
    assert (error.status.code, error.status.reason) == (422, "Invalid")
    assert error.status.message == "the server rejected our request due to an error in our request"
    assert [c.message for c in error.status.details.causes or []] == [
        "testing value /data/k failed: test failed"
    ]

    not_a_list = api_error(
        lambda: kube.patch(ConfigMap, "tested", {"data": {}}, namespace=ns, patch_type=PatchType.JSON)
    )
    assert (not_a_list.status.code, not_a_list.status.reason) == (400, "BadRequest")
    assert not_a_list.status.message == "json: cannot unmarshal object into Go value of type jsonpatch.Patch"


# -- errors ------------------------------------------------------------------------------------------------


def test_errors_raise_api_error_carrying_upstreams_status(kube: Client, ns: str) -> None:
    missing = api_error(lambda: kube.get(ConfigMap, "absent", namespace=ns))
    assert (missing.status.code, missing.status.reason, missing.status.status) == (404, "NotFound", "Failure")
    assert missing.status.message == 'configmaps "absent" not found'
    assert (missing.status.details.name, missing.status.details.kind) == ("absent", "configmaps")
    assert missing.response is not None and missing.response.status_code == 404

    no_namespace = api_error(lambda: kube.create(configmap("x"), namespace="no-such-namespace-here"))
    assert (no_namespace.status.code, no_namespace.status.message) == (
        404,
        'namespaces "no-such-namespace-here" not found',
    )

    kube.create(configmap("twice"), namespace=ns)
    duplicate = api_error(lambda: kube.create(configmap("twice"), namespace=ns))
    assert (duplicate.status.code, duplicate.status.reason) == (409, "AlreadyExists")
    assert duplicate.status.message == 'configmaps "twice" already exists'
    assert (duplicate.status.details.name, duplicate.status.details.kind) == ("twice", "configmaps")

    invalid = api_error(lambda: kube.create(configmap("Not_Valid"), namespace=ns))
    assert (invalid.status.code, invalid.status.reason) == (422, "Invalid")
    assert invalid.status.message is not None
    assert invalid.status.message.startswith(
        'ConfigMap "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid": '
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"
    )
    assert (invalid.status.details.name, invalid.status.details.kind) == ("Not_Valid", "ConfigMap")
    [cause] = invalid.status.details.causes or []
    assert (cause.reason, cause.field) == ("FieldValueInvalid", "metadata.name")

    bad_replicas = api_error(
        lambda: kube.create(deployment("negative", replicas=-1), namespace=ns),
    )
    assert (bad_replicas.status.code, bad_replicas.status.details.group) == (422, "apps")
    assert bad_replicas.status.message == (
        'Deployment.apps "negative" is invalid: spec.replicas: Invalid value: -1: '
        "must be greater than or equal to 0"
    )


# -- dry runs ----------------------------------------------------------------------------------------------


def test_dry_run_create_apply_and_delete_leave_nothing_behind(kube: Client, lab: LiveLab, ns: str) -> None:
    dry = kube.create(configmap("dry", k="v"), namespace=ns, dry_run=True)
    assert dry.metadata.uid and dry.data == {"k": "v"}
    assert dry.metadata.resourceVersion is None, "a dry-run create is never stored, so it has no version"
    assert api_error(lambda: kube.get(ConfigMap, "dry", namespace=ns)).status.code == 404

    applied = kube.apply(configmap("dry", namespace=ns, k="v"), field_manager="dry", dry_run=True)
    assert applied.data == {"k": "v"}
    assert api_error(lambda: kube.get(ConfigMap, "dry", namespace=ns)).status.code == 404

    kube.create(configmap("real", k="v"), namespace=ns)
    changed = kube.apply(
        configmap("real", namespace=ns, k="w"), field_manager="dry", dry_run=True, force=True
    )
    assert changed.data == {"k": "w"}
    assert kube.get(ConfigMap, "real", namespace=ns).data == {"k": "v"}
    kube.delete(ConfigMap, "real", namespace=ns, dry_run=True)
    assert kube.get(ConfigMap, "real", namespace=ns).data == {"k": "v"}
    exists = api_error(lambda: kube.create(configmap("real"), namespace=ns, dry_run=True))
    assert (exists.status.code, exists.status.reason) == (409, "AlreadyExists")

    with Client(KubeConfig.from_file(str(lab.kubeconfig)), dry_run=True) as dry_client:
        dry_client.create(configmap("client-wide"), namespace=ns)
    assert api_error(lambda: kube.get(ConfigMap, "client-wide", namespace=ns)).status.code == 404


# -- collections and garbage collection ------------------------------------------------------------------


def test_deletecollection_removes_the_namespaces_objects_or_those_selected(kube: Client, ns: str) -> None:
    for i in range(4):
        kube.create(configmap(f"batch-{i}", labels={"batch": "odd" if i % 2 else "even"}), namespace=ns)

    # lightkube's deletecollection takes no selector; its request layer sends one as any list would.
    kube._client.request(
        "deletecollection", res=ConfigMap, namespace=ns, params={"labelSelector": "batch=odd"}
    )
    left = {c.metadata.name for c in kube.list(ConfigMap, namespace=ns, labels={"batch": op.exists()})}
    assert left == {"batch-0", "batch-2"}

    kube.deletecollection(ConfigMap, namespace=ns, dry_run=True)
    assert len(list(kube.list(ConfigMap, namespace=ns, labels={"batch": op.exists()}))) == 2
    kube.deletecollection(ConfigMap, namespace=ns)
    assert list(kube.list(ConfigMap, namespace=ns, labels={"batch": op.exists()})) == []


@pytest.mark.timeout(90)
def test_deleting_a_deployment_in_background_collects_its_replicaset_and_pods(
    kube: Client, lab: LiveLab, pod_ns: str
) -> None:
    kube.create(deployment("doomed", replicas=2), namespace=pod_ns)
    kube.wait(Deployment, "doomed", namespace=pod_ns, for_conditions=["Available"])
    [rs] = kube.list(ReplicaSet, namespace=pod_ns, labels={"app": "doomed"})
    assert [(o.kind, o.name, o.controller) for o in rs.metadata.ownerReferences or []] == [
        ("Deployment", "doomed", True)
    ]
    pods = list(kube.list(Pod, namespace=pod_ns, labels={"app": "doomed"}))
    assert len(pods) == 2
    assert {o.name for p in pods for o in p.metadata.ownerReferences or []} == {rs.metadata.name}

    kube.delete(Deployment, "doomed", namespace=pod_ns, cascade=CascadeType.BACKGROUND)
    assert api_error(lambda: kube.get(Deployment, "doomed", namespace=pod_ns)).status.code == 404

    def collected() -> bool:
        try:
            kube.get(ReplicaSet, str(rs.metadata.name), namespace=pod_ns)
        except ApiError as error:
            if error.status.code != 404:
                raise
            # Deleted pods terminate gracefully: the collector's delete shows as a deletionTimestamp.
            left = kube.list(Pod, namespace=pod_ns, labels={"app": "doomed"})
            return all(p.metadata.deletionTimestamp is not None for p in left)
        return False

    lab.eventually(collected, "the garbage collector deleting the ReplicaSet and its pods", seconds=60)


@pytest.mark.timeout(90)
def test_deleting_a_deployment_with_orphan_leaves_its_replicaset_ownerless(kube: Client, pod_ns: str) -> None:
    kube.create(deployment("orphaner", replicas=1), namespace=pod_ns)
    kube.wait(Deployment, "orphaner", namespace=pod_ns, for_conditions=["Available"])
    [rs] = kube.list(ReplicaSet, namespace=pod_ns, labels={"app": "orphaner"})

    before = kube.get(Deployment, "orphaner", namespace=pod_ns).metadata.resourceVersion
    kube.delete(Deployment, "orphaner", namespace=pod_ns, cascade=CascadeType.ORPHAN)
    # The orphan finalizer holds the Deployment until the collector has released its dependents.
    deleting: list[list[str] | None] = []
    for kind, obj in kube.watch(
        Deployment, namespace=pod_ns, fields={"metadata.name": "orphaner"}, resource_version=before
    ):
        if kind == "DELETED":
            break
        if obj.metadata.deletionTimestamp is not None:
            deleting.append(obj.metadata.finalizers)
    assert deleting and all(finalizers == ["orphan"] for finalizers in deleting)
    kept = kube.get(ReplicaSet, str(rs.metadata.name), namespace=pod_ns)
    assert kept.metadata.uid == rs.metadata.uid
    assert not kept.metadata.ownerReferences
    assert (kept.spec.replicas if kept.spec else None) == 1


# -- status and scale subresources -----------------------------------------------------------------------


def test_status_subresource_writes_only_status_and_the_object_only_spec(kube: Client, ns: str) -> None:
    kube.create(deployment("statused", replicas=0), namespace=ns)
    condition = {"type": "Audited", "status": "True", "reason": "Checked", "message": "by lightkube"}
    patched = kube.patch(
        Deployment.Status,
        "statused",
        {"spec": {"replicas": 5}, "status": {"conditions": [condition]}},
        namespace=ns,
        patch_type=PatchType.STRATEGIC,
        field_manager="auditor",
    )
    assert isinstance(patched, Deployment.Status)
    assert patched.spec is not None and patched.spec.replicas == 0, "the status subresource ignores spec"
    assert patched.status is not None
    assert [(c.type, c.reason) for c in patched.status.conditions or [] if c.type == "Audited"] == [
        ("Audited", "Checked")
    ]
    entries = [(m.manager, m.operation, m.subresource) for m in patched.metadata.managedFields or []]
    assert ("auditor", "Update", "status") in entries

    applied = kube.patch(
        Deployment.Status,
        "statused",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "status": {"conditions": [{"type": "Applied", "status": "True"}]},
        },
        namespace=ns,
        patch_type=PatchType.APPLY,
        field_manager="status-applier",
    )
    assert applied.status is not None
    assert {"Audited", "Applied"} <= {c.type for c in applied.status.conditions or []}
    assert ("status-applier", "Apply", "status") in [
        (m.manager, m.operation, m.subresource) for m in applied.metadata.managedFields or []
    ]

    main = kube.patch(
        Deployment,
        "statused",
        {"spec": {"replicas": 0, "paused": True}, "status": {"observedGeneration": 99}},
        namespace=ns,
        patch_type=PatchType.MERGE,
    )
    assert main.spec is not None and main.spec.paused is True
    assert main.status is not None and main.status.observedGeneration != 99, "the object ignores status"

    current = kube.get(Deployment.Status, "statused", namespace=ns)
    assert current.status is not None
    current.status.conditions = [c for c in current.status.conditions or [] if c.type != "Audited"]
    current.metadata.resourceVersion = None  # unconditional: the controller may write status meanwhile
    replaced = kube.replace(current, "statused", namespace=ns)
    assert replaced.status is not None
    assert "Audited" not in {c.type for c in replaced.status.conditions or []}


@pytest.mark.timeout(90)
def test_scale_subresource_resizes_the_deployment_and_its_replicaset_follows(
    kube: Client, lab: LiveLab, pod_ns: str
) -> None:
    kube.create(deployment("scaled", replicas=1), namespace=pod_ns)
    available = kube.wait(Deployment, "scaled", namespace=pod_ns, for_conditions=["Available"])
    assert available.status is not None and available.status.availableReplicas == 1

    scale = kube.get(Deployment.Scale, "scaled", namespace=pod_ns)
    assert (scale.kind, scale.apiVersion) == ("Scale", "autoscaling/v1")
    assert scale.metadata.uid == available.metadata.uid
    assert scale.spec.replicas == 1
    assert scale.status is not None and scale.status.selector == "app=scaled"

    scale.spec.replicas = 3
    resized = kube.replace(scale, "scaled", namespace=pod_ns, field_manager="scaler")
    assert resized.spec.replicas == 3
    dep = kube.get(Deployment, "scaled", namespace=pod_ns)
    assert dep.spec is not None and dep.spec.replicas == 3
    entries = [(m.manager, m.operation, m.subresource) for m in dep.metadata.managedFields or []]
    assert ("scaler", "Update", "scale") in entries

    def replicaset_at(count: int) -> ReplicaSet | None:
        [rs] = kube.list(ReplicaSet, namespace=pod_ns, labels={"app": "scaled"})
        ready = rs.status.readyReplicas if rs.status else None
        return rs if rs.spec is not None and rs.spec.replicas == count and ready == count else None

    rs = lab.eventually(lambda: replicaset_at(3), "the ReplicaSet running 3 pods", seconds=60)
    assert [o.name for o in rs.metadata.ownerReferences or []] == ["scaled"]

    patched = kube.patch(
        Deployment.Scale, "scaled", {"spec": {"replicas": 2}}, namespace=pod_ns, patch_type=PatchType.MERGE
    )
    assert patched.spec.replicas == 2
    lab.eventually(lambda: replicaset_at(2), "the ReplicaSet back to 2 pods", seconds=60)

    negative = api_error(
        lambda: kube.patch(
            Deployment.Scale,
            "scaled",
            {"spec": {"replicas": -1}},
            namespace=pod_ns,
            patch_type=PatchType.MERGE,
        )
    )
    assert (negative.status.code, negative.status.reason) == (422, "Invalid")
    assert negative.status.message == (
        'Scale.autoscaling "scaled" is invalid: spec.replicas: Invalid value: -1: '
        "must be greater than or equal to 0"
    )


# -- watch, wait and logs ----------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_watch_from_a_list_version_sees_added_modified_deleted_in_order(kube: Client, ns: str) -> None:
    listed = kube.list(ConfigMap, namespace=ns)
    list(listed)
    start = listed.resourceVersion
    made = kube.create(configmap("watched", v="1"), namespace=ns)
    changed = kube.patch(ConfigMap, "watched", {"data": {"v": "2"}}, namespace=ns, patch_type=PatchType.MERGE)
    kube.delete(ConfigMap, "watched", namespace=ns)

    events: list[tuple[str, dict[str, str] | None, str | None]] = []
    for kind, obj in kube.watch(ConfigMap, namespace=ns, resource_version=start):
        if obj.metadata.name != "watched":
            continue  # the namespace's kube-root-ca.crt, made by its controller
        events.append((kind, obj.data, obj.metadata.resourceVersion))
        if kind == "DELETED":
            break
    assert [(kind, data) for kind, data, _ in events] == [
        ("ADDED", {"v": "1"}),
        ("MODIFIED", {"v": "2"}),
        ("DELETED", {"v": "2"}),
    ]
    versions = [int(rv or 0) for _, _, rv in events]
    assert versions[:2] == [
        int(made.metadata.resourceVersion or 0),
        int(changed.metadata.resourceVersion or 0),
    ]
    assert versions == sorted(versions) and len(set(versions)) == 3


def test_watch_from_a_too_old_version_raises_410_expired(kube: Client, ns: str) -> None:
    error = api_error(lambda: next(iter(kube.watch(ConfigMap, namespace=ns, resource_version="1"))))
    assert (error.status.code, error.status.reason) == (410, "Expired")
    assert error.status.message is not None and error.status.message.startswith(
        "too old resource version: 1 ("
    )


@pytest.mark.timeout(60)
def test_pod_logs_of_a_finished_pod_and_their_errors(kube: Client, pod_ns: str) -> None:
    script = "echo start; echo middle; echo done"
    pod = Pod(
        metadata=ObjectMeta(name="printer"),
        spec=PodSpec(
            restartPolicy="Never",
            containers=[Container(name="main", image="busybox:1.37", command=["sh", "-c", script])],
        ),
    )
    kube.create(pod, namespace=pod_ns)
    for _, seen in kube.watch(Pod, namespace=pod_ns, fields={"metadata.name": "printer"}):
        if seen.status is not None and seen.status.phase in ("Succeeded", "Failed"):
            assert seen.status.phase == "Succeeded"
            break

    assert list(kube.log("printer", namespace=pod_ns)) == ["start\n", "middle\n", "done\n"]
    assert list(kube.log("printer", namespace=pod_ns, tail_lines=1, newlines=False)) == ["done"]
    stamped = list(kube.log("printer", namespace=pod_ns, container="main", timestamps=True))
    assert [line.split(" ", 1)[1] for line in stamped] == ["start\n", "middle\n", "done\n"]
    assert all(line.split(" ", 1)[0].endswith("Z") for line in stamped)

    wrong = api_error(lambda: list(kube.log("printer", namespace=pod_ns, container="nope")))
    assert (wrong.status.code, wrong.status.reason) == (400, "BadRequest")
    assert wrong.status.message == "container nope is not valid for pod printer"
    absent = api_error(lambda: list(kube.log("absent", namespace=pod_ns)))
    assert (absent.status.code, absent.status.message) == (404, 'pods "absent" not found')


# -- custom resources through generic resources -----------------------------------------------------------


@pytest.fixture(scope="module")
def crontab_crd(kube: Client) -> Iterator[CustomResourceDefinition]:
    props = JSONSchemaProps
    spec = props(
        type="object",
        properties={
            "cronSpec": props(type="string"),
            "replicas": props(type="integer", minimum=1, maximum=10, default=1),
        },
    )
    crd = CustomResourceDefinition(
        metadata=ObjectMeta(name=f"crontabs.{CRD_GROUP}"),
        spec=CustomResourceDefinitionSpec(
            group=CRD_GROUP,
            scope="Namespaced",
            names=CustomResourceDefinitionNames(plural="crontabs", singular="crontab", kind="CronTab"),
            versions=[
                CustomResourceDefinitionVersion(
                    name="v1",
                    served=True,
                    storage=True,
                    subresources=CustomResourceSubresources(
                        status={},
                        scale=CustomResourceSubresourceScale(
                            specReplicasPath=".spec.replicas", statusReplicasPath=".status.replicas"
                        ),
                    ),
                    schema=CustomResourceValidation(
                        openAPIV3Schema=props(
                            type="object",
                            properties={
                                "spec": spec,
                                "status": props(
                                    type="object", properties={"replicas": props(type="integer")}
                                ),
                            },
                        )
                    ),
                )
            ],
        ),
    )
    kube.create(crd)
    try:
        yield kube.wait(CustomResourceDefinition, f"crontabs.{CRD_GROUP}", for_conditions=["Established"])
    finally:
        kube.delete(CustomResourceDefinition, f"crontabs.{CRD_GROUP}")


@pytest.mark.timeout(60)
def test_custom_resources_through_generic_resources(
    kube: Client, crontab_crd: CustomResourceDefinition, ns: str
) -> None:
    assert crontab_crd.status is not None and crontab_crd.status.acceptedNames.kind == "CronTab"
    load_in_cluster_generic_resources(kube)
    CronTab = get_generic_resource(f"{CRD_GROUP}/v1", "CronTab")
    assert CronTab is not None
    assert create_namespaced_resource(CRD_GROUP, "v1", "CronTab", "crontabs") is CronTab

    made = kube.create(
        CronTab(metadata=ObjectMeta(name="nightly"), spec={"cronSpec": "0 3 * * *"}), namespace=ns
    )
    assert made.spec == {"cronSpec": "0 3 * * *", "replicas": 1}, "the schema's default is applied"
    assert (made.apiVersion, made.kind) == (f"{CRD_GROUP}/v1", "CronTab")
    assert kube.get(CronTab, "nightly", namespace=ns).metadata.uid == made.metadata.uid

    too_many = api_error(
        lambda: kube.create(CronTab(metadata=ObjectMeta(name="big"), spec={"replicas": 50}), namespace=ns)
    )
    assert (too_many.status.code, too_many.status.reason) == (422, "Invalid")
    assert too_many.status.message == (
        f'CronTab.{CRD_GROUP} "big" is invalid: spec.replicas: Invalid value: 50: '
        "spec.replicas in body should be less than or equal to 10"
    )
    assert (too_many.status.details.group, too_many.status.details.kind) == (CRD_GROUP, "CronTab")

    strategic = api_error(lambda: kube.patch(CronTab, "nightly", {"spec": {"replicas": 2}}, namespace=ns))
    assert (strategic.status.code, strategic.status.reason) == (415, "UnsupportedMediaType")
    assert strategic.status.message == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )

    status = kube.patch(
        CronTab.Status, "nightly", {"status": {"replicas": 4}, "spec": {"replicas": 9}},
        namespace=ns, patch_type=PatchType.MERGE,
    )  # fmt: skip
    assert status["status"] == {"replicas": 4}
    assert status.spec["replicas"] == 1, "the status subresource ignores spec"

    scale = kube.get(CronTab.Scale, "nightly", namespace=ns)
    assert (scale.spec.replicas, scale.status.replicas if scale.status else None) == (1, 4)
    scaled = kube.patch(
        CronTab.Scale, "nightly", {"spec": {"replicas": 3}}, namespace=ns, patch_type=PatchType.MERGE
    )
    assert scaled.spec.replicas == 3
    assert kube.get(CronTab, "nightly", namespace=ns).spec["replicas"] == 3

    applied = kube.apply(
        CronTab(metadata=ObjectMeta(name="hourly", namespace=ns), spec={"cronSpec": "0 * * * *"}),
        field_manager="lk-apply",
    )
    assert applied.spec == {"cronSpec": "0 * * * *", "replicas": 1}
    assert sorted(str(c.metadata.name) for c in kube.list(CronTab, namespace=ns)) == [
        "hourly",
        "nightly",
    ]

    kube.delete(CronTab, "hourly", namespace=ns)
    gone = api_error(lambda: kube.get(CronTab, "hourly", namespace=ns))
    assert gone.status.message == f'crontabs.{CRD_GROUP} "hourly" not found'
    assert (gone.status.details.group, gone.status.details.kind) == (CRD_GROUP, "crontabs")


# -- AsyncClient -------------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
async def test_async_apply_then_watch_sees_each_change_in_order(akube: AsyncClient, ns: str) -> None:
    listed = akube.list(ConfigMap, namespace=ns)
    assert "async-applied" not in [c.metadata.name async for c in listed]
    start = listed.resourceVersion
    await akube.apply(configmap("async-applied", namespace=ns, a="1"), field_manager="async")
    second = await akube.apply(configmap("async-applied", namespace=ns, a="2"), field_manager="async")
    assert second.data == {"a": "2"}
    await akube.delete(ConfigMap, "async-applied", namespace=ns)

    events: list[tuple[str, dict[str, str] | None]] = []
    async for kind, obj in akube.watch(
        ConfigMap, namespace=ns, resource_version=start, fields={"metadata.name": "async-applied"}
    ):
        events.append((kind, obj.data))
        if kind == "DELETED":
            break
    assert events == [("ADDED", {"a": "1"}), ("MODIFIED", {"a": "2"}), ("DELETED", {"a": "2"})]


@pytest.mark.timeout(60)
async def test_async_client_waits_for_a_deployment_and_reports_errors(
    akube: AsyncClient, pod_ns: str
) -> None:
    await akube.create(deployment("async-web", replicas=1, namespace=pod_ns))
    ready = await akube.wait(Deployment, "async-web", namespace=pod_ns, for_conditions=["Available"])
    assert ready.status is not None
    available = [c for c in ready.status.conditions or [] if c.type == "Available"]
    assert [(c.status, c.reason) for c in available] == [("True", "MinimumReplicasAvailable")]

    with pytest.raises(ApiError) as caught:
        await akube.create(deployment("async-web", replicas=1, namespace=pod_ns))
    assert (caught.value.status.code, caught.value.status.reason) == (409, "AlreadyExists")
    assert caught.value.status.message == 'deployments.apps "async-web" already exists'
    assert caught.value.status.details.group == "apps"

    await akube.delete(Deployment, "async-web", namespace=pod_ns)
    with pytest.raises(ApiError) as missing:
        await akube.get(Deployment, "async-web", namespace=pod_ns)
    assert missing.value.status.message == 'deployments.apps "async-web" not found'
