"""Pods: defaults (``pkg/apis/core/v1/defaults_test.go``), validation and update rules
(``pkg/apis/core/validation/validation_test.go`` ``TestValidatePodSpec``, ``TestValidatePodUpdate``), QoS
(``pkg/apis/core/helper/qos/qos_test.go``), and the 422 as the API server answers it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controlplane.api.strategies import PodBindingStrategy, PodStrategy, UndecodableObject
from controlplane.api.strategies.pods import POD_UPDATE_FORBIDDEN, image_tag
from tests.controlplane.api.strategies import create, status_update, stored, update
from tests.controlplane.apiserver.conftest import API, api  # noqa: F401 - the API fixture

STRATEGY = PodStrategy()

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def pod(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "web", "image": "nginx:1.25"}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": body}


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "web", "image": "nginx:1.25", **fields}


def errors_of(**spec: Any) -> list[str]:
    return create(STRATEGY, pod(**spec))[1]


# -- defaults --------------------------------------------------------------------------------------


def test_a_minimal_pod_gets_upstreams_defaults_and_nothing_admission_would_add() -> None:
    obj = stored(STRATEGY, pod())
    assert obj["spec"] == {
        "containers": [
            {
                "name": "web",
                "image": "nginx:1.25",
                "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "resources": {},
            }
        ],
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
        "schedulerName": "default-scheduler",
        "enableServiceLinks": True,
    }
    # serviceAccountName, the priority and the not-ready/unreachable tolerations are admission's.
    assert "serviceAccountName" not in obj["spec"] and "tolerations" not in obj["spec"]
    assert obj["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert obj["metadata"]["generation"] == 1


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("registry.k8s.io/pause:3.10", "IfNotPresent"),
        ("localhost:5000/app", "Always"),
        ("localhost:5000/app:v2", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
        ("Not A Reference", "IfNotPresent"),
    ],
)
def test_image_pull_policy_defaults_to_always_only_for_latest(image: str, policy: str) -> None:
    obj = stored(STRATEGY, pod(containers=[container(image=image)])) if " " not in image else None
    if obj is not None:
        assert obj["spec"]["containers"][0]["imagePullPolicy"] == policy
    assert ("Always" if image_tag(image) == "latest" else "IfNotPresent") == policy


def test_an_explicit_pull_policy_is_kept() -> None:
    obj = stored(STRATEGY, pod(containers=[container(image="nginx", imagePullPolicy="Never")]))
    assert obj["spec"]["containers"][0]["imagePullPolicy"] == "Never"


def test_requests_default_to_limits_and_quantities_come_back_canonical() -> None:
    resources = {"limits": {"cpu": "1000m", "memory": "1024Mi"}, "requests": {"memory": "512Mi"}}
    obj = stored(STRATEGY, pod(containers=[container(resources=resources)]))
    assert obj["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"memory": "512Mi", "cpu": "1"},
    }


def test_nested_defaults_ports_probes_volumes_and_env_field_refs() -> None:
    obj = stored(
        STRATEGY,
        pod(
            containers=[
                container(
                    ports=[{"containerPort": 80}],
                    readinessProbe={"httpGet": {"port": 80}},
                    env=[{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                    volumeMounts=[
                        {"name": "scratch", "mountPath": "/tmp"},
                        {"name": "cfg", "mountPath": "/etc/cfg"},
                    ],
                )
            ],
            volumes=[{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "settings"}}],
        ),
    )
    c = obj["spec"]["containers"][0]
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert c["readinessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert c["env"][0]["valueFrom"]["fieldRef"] == {"fieldPath": "spec.nodeName", "apiVersion": "v1"}
    assert obj["spec"]["volumes"] == [
        {"name": "scratch", "emptyDir": {}},  # a volume with no source is an emptyDir
        {"name": "cfg", "configMap": {"name": "settings", "defaultMode": 420}},
    ]


def test_a_status_sent_on_create_is_ignored() -> None:
    body = pod()
    body["status"] = {"phase": "Running", "podIP": "10.0.0.9"}
    assert stored(STRATEGY, body)["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ({}, "BestEffort"),
        ({"requests": {"cpu": "100m"}}, "Burstable"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),  # requests default to the limits
        ({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}, "Burstable"),
        ({"limits": {"cpu": "1"}}, "Burstable"),
        ({"requests": {"ephemeral-storage": "1Gi"}}, "BestEffort"),  # only cpu and memory count
    ],
)
def test_qos_class_is_computed_at_creation(resources: dict[str, Any], qos: str) -> None:
    assert stored(STRATEGY, pod(containers=[container(resources=resources)]))["status"]["qosClass"] == qos


# -- validation ------------------------------------------------------------------------------------


def test_containers_are_required() -> None:
    assert errors_of(containers=[]) == ["spec.containers: Required value"]


def test_container_names_are_dns_labels_and_unique() -> None:
    assert errors_of(containers=[container(), container(), container(name="Web")]) == [
        'spec.containers[1].name: Duplicate value: "web"',
        f'spec.containers[2].name: Invalid value: "Web": {LABEL_MSG}',
    ]


def test_image_is_required_and_may_not_be_padded() -> None:
    assert errors_of(containers=[container(image="")]) == ["spec.containers[0].image: Required value"]
    assert errors_of(containers=[container(image=" nginx")]) == [
        'spec.containers[0].image: Invalid value: " nginx": must not have leading or trailing whitespace'
    ]


def test_container_ports() -> None:
    ports = [
        {"containerPort": 0},
        {"containerPort": 70000, "protocol": "HTTP"},
        {"name": "http", "containerPort": 80},
        {"name": "http", "containerPort": 81},
    ]
    assert errors_of(containers=[container(ports=ports)]) == [
        "spec.containers[0].ports[0].containerPort: Required value",
        "spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, "
        "inclusive",
        'spec.containers[0].ports[1].protocol: Unsupported value: "HTTP": supported values: "SCTP", '
        '"TCP", "UDP"',
        'spec.containers[0].ports[3].name: Duplicate value: "http"',
    ]


def test_requests_may_not_exceed_limits() -> None:
    resources = {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}
    assert errors_of(containers=[container(resources=resources)]) == [
        'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu '
        "limit of 1"
    ]


def test_resource_names_and_values() -> None:
    # Limits are copied into requests first (a pod's defaulting), so their problems show twice.
    resources = {"limits": {"gpu": "1", "memory": "-1"}, "requests": {"example.com/gpu": "1"}}
    assert errors_of(containers=[container(resources=resources)]) == [
        'spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": '
        "must be a standard resource type or fully qualified",
        'spec.containers[0].resources.limits[memory]: Invalid value: "-1": must be greater than or equal '
        "to 0",
        "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable "
        "resources",
        'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": '
        "must be a standard resource type or fully qualified",
        'spec.containers[0].resources.requests[memory]: Invalid value: "-1": must be greater than or '
        "equal to 0",
    ]


def test_extended_resources_are_whole_numbers_and_requested_exactly() -> None:
    resources = {"limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "500m"}}
    assert errors_of(containers=[container(resources=resources)]) == [
        "spec.containers[0].resources.requests[example.com/gpu]: Invalid value: 500m: must be an integer",
        'spec.containers[0].resources.requests: Invalid value: "500m": must be equal to example.com/gpu '
        "limit of 2",
    ]


def test_an_unparsable_quantity_is_a_decode_error_not_a_validation_error() -> None:
    with pytest.raises(UndecodableObject) as raised:
        create(STRATEGY, pod(containers=[container(resources={"limits": {"cpu": "one"}})]))
    assert raised.value.message("Pod", "v1") == (
        'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular expression '
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


def test_restart_and_dns_policies() -> None:
    assert errors_of(restartPolicy="Sometimes", dnsPolicy="Google") == [
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", '
        '"Never"',
        'spec.dnsPolicy: Unsupported value: "Google": supported values: '
        '"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"',
    ]
    assert errors_of(dnsPolicy="None") == [
        "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"
    ]


def test_node_selector_keys_and_values_are_label_syntax() -> None:
    messages = errors_of(nodeSelector={"disk type": "ssd", "zone": "eu west"})
    assert len(messages) == 2
    assert messages[0].startswith('spec.nodeSelector: Invalid value: "disk type": name part must consist of')
    assert messages[1].startswith('spec.nodeSelector: Invalid value: "eu west": a valid label must be')


def test_tolerations() -> None:
    tolerations = [
        {"key": "a", "operator": "Has", "effect": "NoSchedule"},
        {"key": "b", "operator": "Equal", "value": "x", "effect": "NoRun"},
        {"operator": "Equal", "value": "x"},
        {"key": "d", "operator": "Exists", "value": "x"},
        {"key": "e", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 60},
        {"operator": "Exists"},
    ]
    assert errors_of(tolerations=tolerations) == [
        'spec.tolerations[0].operator: Unsupported value: "Has": supported values: "Equal", "Exists"',
        'spec.tolerations[1].effect: Unsupported value: "NoRun": supported values: '
        '"NoSchedule", "PreferNoSchedule", "NoExecute"',
        'spec.tolerations[2].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, '
        'which means "match all values and all keys"',
        "spec.tolerations[3].operator: Invalid value: \"x\": value must be empty when `operator` is 'Exists'",
        "spec.tolerations[4].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
        "`tolerationSeconds` is set",
    ]


def test_node_affinity_structure() -> None:
    required = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Has", "values": ["a"]}]}]
    }
    preferred = [{"weight": 0, "preference": {"matchExpressions": [{"key": "disk", "operator": "In"}]}}]
    path = "spec.affinity.nodeAffinity"
    assert errors_of(
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": required,
                "preferredDuringSchedulingIgnoredDuringExecution": preferred,
            }
        }
    ) == [
        f"{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].operator: "
        'Invalid value: "Has": not a valid selector operator',
        f"{path}.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in "
        "the range 1-100",
        f"{path}.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values: "
        "Required value: must be specified when `operator` is 'In' or 'NotIn'",
    ]
    assert errors_of(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}) == [
        f"{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
        "Required value: must have at least one node selector term"
    ]


def test_pod_anti_affinity_needs_a_topology_key() -> None:
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ""}
    messages = errors_of(
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    )
    assert messages[0] == (
        "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: "
        "Required value: can not be empty"
    )


def test_volumes_names_sources_and_mounts() -> None:
    volumes = [
        {"name": "data", "emptyDir": {}},
        {"name": "data", "emptyDir": {}},
        {"name": "both", "secret": {"secretName": "s"}, "configMap": {"name": "c"}},
        {"name": "cfg", "configMap": {}},
        {"name": "sec", "secret": {"defaultMode": 1000}},
        {"name": "host", "hostPath": {"path": "/var/../etc", "type": "Pipe"}},
    ]
    mounts = [{"name": "missing", "mountPath": "/m"}, {"name": "data", "mountPath": "/m"}]
    assert errors_of(volumes=volumes, containers=[container(volumeMounts=mounts)]) == [
        'spec.volumes[1].name: Duplicate value: "data"',
        "spec.volumes[2].configMap: Forbidden: may not specify more than 1 volume type",
        "spec.volumes[3].configMap.name: Required value",
        "spec.volumes[4].secret.secretName: Required value",
        "spec.volumes[4].secret.defaultMode: Invalid value: 1000: must be a number between 0 and 0777 "
        "(octal), "
        "both inclusive",
        "spec.volumes[5].hostPath.path: Invalid value: \"/var/../etc\": must not contain '..'",
        'spec.volumes[5].hostPath.type: Unsupported value: "Pipe": supported values: "", "BlockDevice", '
        '"CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"',
        'spec.containers[0].volumeMounts[0].name: Not found: "missing"',
        'spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/m": must be unique',
    ]


def test_env_names_and_value_from_exclusivity() -> None:
    env = [
        {"value": "x"},
        {"name": "A=B", "value": "x"},
        {"name": "C", "value": "x", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
        {
            "name": "D",
            "valueFrom": {
                "configMapKeyRef": {"name": "cm", "key": "k"},
                "secretKeyRef": {"name": "s", "key": "k"},
            },
        },
        {"name": "E", "valueFrom": {}},
        {"name": "F", "valueFrom": {"secretKeyRef": {"name": "s"}}},
        {"name": "G", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}},
    ]
    assert errors_of(containers=[container(env=env)]) == [
        "spec.containers[0].env[0].name: Required value",
        'spec.containers[0].env[1].name: Invalid value: "A=B": a valid environment variable name must '
        "consist "
        "only of printable ASCII characters other than '='",
        'spec.containers[0].env[2].valueFrom: Invalid value: "": may not be specified when `value` is not '
        "empty",
        'spec.containers[0].env[3].valueFrom: Invalid value: "": may not have more than one field '
        "specified at a time",
        'spec.containers[0].env[4].valueFrom: Invalid value: "": must specify one of: `fieldRef`, '
        "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        "spec.containers[0].env[5].valueFrom.secretKeyRef.key: Required value",
        'spec.containers[0].env[6].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": '
        "supported "
        'values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", '
        '"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"',
    ]


def test_service_account_name_is_a_dns_subdomain() -> None:
    assert errors_of(serviceAccountName="Bad_SA") == [
        f'spec.serviceAccountName: Invalid value: "Bad_SA": {SUBDOMAIN_MSG}'
    ]


def test_a_pod_may_not_be_created_with_ephemeral_containers() -> None:
    assert errors_of(ephemeralContainers=[{"name": "debug", "image": "busybox"}]) == [
        "spec.ephemeralContainers: Forbidden: cannot be set on create"
    ]


# -- updates ---------------------------------------------------------------------------------------


def test_the_image_may_change_and_bumps_the_generation() -> None:
    old = stored(STRATEGY, pod())
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "nginx:1.27"
    result, messages = update(STRATEGY, new, old)
    assert messages == []
    assert result["metadata"]["generation"] == 2


def test_a_label_change_does_not_bump_the_generation_and_status_is_kept() -> None:
    old = stored(STRATEGY, pod())
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"tier": "web"}
    new["status"] = {"phase": "Running"}
    result, messages = update(STRATEGY, new, old)
    assert messages == []
    assert result["metadata"]["generation"] == 1
    assert result["status"] == old["status"]


def test_other_spec_changes_are_forbidden_with_upstreams_message() -> None:
    assert POD_UPDATE_FORBIDDEN == (
        "pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
        "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
        "previously negative)"
    )
    old = stored(STRATEGY, pod())
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["command"] = ["sleep", "1d"]
    _, messages = update(STRATEGY, new, old)
    assert len(messages) == 1
    assert messages[0].startswith(f"spec: Forbidden: {POD_UPDATE_FORBIDDEN}\n")
    assert 'containers[0].command: ["sleep","1d"]' in messages[0]


def test_containers_may_not_be_added_or_removed() -> None:
    old = stored(STRATEGY, pod())
    new = copy.deepcopy(old)
    new["spec"]["containers"].append(container(name="sidecar"))
    assert update(STRATEGY, new, old)[1] == [
        "spec.containers: Forbidden: pod updates may not add or remove containers"
    ]


def test_tolerations_may_only_be_added() -> None:
    first = {"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
    old = stored(STRATEGY, pod(tolerations=[first]))
    added = copy.deepcopy(old)
    added["spec"]["tolerations"] = [dict(first, tolerationSeconds=30), {"key": "b", "operator": "Exists"}]
    assert update(STRATEGY, added, old)[1] == []
    removed = copy.deepcopy(old)
    removed["spec"]["tolerations"] = []
    assert update(STRATEGY, removed, old)[1] == [
        "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
    ]


def test_active_deadline_may_be_set_or_shortened_only() -> None:
    old = stored(STRATEGY, pod())
    new = copy.deepcopy(old)
    new["spec"]["activeDeadlineSeconds"] = 100
    assert update(STRATEGY, new, old)[1] == []
    with_deadline = stored(STRATEGY, pod(activeDeadlineSeconds=100))
    longer = copy.deepcopy(with_deadline)
    longer["spec"]["activeDeadlineSeconds"] = 200
    assert update(STRATEGY, longer, with_deadline)[1] == [
        "spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to previous value"
    ]
    unset = copy.deepcopy(with_deadline)
    del unset["spec"]["activeDeadlineSeconds"]
    assert update(STRATEGY, unset, with_deadline)[1] == [
        'spec.activeDeadlineSeconds: Invalid value: "null": must not update from a positive integer to '
        "nil value"
    ]


def test_termination_grace_period_only_from_negative_to_one() -> None:
    old = stored(STRATEGY, pod())
    longer = copy.deepcopy(old)
    longer["spec"]["terminationGracePeriodSeconds"] = 60
    assert update(STRATEGY, longer, old)[1][0].startswith("spec: Forbidden: pod updates may not change")
    negative = stored(STRATEGY, pod(terminationGracePeriodSeconds=-1))
    one = copy.deepcopy(negative)
    one["spec"]["terminationGracePeriodSeconds"] = 1
    assert update(STRATEGY, one, negative)[1] == []


def test_status_updates_keep_the_spec_and_the_qos_class() -> None:
    old = stored(STRATEGY, pod())
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "evil"
    new["status"] = {"phase": "Running", "podIP": "10.244.0.5"}
    result, messages = status_update(STRATEGY, new, old)
    assert messages == []
    assert result["spec"] == old["spec"]
    assert result["status"] == {"phase": "Running", "podIP": "10.244.0.5", "qosClass": "BestEffort"}
    changed = copy.deepcopy(old)
    changed["status"]["qosClass"] = "Guaranteed"
    assert status_update(STRATEGY, changed, old)[1] == [
        'status.qosClass: Invalid value: "Guaranteed": field is immutable'
    ]


def test_only_a_binding_sets_the_node_name() -> None:
    old = stored(STRATEGY, pod())
    bound = copy.deepcopy(old)
    bound["spec"]["nodeName"] = "node-1"
    assert update(STRATEGY, bound, old)[1][0].startswith("spec: Forbidden: pod updates may not change")
    binding = PodBindingStrategy()
    request = copy.deepcopy(old)
    request["spec"] = {"nodeName": "node-3", "containers": []}
    result, messages = update(binding, request, old)
    assert messages == []
    assert result["spec"] == dict(old["spec"], nodeName="node-3")


# -- through the API server ------------------------------------------------------------------------

PODS = "/api/v1/namespaces/default/pods"


async def test_an_invalid_pod_is_a_422_with_field_causes(api: API) -> None:  # noqa: F811
    body = pod(containers=[container(name="Web", image="")])
    response = await api.client.post(PODS, json=body)
    assert response.status_code == 422
    status = response.json()
    assert status["reason"] == "Invalid"
    assert status["message"].startswith(
        'Pod "web" is invalid: [spec.containers[0].name: Invalid value: "Web"'
    )
    assert [c["field"] for c in status["details"]["causes"]] == [
        "spec.containers[0].name",
        "spec.containers[0].image",
    ]
    assert status["details"]["causes"][1]["reason"] == "FieldValueRequired"


async def test_a_pod_is_created_defaulted_updated_and_bound_through_the_api(api: API) -> None:  # noqa: F811
    created = (await api.client.post(PODS, json=pod())).json()
    assert created["spec"]["restartPolicy"] == "Always" and created["status"]["qosClass"] == "BestEffort"
    changed = copy.deepcopy(created)
    changed["spec"]["containers"][0]["args"] = ["-g", "daemon off;"]
    response = await api.client.put(f"{PODS}/web", json=changed)
    assert response.status_code == 422
    assert response.json()["message"].startswith(
        f'Pod "web" is invalid: spec: Forbidden: {POD_UPDATE_FORBIDDEN}'
    )
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web"},
        "target": {"kind": "Node", "name": "node-1"},
    }
    assert (await api.client.post(f"{PODS}/web/binding", json=binding)).status_code == 201
    assert (await api.client.get(f"{PODS}/web")).json()["spec"]["nodeName"] == "node-1"
