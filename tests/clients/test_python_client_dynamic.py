"""The official ``kubernetes`` Python client against a live lab, beyond ``test_python_client.py``: its
discovery-driven ``DynamicClient`` (built-in kinds, a CRD's objects and subresources, every patch type,
server-side apply, deletes with preconditions and propagation, paging, exact-revision lists, watches
with bookmarks) and typed APIs (Table output, dry runs, Jobs, pod logs, scale, TokenRequest and
TokenReview, access reviews). Upstream Kubernetes 1.37 is the reference for every expectation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, config, dynamic, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import ConflictError, NotFoundError, ResourceNotFoundError

from tests.controlplane.components.controllers.workloads import deployment_manifest
from tests.support.lab import LiveLab

NAMESPACE = "py-dynamic"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
ALL_VERBS = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
GROUP = "lab.example.com"
CRD_NAME = f"widgets.{GROUP}"
#: The audience kube-apiserver's tokens get by default (``--api-audiences`` = the issuer, kubeadm's).
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"


def wait_for(
    list_call: Callable[..., Any],
    *args: Any,
    done: Callable[[dict[str, Any]], bool],
    what: str,
    **kwargs: Any,
) -> dict[str, Any]:
    """Watch (from no resourceVersion, so what exists already arrives first) until ``done`` holds."""
    w = watch.Watch()
    try:
        for event in w.stream(list_call, *args, timeout_seconds=60, **kwargs):
            if event["type"] in ("ADDED", "MODIFIED") and done(event["raw_object"]):
                return dict(event["raw_object"])
    finally:
        w.stop()
    raise AssertionError(f"the watch ended before {what}")


def wait_deleted(list_call: Callable[..., Any], namespace: str, name: str, resource_version: str) -> None:
    """Watch one object from ``resource_version`` until its DELETED event."""
    w = watch.Watch()
    try:
        for event in w.stream(
            list_call,
            namespace,
            field_selector=f"metadata.name={name}",
            resource_version=resource_version,
            timeout_seconds=60,
        ):
            if event["type"] == "DELETED":
                return
    finally:
        w.stop()
    raise AssertionError(f"{name} was never deleted")


def status_of(error: ApiException) -> dict[str, Any]:
    """The Status object an API error carries."""
    body: dict[str, Any] = json.loads(str(error.body))
    return body


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels), data=data)


@pytest.fixture(scope="module")
def api(lab: LiveLab) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(lab.kubeconfig))
    try:
        yield api_client
    finally:
        api_client.close()


@pytest.fixture(scope="module")
def dyn(api: client.ApiClient, tmp_path_factory: pytest.TempPathFactory) -> dynamic.DynamicClient:
    """A DynamicClient whose discovery cache is this module's own (not a file in /tmp shared by runs)."""
    cache = tmp_path_factory.mktemp("discovery") / "cache.json"
    return dynamic.DynamicClient(api, cache_file=str(cache))


@pytest.fixture(scope="module")
def ns(api: client.ApiClient) -> Iterator[str]:
    """This module's namespace, once its ``default`` ServiceAccount exists (pods need it)."""
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
    wait_for(
        core.list_namespaced_service_account,
        NAMESPACE,
        field_selector="metadata.name=default",
        done=lambda _: True,
        what="the default ServiceAccount",
    )
    yield NAMESPACE
    core.delete_namespace(NAMESPACE)


# -- discovery -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api_version", "kind", "plural", "namespaced", "subresources", "short_names"),
    [
        ("v1", "Pod", "pods", True, {"status", "binding", "log", "eviction"}, ["po"]),
        ("apps/v1", "Deployment", "deployments", True, {"status", "scale"}, ["deploy"]),
        ("rbac.authorization.k8s.io/v1", "Role", "roles", True, set(), None),
        ("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False, set(), None),
        ("batch/v1", "Job", "jobs", True, {"status"}, None),
        ("coordination.k8s.io/v1", "Lease", "leases", True, set(), None),
        ("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", True, set(), ["netpol"]),
        ("networking.k8s.io/v1", "Ingress", "ingresses", True, {"status"}, ["ing"]),
    ],
)
def test_dynamic_client_resolves_builtin_kinds_through_discovery(
    dyn: dynamic.DynamicClient,
    api_version: str,
    kind: str,
    plural: str,
    namespaced: bool,
    subresources: set[str],
    short_names: list[str] | None,
) -> None:
    resource = dyn.resources.get(api_version=api_version, kind=kind)
    assert (resource.name, resource.namespaced, resource.short_names) == (plural, namespaced, short_names)
    assert set(resource.verbs) == ALL_VERBS
    assert set(resource.subresources) == subresources
    assert resource.group_version == api_version


def test_dynamic_client_subresources_carry_their_own_kind_and_an_unknown_kind_is_not_found(
    dyn: dynamic.DynamicClient,
) -> None:
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    scale = deployments.subresources["scale"]
    assert (scale.kind, sorted(scale.verbs)) == ("Scale", ["get", "patch", "update"])
    eviction = dyn.resources.get(api_version="v1", kind="Pod").subresources["eviction"]
    assert (eviction.kind, eviction.verbs) == ("Eviction", ["create"])
    with pytest.raises(ResourceNotFoundError):
        dyn.resources.get(api_version="v1", kind="NoSuchKind")
    assert dyn.version["kubernetes"]["minor"] == "37"


def test_typed_discovery_lists_groups_and_the_resources_of_each_group_version(api: client.ApiClient) -> None:
    groups = {g.name: g for g in client.ApisApi(api).get_api_versions().groups}
    for name in ("apps", "batch", "rbac.authorization.k8s.io", "coordination.k8s.io", "networking.k8s.io"):
        assert groups[name].preferred_version.group_version == f"{name}/v1"
    assert groups["autoscaling"].preferred_version.group_version == "autoscaling/v2"
    assert [v.version for v in groups["autoscaling"].versions] == ["v2", "v1"]
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]

    apps = client.AppsV1Api(api).get_api_resources()
    assert apps.group_version == "apps/v1"
    by_name = {r.name: r for r in apps.resources}
    assert by_name["deployments"].categories == ["all"]
    scale = by_name["deployments/scale"]
    assert (scale.group, scale.version, scale.kind) == ("autoscaling", "v1", "Scale")
    rbac = {r.name: r for r in client.RbacAuthorizationV1Api(api).get_api_resources().resources}
    assert (rbac["clusterroles"].namespaced, rbac["roles"].namespaced) == (False, True)
    leases = {r.name: r for r in client.CoordinationV1Api(api).get_api_resources().resources}["leases"]
    assert (leases.kind, leases.singular_name) == ("Lease", "lease")
    batch = {r.name for r in client.BatchV1Api(api).get_api_resources().resources}
    assert {"jobs", "jobs/status", "cronjobs", "cronjobs/status"} <= batch
    networking = {r.name for r in client.NetworkingV1Api(api).get_api_resources().resources}
    assert {"networkpolicies", "ingresses", "ingresses/status", "ingressclasses"} <= networking
    core = {r.name: r for r in client.CoreV1Api(api).get_api_resources().resources}
    assert core["serviceaccounts/token"].kind == "TokenRequest"
    assert (core["pods/eviction"].group, core["pods/eviction"].version) == ("policy", "v1")


# -- a CRD, through the dynamic client and CustomObjectsApi ---------------------------------------


@pytest.fixture(scope="module")
def widgets(api: client.ApiClient, dyn: dynamic.DynamicClient) -> Iterator[Any]:
    """A namespaced CRD with the status and scale subresources, served (``Established``)."""
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"replicas": {"type": "integer"}, "color": {"type": "string"}},
            },
            "status": {
                "type": "object",
                "properties": {"replicas": {"type": "integer"}, "selector": {"type": "string"}},
            },
        },
    }
    dyn.create(
        crds,
        body={
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": CRD_NAME},
            "spec": {
                "group": GROUP,
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": schema},
                        "subresources": {
                            "status": {},
                            "scale": {
                                "specReplicasPath": ".spec.replicas",
                                "statusReplicasPath": ".status.replicas",
                                "labelSelectorPath": ".status.selector",
                            },
                        },
                    }
                ],
            },
        },
    )
    wait_for(
        client.ApiextensionsV1Api(api).list_custom_resource_definition,
        field_selector=f"metadata.name={CRD_NAME}",
        done=lambda crd: any(
            c["type"] == "Established" and c["status"] == "True"
            for c in crd.get("status", {}).get("conditions", [])
        ),
        what="the CRD to be established",
    )
    # The discoverer looks the new group up again when it misses it (``LazyDiscoverer``).
    yield dyn.resources.get(api_version=f"{GROUP}/v1", kind="Widget")
    dyn.delete(crds, name=CRD_NAME)


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def test_a_crd_is_discovered_and_its_objects_are_shared_with_custom_objects_api(
    api: client.ApiClient, dyn: dynamic.DynamicClient, widgets: Any, ns: str
) -> None:
    assert (widgets.name, widgets.namespaced, widgets.short_names) == ("widgets", True, ["wd"])
    assert set(widgets.subresources) == {"status", "scale"}
    made = dyn.create(widgets, namespace=ns, body=widget("shared", replicas=1, color="red"))
    assert made.metadata.generation == 1

    custom: Any = client.CustomObjectsApi(api)  # its answers are plain dicts, typed ``object``
    read = custom.get_namespaced_custom_object(GROUP, "v1", ns, "widgets", "shared")
    assert read["metadata"]["uid"] == made.metadata.uid
    assert read["spec"] == {"replicas": 1, "color": "red"}
    listed = custom.list_cluster_custom_object(GROUP, "v1", "widgets")
    assert listed["kind"] == "WidgetList"
    assert (ns, "shared") in [(w["metadata"]["namespace"], w["metadata"]["name"]) for w in listed["items"]]

    with pytest.raises(ApiException) as caught:
        custom.create_namespaced_custom_object(GROUP, "v1", ns, "widgets", widget("bad", replicas="many"))
    assert caught.value.status == 422
    status = status_of(caught.value)
    assert (status["reason"], status["details"]["kind"], status["details"]["group"]) == (
        "Invalid",
        "Widget",
        GROUP,
    )
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.replicas"]


def test_the_status_subresource_splits_spec_writes_from_status_writes(
    api: client.ApiClient, dyn: dynamic.DynamicClient, widgets: Any, ns: str
) -> None:
    dyn.create(widgets, namespace=ns, body=widget("split", replicas=1, color="red"))
    custom: Any = client.CustomObjectsApi(api)  # its answers are plain dicts, typed ``object``
    # A status write changes the status only: the spec in the same body is ignored.
    after_status = custom.patch_namespaced_custom_object_status(
        GROUP, "v1", ns, "widgets", "split", {"spec": {"color": "blue"}, "status": {"replicas": 1}}
    )
    assert after_status["spec"]["color"] == "red"
    assert after_status["status"] == {"replicas": 1}
    assert after_status["metadata"]["generation"] == 1, "a status change does not bump the generation"
    # A write to the object ignores its status, and a spec change bumps the generation.
    after_spec = dyn.patch(
        widgets,
        name="split",
        namespace=ns,
        body={"spec": {"color": "green"}, "status": {"replicas": 9}},
        content_type="application/merge-patch+json",
    )
    assert after_spec.spec.color == "green"
    assert after_spec.status.replicas == 1
    assert after_spec.metadata.generation == 2
    via_dynamic = widgets.subresources["status"].get(name="split", namespace=ns)
    assert via_dynamic.status.replicas == 1


def test_the_scale_subresource_reads_and_writes_the_crds_declared_paths(
    api: client.ApiClient, dyn: dynamic.DynamicClient, widgets: Any, ns: str
) -> None:
    dyn.create(widgets, namespace=ns, body=widget("scaled", replicas=2))
    custom: Any = client.CustomObjectsApi(api)  # its answers are plain dicts, typed ``object``
    custom.patch_namespaced_custom_object_status(
        GROUP, "v1", ns, "widgets", "scaled", {"status": {"replicas": 2, "selector": "app=scaled"}}
    )
    scale = custom.get_namespaced_custom_object_scale(GROUP, "v1", ns, "widgets", "scaled")
    assert (scale["apiVersion"], scale["kind"]) == ("autoscaling/v1", "Scale")
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 2, "selector": "app=scaled"}

    patched = custom.patch_namespaced_custom_object_scale(
        GROUP, "v1", ns, "widgets", "scaled", {"spec": {"replicas": 5}}
    )
    assert patched["spec"] == {"replicas": 5}
    assert dyn.get(widgets, name="scaled", namespace=ns).spec.replicas == 5
    scale = widgets.subresources["scale"].get(name="scaled", namespace=ns)
    replaced = custom.replace_namespaced_custom_object_scale(
        GROUP, "v1", ns, "widgets", "scaled", {**scale.to_dict(), "spec": {"replicas": 1}}
    )
    assert replaced["spec"] == {"replicas": 1}
    assert custom.get_namespaced_custom_object(GROUP, "v1", ns, "widgets", "scaled")["spec"]["replicas"] == 1


# -- writes: patches, server-side apply, deletes -------------------------------------------------


def test_dynamic_patch_applies_strategic_merge_and_json_patches_each_by_its_own_rules(
    dyn: dynamic.DynamicClient, ns: str
) -> None:
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    dyn.create(deployments, namespace=ns, body=deployment_manifest("patched", 0))

    def containers(obj: Any) -> list[str]:
        return [c.name for c in obj.spec.template.spec.containers]

    # The dynamic client's default is a strategic merge patch: containers merge by name, and a new
    # one goes before the live ones (strategicpatch ``mergeSortedSlice``: patch items come first).
    sidecar = {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox"}]}}}}
    assert containers(dyn.patch(deployments, name="patched", namespace=ns, body=sidecar)) == [
        "sidecar",
        "web",
    ]
    # A JSON merge patch replaces the list.
    only = {"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "nginx"}]}}}}
    merged = dyn.patch(
        deployments, name="patched", namespace=ns, body=only, content_type="application/merge-patch+json"
    )
    assert containers(merged) == ["only"]
    # A JSON patch is a list of operations, applied in order.
    operations = [
        {"op": "add", "path": "/metadata/labels", "value": {"tier": "web"}},
        {"op": "replace", "path": "/spec/replicas", "value": 0},
        {"op": "add", "path": "/spec/template/spec/containers/0/args", "value": ["--quiet"]},
    ]
    jsoned = dyn.patch(
        deployments, name="patched", namespace=ns, body=operations, content_type="application/json-patch+json"
    )
    assert jsoned.metadata.labels.to_dict() == {"tier": "web"}
    assert jsoned.spec.template.spec.containers[0].args == ["--quiet"]
    assert jsoned.metadata.generation == 4, "three template changes after the first"


def test_server_side_apply_records_managers_refuses_conflicts_and_forces_them(
    dyn: dynamic.DynamicClient, ns: str
) -> None:
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")

    def applied(manager: str, force: bool | None = None, **data: str) -> Any:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": data}
        return dyn.server_side_apply(
            configmaps, body=body, namespace=ns, field_manager=manager, force_conflicts=force
        )

    first = applied("py-first", owner="first", shared="1")
    [entry] = first.metadata.managedFields
    assert (entry.manager, entry.operation, entry.apiVersion) == ("py-first", "Apply", "v1")
    assert entry.fieldsV1.to_dict() == {"f:data": {"f:owner": {}, "f:shared": {}}}

    with pytest.raises(ConflictError) as caught:
        applied("py-second", shared="2")
    status = status_of(caught.value)
    assert status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "py-first": .data.shared'
    assert status["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "py-first"', "field": ".data.shared"}
    ]

    forced = applied("py-second", force=True, shared="2")
    assert forced.data.shared == "2"
    owners = {m.manager: m.fieldsV1.to_dict() for m in forced.metadata.managedFields}
    assert owners == {"py-first": {"f:data": {"f:owner": {}}}, "py-second": {"f:data": {"f:shared": {}}}}

    # The same content type through ``patch``, with a YAML body; without a manager it is refused.
    yaml_body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  extra: yaml\n"
    with_yaml = dyn.patch(
        configmaps,
        name="applied",
        namespace=ns,
        body=yaml_body,
        content_type="application/apply-patch+yaml",
        field_manager="py-yaml",
    )
    assert with_yaml.data.extra == "yaml" and with_yaml.data.owner == "first"
    with pytest.raises(ApiException) as refused:
        dyn.patch(
            configmaps,
            name="applied",
            namespace=ns,
            body=yaml_body,
            content_type="application/apply-patch+yaml",
        )
    assert refused.value.status == 422
    assert status_of(refused.value)["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )


def test_delete_with_a_uid_precondition_refuses_another_uid_and_deletes_on_the_right_one(
    dyn: dynamic.DynamicClient, ns: str
) -> None:
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    made = dyn.create(configmaps, namespace=ns, body={"metadata": {"name": "guarded"}, "data": {"k": "v"}})
    wrong = "00000000-0000-0000-0000-000000000000"
    with pytest.raises(ConflictError) as caught:
        dyn.delete(configmaps, name="guarded", namespace=ns, body={"preconditions": {"uid": wrong}})
    status = status_of(caught.value)
    assert (status["code"], status["reason"], status["details"]) == (
        409,
        "Conflict",
        {"name": "guarded", "kind": "ConfigMap"},
    )
    assert status["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "guarded": the UID in the precondition ({wrong}) '
        f"does not match the UID in record ({made.metadata.uid}). "
        "The object might have been deleted and then recreated"
    )
    assert dyn.get(configmaps, name="guarded", namespace=ns).metadata.uid == made.metadata.uid

    # Deleted at once: a Status saying so (store.go finalizeDelete), not the object.
    gone = dyn.delete(
        configmaps, name="guarded", namespace=ns, body={"preconditions": {"uid": made.metadata.uid}}
    )
    assert (gone.kind, gone.status, gone.details.kind, gone.details.uid) == (
        "Status",
        "Success",
        "configmaps",
        made.metadata.uid,
    )
    with pytest.raises(NotFoundError):
        dyn.get(configmaps, name="guarded", namespace=ns)


@pytest.mark.parametrize("policy", ["Foreground", "Orphan"])
def test_delete_with_a_propagation_policy_decides_what_happens_to_the_replicaset(
    api: client.ApiClient, dyn: dynamic.DynamicClient, ns: str, policy: str
) -> None:
    name = f"prop-{policy.lower()}"
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    replicasets = dyn.resources.get(api_version="apps/v1", kind="ReplicaSet")
    dyn.create(deployments, namespace=ns, body=deployment_manifest(name, 0))
    owned = next(iter(dyn.watch(replicasets, namespace=ns, label_selector=f"app={name}", timeout=60)))
    assert owned["type"] == "ADDED"
    # The typed V1ReplicaSetStatus requires replicas, which has no omitempty: 0 is written.
    [typed] = client.AppsV1Api(api).list_namespaced_replica_set(ns, label_selector=f"app={name}").items
    assert typed.status.replicas == 0

    marked = dyn.delete(deployments, name=name, namespace=ns, propagation_policy=policy)
    finalizer = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}[policy]
    assert marked.metadata.finalizers == [finalizer]
    assert marked.metadata.deletionTimestamp
    wait_deleted(client.AppsV1Api(api).list_namespaced_deployment, ns, name, marked.metadata.resourceVersion)

    left = dyn.get(replicasets, namespace=ns, label_selector=f"app={name}").items
    if policy == "Foreground":
        assert left == [], "the garbage collector deletes the dependents before the owner"
    else:
        assert [rs.metadata.name for rs in left] == [owned["object"].metadata.name]
        assert left[0].metadata.ownerReferences is None, "the orphan's owner reference is removed"


def test_delete_collection_with_a_label_selector_deletes_only_the_matching_objects(
    api: client.ApiClient, ns: str
) -> None:
    core = client.CoreV1Api(api)
    for i in range(3):
        core.create_namespaced_config_map(ns, configmap(f"sweep-{i}", labels={"sweep": "yes"}))
    core.create_namespaced_config_map(ns, configmap("sweep-kept", labels={"sweep": "no"}))
    raw: Any = core.delete_collection_namespaced_config_map(
        ns, label_selector="sweep=yes", _preload_content=False
    )
    deleted = json.loads(raw.data)
    assert deleted["kind"] == "ConfigMapList"
    assert sorted(item["metadata"]["name"] for item in deleted["items"]) == ["sweep-0", "sweep-1", "sweep-2"]
    left = core.list_namespaced_config_map(ns, label_selector="sweep").items
    assert [c.metadata.name for c in left] == ["sweep-kept"]


def test_dry_run_all_answers_as_the_write_would_and_persists_nothing(api: client.ApiClient, ns: str) -> None:
    core = client.CoreV1Api(api)
    dry = core.create_namespaced_config_map(ns, configmap("dry", k="v"), dry_run="All")
    assert dry.metadata.uid and dry.metadata.creation_timestamp
    assert dry.metadata.resource_version is None
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_config_map("dry", ns)
    assert caught.value.status == 404

    real = core.create_namespaced_config_map(ns, configmap("wet", k="v"))
    patched = core.patch_namespaced_config_map("wet", ns, {"data": {"k": "dry"}}, dry_run="All")
    assert patched.data == {"k": "dry"}
    core.delete_namespaced_config_map("wet", ns, dry_run="All")
    kept = core.read_namespaced_config_map("wet", ns)
    assert (kept.data, kept.metadata.resource_version) == ({"k": "v"}, real.metadata.resource_version)


# -- reads: pages, exact revisions, selectors, tables, watches -----------------------------------


def test_dynamic_pages_share_one_snapshot_and_count_what_remains_when_unfiltered(
    dyn: dynamic.DynamicClient, ns: str
) -> None:
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    for i in range(5):
        dyn.create(
            configmaps, namespace=ns, body={"metadata": {"name": f"page-{i}", "labels": {"paged": "y"}}}
        )
    first = dyn.get(configmaps, namespace=ns, label_selector="paged", limit=2)
    assert [c.metadata.name for c in first.items] == ["page-0", "page-1"]
    assert first.metadata.remainingItemCount is None, "a filtered list does not count what remains"
    # Created after the first page: the later pages come from the first page's revision.
    dyn.create(configmaps, namespace=ns, body={"metadata": {"name": "page-9", "labels": {"paged": "y"}}})
    names: list[str] = []
    token = first.metadata["continue"]
    while token:
        page = dyn.get(configmaps, namespace=ns, label_selector="paged", limit=2, _continue=token)
        assert page.metadata.resourceVersion == first.metadata.resourceVersion
        names += [c.metadata.name for c in page.items]
        token = page.metadata["continue"]
    assert names == ["page-2", "page-3", "page-4"]
    everything = len(dyn.get(configmaps, namespace=ns).items)
    unfiltered = dyn.get(configmaps, namespace=ns, limit=1)
    assert unfiltered.metadata.remainingItemCount == everything - 1


def test_a_list_at_an_exact_resource_version_returns_the_objects_as_they_were(
    api: client.ApiClient, ns: str
) -> None:
    core = client.CoreV1Api(api)
    then = core.create_namespaced_config_map(ns, configmap("exact", k="then")).metadata.resource_version
    core.patch_namespaced_config_map("exact", ns, {"data": {"k": "now"}})
    selector = "metadata.name=exact"
    past = core.list_namespaced_config_map(
        ns, field_selector=selector, resource_version=then, resource_version_match="Exact"
    )
    assert past.metadata.resource_version == then
    assert [c.data for c in past.items] == [{"k": "then"}]
    recent = core.list_namespaced_config_map(
        ns, field_selector=selector, resource_version=then, resource_version_match="NotOlderThan"
    )
    assert [c.data for c in recent.items] == [{"k": "now"}]

    with pytest.raises(ApiException) as caught:
        core.list_namespaced_config_map(ns, resource_version_match="NotOlderThan")
    assert caught.value.status == 422
    assert status_of(caught.value)["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
        "resourceVersionMatch is forbidden unless resourceVersion is provided"
    )
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_config_map(ns, resource_version="0", resource_version_match="Exact")
    assert status_of(caught.value)["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
        'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
    )


def test_field_selectors_filter_and_an_unsupported_field_is_a_400_in_upstreams_words(
    api: client.ApiClient, ns: str
) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(ns, configmap("selected"))
    named = core.list_namespaced_config_map(ns, field_selector="metadata.name=selected").items
    assert [c.metadata.name for c in named] == ["selected"]
    not_named = core.list_namespaced_config_map(ns, field_selector="metadata.name!=selected").items
    assert "selected" not in [c.metadata.name for c in not_named]

    # ConfigMaps have no conversion function of their own: apimachinery's default answers.
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_config_map(ns, field_selector="data.k=v")
    assert caught.value.status == 400
    status = status_of(caught.value)
    assert (status["reason"], status["message"]) == (
        "BadRequest",
        '"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"',
    )
    # Pods have one (pkg/apis/core/v1/conversion.go), worded its own way.
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_pod(ns, field_selector="spec.nodeName=n,spec.foo=x")
    assert status_of(caught.value)["message"] == "field label not supported: spec.foo"


def test_a_list_comes_back_as_a_table_with_the_printers_columns(
    api: client.ApiClient, dyn: dynamic.DynamicClient, ns: str
) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(ns, configmap("tabled", a="1", b="2"))
    raw: Any = core.list_namespaced_config_map(
        ns, field_selector="metadata.name=tabled", _preload_content=False, _headers={"Accept": TABLE}
    )
    table = json.loads(raw.data)
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert table["metadata"]["resourceVersion"]
    columns = [(c["name"], c["type"], c["format"], c["priority"]) for c in table["columnDefinitions"]]
    assert columns == [("Name", "string", "name", 0), ("Data", "string", "", 0), ("Age", "string", "", 0)]
    [row] = table["rows"]
    assert row["cells"][:2] == ["tabled", 2]
    assert re.fullmatch(r"\d+s", row["cells"][2])
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"] == "tabled" and "data" not in row["object"]

    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    full = dyn.get(
        configmaps,
        name="tabled",
        namespace=ns,
        header_params={"Accept": TABLE},
        query_params=[("includeObject", "Object")],
    )
    assert full.kind == "Table"
    assert (full.rows[0].object.kind, full.rows[0].object.data.b) == ("ConfigMap", "2")


def test_watch_from_a_resource_version_delivers_the_change_and_bookmarks(
    api: client.ApiClient, ns: str
) -> None:
    core = client.CoreV1Api(api)
    start = str(core.list_namespaced_config_map(ns).metadata.resource_version)
    made = core.create_namespaced_config_map(ns, configmap("watched")).metadata.resource_version
    w = watch.Watch()
    events: list[tuple[str, dict[str, Any]]] = []
    # The stream ends at its timeout; with bookmarks allowed the API server sends one before it does.
    for event in w.stream(
        core.list_namespaced_config_map,
        ns,
        resource_version=start,
        allow_watch_bookmarks=True,
        timeout_seconds=3,
    ):
        events.append((event["type"], event["raw_object"]))
    added = [
        (obj["metadata"]["name"], obj["metadata"]["resourceVersion"])
        for kind, obj in events
        if kind == "ADDED"
    ]
    assert added == [("watched", made)], "nothing from before the resourceVersion, the new object once"
    bookmarks = [obj for kind, obj in events if kind == "BOOKMARK"]
    assert bookmarks, "allowWatchBookmarks: a bookmark before the timeout"
    last = bookmarks[-1]
    assert (last["kind"], last["apiVersion"], list(last["metadata"])) == (
        "ConfigMap",
        "v1",
        ["resourceVersion"],
    )
    assert int(last["metadata"]["resourceVersion"]) >= int(start)
    assert w.resource_version == last["metadata"]["resourceVersion"], "the client resumes from the bookmark"


def test_a_watch_with_initial_events_ends_them_with_an_annotated_bookmark(
    dyn: dynamic.DynamicClient, ns: str
) -> None:
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    dyn.create(configmaps, namespace=ns, body={"metadata": {"name": "initial", "labels": {"initial": "y"}}})
    seen: list[tuple[str, Any]] = []
    for event in dyn.watch(
        configmaps,
        namespace=ns,
        label_selector="initial=y",
        send_initial_events=True,
        resource_version_match="NotOlderThan",
        allow_watch_bookmarks=True,
        timeout=10,
    ):
        seen.append((event["type"], event["raw_object"]))
        if event["type"] == "BOOKMARK":
            break
    assert [(kind, obj["metadata"].get("name")) for kind, obj in seen] == [
        ("ADDED", "initial"),
        ("BOOKMARK", None),
    ]
    assert seen[-1][1]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


# -- workloads: scale, Jobs, logs -------------------------------------------------------------------


def test_deployment_scale_and_status_through_apps_v1(api: client.ApiClient, ns: str, lab: LiveLab) -> None:
    apps = client.AppsV1Api(api)
    body = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="scaled"),
        spec=client.V1DeploymentSpec(
            replicas=1,
            selector=client.V1LabelSelector(match_labels={"app": "scaled"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "scaled"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="app", image="nginx")]),
            ),
        ),
    )
    apps.create_namespaced_deployment(ns, body)
    scale = apps.patch_namespaced_deployment_scale("scaled", ns, {"spec": {"replicas": 2}})
    assert (scale.kind, scale.spec.replicas, scale.metadata.name) == ("Scale", 2, "scaled")

    def ready() -> client.V1Deployment | None:
        deployed = apps.read_namespaced_deployment_status("scaled", ns)
        status = deployed.status
        return deployed if status.ready_replicas == 2 and status.updated_replicas == 2 else None

    deployed = lab.eventually(ready, "two ready replicas")
    assert deployed.status.observed_generation == deployed.metadata.generation
    conditions = {c.type: (c.status, c.reason) for c in deployed.status.conditions}
    assert conditions["Available"] == ("True", "MinimumReplicasAvailable")
    assert conditions["Progressing"] == ("True", "NewReplicaSetAvailable")
    read = apps.read_namespaced_deployment_scale("scaled", ns)
    assert (read.spec.replicas, read.status.replicas, read.status.selector) == (2, 2, "app=scaled")


@pytest.fixture(scope="module")
def finished_job(api: client.ApiClient, ns: str) -> dict[str, Any]:
    """A Job whose one pod prints three lines, run to completion; its final state."""
    batch = client.BatchV1Api(api)
    container = client.V1Container(
        name="c", image="busybox", command=["sh", "-c", "echo one; echo two; echo three"]
    )
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name="counted"),
        spec=client.V1JobSpec(
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(restart_policy="Never", containers=[container])
            )
        ),
    )
    batch.create_namespaced_job(ns, job)
    return wait_for(
        batch.list_namespaced_job,
        ns,
        field_selector="metadata.name=counted",
        done=lambda j: any(c["type"] == "Complete" for c in j.get("status", {}).get("conditions", [])),
        what="the Job to complete",
    )


def test_a_job_runs_to_completion_with_upstreams_conditions(finished_job: dict[str, Any]) -> None:
    status = finished_job["status"]
    assert status["succeeded"] == 1 and "failed" not in status
    conditions = {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}
    reached = ("True", "CompletionsReached", "Reached expected number of succeeded pods")
    assert conditions == {"SuccessCriteriaMet": reached, "Complete": reached}
    assert status["completionTime"] >= status["startTime"]
    labels = finished_job["spec"]["template"]["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-name"] == "counted"


def test_pod_logs_plain_tailed_timestamped_and_limited(
    api: client.ApiClient, ns: str, finished_job: dict[str, Any]
) -> None:
    core = client.CoreV1Api(api)
    [pod] = core.list_namespaced_pod(ns, label_selector="batch.kubernetes.io/job-name=counted").items
    name = str(pod.metadata.name)
    assert pod.status.phase == "Succeeded"
    assert core.read_namespaced_pod_log(name, ns) == "one\ntwo\nthree\n"
    assert core.read_namespaced_pod_log(name, ns, tail_lines=1) == "three\n"
    assert core.read_namespaced_pod_log(name, ns, limit_bytes=5) == "one\nt"
    stamped = core.read_namespaced_pod_log(name, ns, timestamps=True).splitlines()
    assert [line.split(" ", 1)[1] for line in stamped] == ["one", "two", "three"]
    assert all(
        re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", line.split(" ")[0]) for line in stamped
    )
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod_log(name, ns, container="nope")
    assert caught.value.status == 400
    assert status_of(caught.value)["message"] == f"container nope is not valid for pod {name}"


# -- identities: TokenRequest, TokenReview, access reviews -----------------------------------------


def as_token(api: client.ApiClient, token: str) -> client.ApiClient:
    """A client of the same server that authenticates with ``token``."""
    configuration = client.Configuration(
        host=api.configuration.host, api_key={"BearerToken": f"Bearer {token}"}
    )
    configuration.ssl_ca_cert = api.configuration.ssl_ca_cert
    return client.ApiClient(configuration)


def test_a_requested_token_is_reviewed_as_its_service_account(api: client.ApiClient, ns: str) -> None:
    core, authn = client.CoreV1Api(api), client.AuthenticationV1Api(api)
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)
    )
    issued = core.create_namespaced_service_account_token("default", ns, request)
    assert (issued.kind, issued.spec.audiences, issued.spec.expiration_seconds) == (
        "TokenRequest",
        [API_AUDIENCE],
        600,
    )
    token = str(issued.status.token)
    assert token.count(".") == 2, "a JWT"

    review = authn.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token)))
    assert review.status.authenticated is True
    user = review.status.user
    assert user.username == f"system:serviceaccount:{ns}:default"
    assert user.uid == core.read_namespaced_service_account("default", ns).metadata.uid
    assert user.groups == ["system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"]
    assert review.status.audiences == [API_AUDIENCE]

    elsewhere = authn.create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token, audiences=["other"]))
    )
    assert elsewhere.status.authenticated is False
    assert (
        elsewhere.status.error
        == f'token audiences ["{API_AUDIENCE}"] is invalid for the target audiences ["other"]'
    )

    with pytest.raises(ApiException) as caught:
        core.create_namespaced_service_account_token(
            "default",
            ns,
            client.AuthenticationV1TokenRequest(
                spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=60)
            ),
        )
    assert caught.value.status == 422
    assert status_of(caught.value)["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 60: may not specify a duration less than 10 minutes",
            "field": "spec.expirationSeconds",
        }
    ]


def test_self_subject_access_reviews_follow_the_service_accounts_bindings(
    api: client.ApiClient, ns: str, lab: LiveLab
) -> None:
    core = client.CoreV1Api(api)
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
    token = str(core.create_namespaced_service_account_token("default", ns, request).status.token)
    account = as_token(api, token)
    try:
        authz = client.AuthorizationV1Api(account)

        def review(verb: str, resource: str) -> Any:
            attributes = client.V1ResourceAttributes(verb=verb, resource=resource, namespace=ns)
            spec = client.V1SelfSubjectAccessReviewSpec(resource_attributes=attributes)
            return authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(spec=spec)).status

        denied = review("get", "configmaps")
        assert (denied.allowed, denied.denied, denied.reason) == (False, None, None)
        who = client.AuthenticationV1Api(account).create_self_subject_review(client.V1SelfSubjectReview())
        assert who.status.user_info.username == f"system:serviceaccount:{ns}:default"

        client.RbacAuthorizationV1Api(api).create_namespaced_role_binding(
            ns,
            client.V1RoleBinding(
                metadata=client.V1ObjectMeta(name="sa-view"),
                role_ref=client.V1RoleRef(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="view"
                ),
                subjects=[client.RbacV1Subject(kind="ServiceAccount", name="default", namespace=ns)],
            ),
        )
        # The authorizer reads an informer's cache: upstream's allows a moment after the write.
        allowed = lab.eventually(
            lambda: (s := review("get", "configmaps")).allowed and s, "the binding to count"
        )
        assert allowed.reason == (
            f'RBAC: allowed by RoleBinding "sa-view/{ns}" of ClusterRole "view" '
            f'to ServiceAccount "default/{ns}"'
        )
        assert review("list", "secrets").allowed is False, "view does not read Secrets"
    finally:
        account.close()
