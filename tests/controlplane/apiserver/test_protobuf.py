"""Protobuf request bodies: the decoder on hand-made bytes, the API server in-process, and real kubectl.

The bytes are built with the tiny encoder below (no protobuf library): a field is a varint key
(``number << 3 | wire type``) then a varint, or a length and that many bytes. Go's generated code
writes every plain field even when empty, so the hand-made messages do too where it matters.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from config.settings import BASE_DIR
from controlplane.api import schema
from controlplane.api.kinds import builtin_types
from controlplane.apiserver import protobuf, protobuf_schema
from controlplane.apiserver.protobuf import MEDIA_TYPE, ProtobufError, UnsupportedKind, decode
from controlplane.apiserver.protobuf_schema import KINDS, MESSAGES
from tests.controlplane.apiserver.conftest import API
from tests.test_runlab import Runlab

# -- a tiny encoder -----------------------------------------------------------------------------------


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative ints travel as 64-bit two's complement
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            out.append(low)
            return bytes(out)
        out.append(low | 0x80)


def f(number: int, value: int | str | bytes) -> bytes:
    """One field: an int or bool as a varint, a str or bytes (or a nested message) length-delimited."""
    if isinstance(value, int):
        return varint(number << 3) + varint(int(value))
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def m(*fields: bytes) -> bytes:
    return b"".join(fields)


def entry(number: int, key: str, value: int | str | bytes) -> bytes:
    """One map entry: a ``{1: key, 2: value}`` message."""
    return f(number, m(f(1, key), f(2, value)))


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """What client-go sends: the magic, then runtime.Unknown {typeMeta, raw, contentEncoding, contentType}."""
    return b"k8s\x00" + m(f(1, m(f(1, api_version), f(2, kind))), f(2, raw), f(3, ""), f(4, ""))


def meta(name: str, *more: bytes) -> bytes:
    """ObjectMeta as Go writes it: empty strings, a zero generation, an empty creationTimestamp."""
    return m(f(1, name), f(2, ""), f(3, ""), f(4, ""), f(5, ""), f(6, ""), f(7, 0), f(8, b""), *more)


def time(when: str) -> bytes:
    moment = datetime.fromisoformat(when.replace("Z", "+00:00"))
    seconds = int(moment.timestamp())
    return m(f(1, seconds), f(2, moment.microsecond * 1000))


def int_or_string(value: int | str) -> bytes:
    return m(f(1, 0), f(2, value), f(3, "")) if isinstance(value, int) else m(f(1, 1), f(2, 0), f(3, value))


def quantity(value: str) -> bytes:
    return f(1, value)


# -- what kubectl 1.37 really sent ----------------------------------------------------------------------

#: ``kubectl create configmap x --from-literal=a=b`` (captured with -v=10).
KUBECTL_CONFIGMAP = bytes.fromhex(
    "6b3873000a0f0a0276311209436f6e6669674d6170121b0a110a017812001a00220"
    "02a0032003800420012060a01611201621a002200"
)

#: ``kubectl create quota q2 -n t1 --hard=pods=10,requests.cpu=500m --scopes=NotBestEffort`` (-v=8).
KUBECTL_QUOTA = bytes.fromhex(
    "6b3873000a130a027631120d5265736f7572636551756f7461124f0a140a02713212001a02743122002a00320038004200"
    "12350a0c0a04706f647312040a0231300a160a0c72657175657374732e63707512060a043530306d120d4e6f7442657374"
    "4566666f72741a001a002200"
)

#: ``kubectl drain --disable-eviction --grace-period=0``: the DeleteOptions body of its DELETE.
KUBECTL_DELETE_OPTIONS = bytes.fromhex("6b3873000a130a027631120d44656c6574654f7074696f6e73120208001a002200")

#: ``kubectl autoscale deploy web --cpu=80% --min=2 --max=5`` when the autoscaling/v2 create fails: its
#: fallback, an autoscaling/v1 HorizontalPodAutoscaler (-v=8).
KUBECTL_HPA_V1 = bytes.fromhex(
    "6b3873000a290a0e6175746f7363616c696e672f763112174"
    "86f72697a6f6e74616c506f644175746f7363616c6572123d0a130a0377656212001a0022002a0032003800420012200a1a"
    "0a0a4465706c6f796d656e7412037765621a0761707073"
    "2f7631100218051a04180020001a002200"
)


def test_kubectls_configmap_decodes_to_its_json_form() -> None:
    assert decode(KUBECTL_CONFIGMAP) == (
        "v1",
        "ConfigMap",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}},
    )


def test_kubectls_delete_options_keep_a_zero_grace_period() -> None:
    """gracePeriodSeconds is a pointer: 0 means "now", not "unset"."""
    assert decode(KUBECTL_DELETE_OPTIONS)[2] == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
    }


def test_kubectls_autoscaling_v1_fallback_decodes_to_its_json_form() -> None:
    """Go writes the v1 status' plain int32 fields even when zero, and JSON shows them (no omitempty)."""
    assert decode(KUBECTL_HPA_V1) == (
        "autoscaling/v1",
        "HorizontalPodAutoscaler",
        {
            "apiVersion": "autoscaling/v1",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 2,
                "maxReplicas": 5,
            },
            "status": {"currentReplicas": 0, "desiredReplicas": 0},
        },
    )


def test_a_kind_is_decoded_with_the_message_of_its_group_version() -> None:
    v2 = m(f(1, meta("web")), f(2, m(f(1, m(f(1, "Deployment"), f(2, "web"))), f(3, 4))))
    assert decode(envelope("autoscaling/v2", "HorizontalPodAutoscaler", v2))[2]["spec"] == {
        "scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "maxReplicas": 4,
    }
    v1 = m(f(1, meta("web")), f(2, m(f(3, 4), f(4, 80))))
    assert decode(envelope("autoscaling/v1", "HorizontalPodAutoscaler", v1))[2]["spec"] == {
        "maxReplicas": 4,
        "targetCPUUtilizationPercentage": 80,
    }
    # No apiVersion: KINDS' version; a version the tables do not know: unsupported.
    assert decode(envelope("", "HorizontalPodAutoscaler", v2))[0] == "autoscaling/v2"
    with pytest.raises(UnsupportedKind):
        decode(envelope("autoscaling/v2beta2", "HorizontalPodAutoscaler", v2))


def test_kubectls_resource_quota_decodes_to_its_json_form() -> None:
    """``kubectl create quota`` sends a ResourceQuota with an empty status, as Go writes one."""
    assert decode(KUBECTL_QUOTA) == (
        "v1",
        "ResourceQuota",
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "q2", "namespace": "t1"},
            "spec": {"hard": {"pods": "10", "requests.cpu": "500m"}, "scopes": ["NotBestEffort"]},
            "status": {},
        },
    )


# -- the decoder on hand-made messages -----------------------------------------------------------------


def test_a_deployment_comes_out_as_its_json_form() -> None:
    http_get = m(f(1, "/healthz"), f(2, int_or_string("http")))
    tcp_socket = m(f(1, int_or_string(8080)), f(2, ""))
    pod_name = m(f(1, m(f(1, ""), f(2, "metadata.name"))))  # valueFrom.fieldRef
    container = m(
        f(1, "nginx"),
        f(2, "nginx:1.27"),
        f(5, ""),
        f(6, m(f(1, ""), f(2, 0), f(3, 80), f(4, "TCP"), f(5, ""))),
        f(7, m(f(1, "A"), f(2, "1"))),
        f(7, m(f(1, "POD"), f(2, ""), f(3, pod_name))),
        f(8, m(entry(1, "cpu", quantity("500m")), entry(2, "memory", quantity("64Mi")))),
        f(9, m(f(1, "cache"), f(2, 0), f(3, "/cache"), f(4, ""))),
        f(10, m(f(1, f(2, http_get)), f(2, 0), f(4, 10))),  # the handler is inlined in JSON
        f(11, m(f(1, f(3, tcp_socket)), f(2, 5))),
        f(15, m(f(4, 1000), f(7, 0))),
        f(16, 0),
    )
    zone = m(f(1, "zone"), f(2, "In"), f(3, "a"), f(3, "b"))
    node_affinity = f(1, f(1, f(1, zone)))  # required.nodeSelectorTerms[].matchExpressions[]
    spread = m(f(1, m(entry(1, "app", "web"))), f(3, "kubernetes.io/hostname"))
    pod_anti_affinity = f(2, m(f(1, 100), f(2, spread)))  # preferred[].{weight, podAffinityTerm}
    pod_spec = m(
        f(1, m(f(1, "cache"), f(2, f(2, f(1, ""))))),  # emptyDir: {medium: ""} is emptyDir: {}
        f(1, m(f(1, "cfg"), f(2, f(19, m(f(1, f(1, "settings")), f(3, 0o644)))))),
        f(2, container),
        f(3, "Always"),
        f(11, 0),
        f(14, f(4, m(varint(1), varint(2)))),  # supplementalGroups, packed
        f(18, m(f(1, node_affinity), f(3, pod_anti_affinity))),
        f(22, m(f(1, "k"), f(2, "Exists"), f(3, ""), f(4, "NoSchedule"), f(5, 30))),
        f(25, -5),
    )
    spec = m(
        f(1, 0),  # replicas 0 is a value, not "unset"
        f(2, m(entry(1, "app", "web"), f(2, m(f(1, "tier"), f(2, "In"), f(3, "front"))))),
        f(3, m(f(1, meta("", entry(11, "app", "web"))), f(2, pod_spec))),
        f(4, m(f(1, "RollingUpdate"), f(2, m(f(1, int_or_string(0)), f(2, int_or_string("25%")))))),
        f(5, 0),
        f(7, 0),
    )
    body = envelope(
        "apps/v1",
        "Deployment",
        m(
            f(1, meta("web", f(8, time("2026-11-30T08:00:00Z")), entry(12, "note", ""))),
            f(2, spec),
            f(3, b""),
        ),
    )
    assert decode(body)[2] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "creationTimestamp": "2026-11-30T08:00:00Z",
            "annotations": {"note": ""},
        },
        "spec": {
            "replicas": 0,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}],
            },
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "volumes": [
                        {"name": "cache", "emptyDir": {}},
                        {"name": "cfg", "configMap": {"name": "settings", "defaultMode": 420}},
                    ],
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx:1.27",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "env": [
                                {"name": "A", "value": "1"},
                                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                            ],
                            "resources": {"limits": {"cpu": "500m"}, "requests": {"memory": "64Mi"}},
                            "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
                            "livenessProbe": {
                                "httpGet": {"path": "/healthz", "port": "http"},
                                "periodSeconds": 10,
                            },
                            "readinessProbe": {"tcpSocket": {"port": 8080}, "initialDelaySeconds": 5},
                            "securityContext": {"runAsUser": 1000, "allowPrivilegeEscalation": False},
                        }
                    ],
                    "restartPolicy": "Always",
                    "securityContext": {"supplementalGroups": [1, 2]},
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {"key": "zone", "operator": "In", "values": ["a", "b"]}
                                        ]
                                    }
                                ]
                            }
                        },
                        "podAntiAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "weight": 100,
                                    "podAffinityTerm": {
                                        "labelSelector": {"matchLabels": {"app": "web"}},
                                        "topologyKey": "kubernetes.io/hostname",
                                    },
                                }
                            ]
                        },
                    },
                    "tolerations": [
                        {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}
                    ],
                    "priority": -5,
                },
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}},
        },
        "status": {},
    }


def test_secret_data_is_base64_as_in_json() -> None:
    raw = m(f(1, meta("s")), entry(2, "pw", b"hunter2"), entry(2, "bin", b"\x00\xff"), f(3, "Opaque"))
    obj = decode(envelope("v1", "Secret", raw))[2]
    assert obj["data"] == {"pw": base64.b64encode(b"hunter2").decode(), "bin": "AP8="}
    assert obj["type"] == "Opaque"


def test_times_are_rfc3339_and_a_zero_time_is_left_out() -> None:
    spec = m(
        f(1, "node-1"),
        f(2, 40),
        f(3, b""),  # acquireTime: the zero time is an empty message
        f(4, time("2026-11-30T08:00:00.123456Z")),
        f(5, 0),
    )
    obj = decode(envelope("coordination.k8s.io/v1", "Lease", m(f(1, meta("n")), f(2, spec))))[2]
    assert obj["spec"] == {
        "holderIdentity": "node-1",
        "leaseDurationSeconds": 40,
        "renewTime": "2026-11-30T08:00:00.123456Z",
        "leaseTransitions": 0,
    }
    epoch = decode(envelope("v1", "ConfigMap", m(f(1, meta("c", f(8, m(f(1, 0), f(2, 0))))))))[2]
    assert epoch["metadata"]["creationTimestamp"] == "1970-01-01T00:00:00Z"


def test_rbac_keeps_the_empty_core_group_in_lists() -> None:
    rule = m(f(1, "get"), f(1, "list"), f(2, ""), f(3, "pods"))
    raw = m(f(1, meta("r")), f(2, rule))
    assert decode(envelope("rbac.authorization.k8s.io/v1", "Role", raw))[2]["rules"] == [
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}
    ]


def test_a_subject_access_review_with_extra_values() -> None:
    attributes = m(f(1, "default"), f(2, "get"), f(3, ""), f(4, ""), f(5, "pods"), f(6, ""), f(7, ""))
    spec = m(
        f(1, attributes),
        f(3, "bob"),
        f(4, "devs"),
        f(4, "system:authenticated"),
        f(5, m(f(1, "scopes"), f(2, m(f(1, "a"), f(1, "b"))))),
    )
    obj = decode(envelope("authorization.k8s.io/v1", "SubjectAccessReview", m(f(1, meta("")), f(2, spec))))[2]
    assert obj["spec"] == {
        "resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"},
        "user": "bob",
        "groups": ["devs", "system:authenticated"],
        "extra": {"scopes": ["a", "b"]},
    }


def test_unknown_fields_are_skipped_at_every_level() -> None:
    unknown = m(
        f(99, 7), f(98, "later"), varint(97 << 3 | 5) + b"\x01\x02\x03\x04", varint(96 << 3 | 1) + bytes(8)
    )
    raw = m(f(1, meta("x", unknown)), unknown, entry(2, "a", "b"))
    assert decode(envelope("v1", "ConfigMap", raw))[2] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x"},
        "data": {"a": "b"},
    }


def test_a_map_entry_without_a_value_holds_the_zero_value() -> None:
    raw = m(f(1, meta("x")), f(2, m(f(1, "empty"))))
    assert decode(envelope("v1", "ConfigMap", raw))[2]["data"] == {"empty": ""}


def test_an_envelope_without_api_version_takes_the_kinds() -> None:
    assert decode(envelope("", "Namespace", m(f(1, meta("ns")))))[:2] == ("v1", "Namespace")


# -- errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"kind":"ConfigMap"}', "does not appear to be a protobuf message"),
        (b"k8s\x00\x0a", "truncated varint"),
        (b"k8s\x00\x0a\x05ab", "runs past the end"),
        (b"k8s\x00\x0b", "unsupported wire type 3"),
        (b"k8s\x00" + b"\xff" * 11, "longer than 10 bytes"),
        (envelope("v1", "", b""), "'Kind' is missing"),
        (b"k8s\x00" + m(f(1, m(f(2, "ConfigMap"))), f(3, "gzip")), "unsupported content encoding 'gzip'"),
        (b"k8s\x00" + m(f(1, m(f(2, "ConfigMap"))), f(4, "application/json")), "unsupported content type"),
        (envelope("v1", "ConfigMap", m(f(1, m(f(1, 5))))), "metadata.name: wire type 0 cannot hold a string"),
        (
            envelope("apps/v1", "Deployment", m(f(2, m(f(1, "two"))))),
            "spec.replicas: wire type 2 cannot hold int",
        ),
        (
            envelope("apps/v1", "Deployment", m(f(2, m(f(4, m(f(2, m(f(1, m(f(1, 7))))))))))),
            "IntOrString of unknown type 7",
        ),
    ],
)
def test_malformed_bodies_are_a_protobuf_error(body: bytes, message: str) -> None:
    with pytest.raises(ProtobufError, match=re.escape(message)):
        decode(body)


def test_a_path_names_where_a_list_element_went_wrong() -> None:
    container = m(f(1, "c"), f(6, m(f(3, "eighty"))))
    raw = m(f(2, m(f(2, container))))
    with pytest.raises(ProtobufError, match=re.escape("spec.containers[0].ports[0].containerPort")):
        decode(envelope("v1", "Pod", raw))


def test_kinds_without_a_schema_are_unsupported() -> None:
    with pytest.raises(UnsupportedKind):
        decode(envelope("example.com/v1", "Widget", b""))
    with pytest.raises(UnsupportedKind):  # a known kind in another group
        decode(envelope("example.com/v1", "ConfigMap", b""))


def test_nesting_deeper_than_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protobuf, "MAX_DEPTH", 2)
    deep = m(f(2, m(f(3, m(f(2, m(f(2, m(f(1, "c"))))))))))
    with pytest.raises(ProtobufError, match="nested more than 2 deep"):
        decode(envelope("apps/v1", "Deployment", deep))


# -- the tables -------------------------------------------------------------------------------------

SCALAR_JSON_TYPES = {"string": "string", "int": "integer", "bool": "boolean", "bytes": "string"}
OWN_FORMS = set(protobuf.JSON_FORMS)
PACKAGES = {
    "core": "io.k8s.api.core.v1",
    "apps": "io.k8s.api.apps.v1",
    "rbac": "io.k8s.api.rbac.v1",
    "authorization": "io.k8s.api.authorization.v1",
    "authentication": "io.k8s.api.authentication.v1",
    "policy": "io.k8s.api.policy.v1",
    "coordination": "io.k8s.api.coordination.v1",
    "autoscaling": "io.k8s.api.autoscaling.v1",
    "autoscalingv2": "io.k8s.api.autoscaling.v2",
    "scheduling": "io.k8s.api.scheduling.v1",
    "meta": "io.k8s.apimachinery.pkg.apis.meta.v1",
}
#: Fields of upstream's schemas the tables leave out on purpose (see protobuf_schema's docstring).
LEGACY_VOLUMES = [
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "gitRepo",
    "glusterfs",
    "iscsi",
    "photonPersistentDisk",
    "portworxVolume",
    "quobyte",
    "rbd",
    "scaleIO",
    "storageos",
    "vsphereVolume",
]
NOT_DECODED = {("core.Pod", "status"), *(("core.Volume", name) for name in LEGACY_VOLUMES)}


#: Go structs only ever embedded inline, which upstream's schemas have no definition of.
INLINED_ONLY = {"core.EphemeralContainerCommon", "core.ProbeHandler", "core.VolumeSource"}


def _element(type_: str) -> str:
    return type_.removeprefix("[]").removeprefix("map[string]").removeprefix("*")


def test_every_referenced_message_is_in_the_tables() -> None:
    for name, table in MESSAGES.items():
        for number, (json_name, type_) in table.items():
            assert number > 0
            element = _element(type_)
            assert element in SCALAR_JSON_TYPES or element in MESSAGES, f"{name}.{json_name}: {type_}"
            assert not type_.startswith("*") or type_[1:] in SCALAR_JSON_TYPES, f"{name}.{json_name}"
    for _, message in KINDS.values():
        assert message in MESSAGES
    for message in protobuf_schema.OTHER_VERSIONS.values():
        assert message in MESSAGES
    assert set(MESSAGES) >= OWN_FORMS


def _definition(message: str) -> str:
    package, _, name = message.partition(".")
    return f"{PACKAGES[package]}.{name}"


def _json_fields(message: str) -> dict[str, str]:
    """A message's JSON fields by name, inlined messages flattened."""
    out: dict[str, str] = {}
    for json_name, type_ in MESSAGES[message].values():
        if json_name:
            out[json_name] = type_
        else:
            out.update(_json_fields(type_))
    return out


@pytest.mark.parametrize(
    "message",
    sorted(n for n in MESSAGES if n.split(".")[0] in PACKAGES and n not in OWN_FORMS and "Value" not in n),
)
def test_the_tables_match_upstreams_1_37_schemas(message: str) -> None:
    """Every JSON name, and its shape, is upstream's; and no field of upstream's is forgotten."""
    definition = _definition(message)
    if message in INLINED_ONLY:
        assert definition not in schema.definitions()
        pytest.skip("only ever inlined: checked as part of the messages that inline it")
    fields = _json_fields(message)
    for json_name, type_ in fields.items():
        found = schema.field(definition, json_name)
        assert found is not None, f"{message}.{json_name} is not in {definition}"
        declared = schema.json_types(found.type())
        element = _element(type_)
        if type_.startswith("[]"):
            assert declared == {"array"}, json_name
            items = found.items() or {}
            if element in MESSAGES and element not in OWN_FORMS:
                assert found.schema.get("items", {}).get("$ref", "").endswith(_definition(element)), json_name
            else:
                assert schema.json_types(items) <= {SCALAR_JSON_TYPES.get(element, "string")}, json_name
        elif type_.startswith("map[string]"):
            assert declared == {"object"} and "additionalProperties" in found.type(), json_name
        elif element in SCALAR_JSON_TYPES:
            assert declared == {SCALAR_JSON_TYPES[element]}, json_name
        elif element not in OWN_FORMS:
            assert found.type_name == _definition(element), json_name
    missing = {
        name
        for name in schema.field_names(definition)
        if name not in fields and name not in ("apiVersion", "kind") and (message, name) not in NOT_DECODED
    }
    assert not missing, f"{message} lacks {sorted(missing)}"


# -- round trips: JSON -> protobuf by the tables -> JSON --------------------------------------------------


def encode_message(obj: Mapping[str, Any], name: str) -> bytes:
    """``obj`` (a message's JSON form) written by the tables, every field in number order, as Go does."""
    out = b""
    for number, (json_name, type_) in sorted(MESSAGES[name].items()):
        if not json_name:  # inlined: the fields are obj's own
            inner = encode_message(obj, type_)
            out += f(number, inner) if inner else b""
        elif json_name in obj:
            value = obj[json_name]
            if type_.startswith("[]"):
                out += b"".join(encode_field(number, item, type_[2:]) for item in value)
            elif type_.startswith("map[string]"):
                elem = type_[len("map[string]") :]
                out += b"".join(f(number, f(1, k) + encode_field(2, v, elem)) for k, v in value.items())
            else:
                out += encode_field(number, value, type_)
    return out


def encode_field(number: int, value: Any, type_: str) -> bytes:
    base = type_.removeprefix("*")
    if base in ("int", "bool", "string"):
        return f(number, value)
    if base == "bytes":
        return f(number, base64.b64decode(value))
    if base in ("meta.Time", "meta.MicroTime"):
        return f(number, time(value))
    if base == "resource.Quantity":
        return f(number, quantity(value))
    if base == "intstr.IntOrString":
        return f(number, int_or_string(value))
    if base.endswith("ExtraValue") or base.endswith("AttestationValue"):
        return f(number, m(*(f(1, item) for item in value)))
    if base in ("runtime.RawExtension", "meta.FieldsV1"):
        return f(number, f(1, json.dumps(value).encode()))
    return f(number, encode_message(value, base))


ROUND_TRIPS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "autoscaling/v1",
        "HorizontalPodAutoscaler",
        {
            "metadata": {
                "name": "web",
                "namespace": "team",
                "creationTimestamp": "2026-11-30T08:00:00Z",
                "labels": {"app": "web"},
            },
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 1,
                "maxReplicas": 0,  # a plain int32 without omitempty: a zero is a value
                "targetCPUUtilizationPercentage": 80,
            },
            "status": {
                "observedGeneration": 3,
                "lastScaleTime": "2026-11-30T08:05:00Z",
                "currentReplicas": 0,
                "desiredReplicas": 2,
                "currentCPUUtilizationPercentage": 45,
            },
        },
    ),
    (
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        {
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 2,
                "maxReplicas": 5,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 80},
                        },
                    }
                ],
            },
        },
    ),
    (
        "authorization.k8s.io/v1",
        "LocalSubjectAccessReview",
        {
            "metadata": {"namespace": "team"},
            "spec": {
                "resourceAttributes": {"namespace": "team", "verb": "list", "resource": "pods"},
                "user": "bob",
                "groups": ["devs"],
                "extra": {"scopes": ["a", "b"]},
                "uid": "1",
            },
            "status": {"allowed": True, "reason": "RBAC: allowed"},
        },
    ),
]


@pytest.mark.parametrize(("api_version", "kind", "obj"), ROUND_TRIPS, ids=lambda v: str(v)[:40])
def test_the_new_tables_round_trip(api_version: str, kind: str, obj: dict[str, Any]) -> None:
    name = protobuf_schema.OTHER_VERSIONS.get((api_version, kind)) or KINDS[kind][1]
    body = envelope(api_version, kind, encode_message(obj, name))
    assert decode(body) == (api_version, kind, {"apiVersion": api_version, "kind": kind, **obj})


def test_every_kind_the_lab_serves_has_a_table_or_is_listed_as_missing() -> None:
    """The kinds without a table are named in protobuf_schema's docstring; none of them is one that
    kubectl sends as protobuf."""
    served = set()
    for rtype in builtin_types()._types:
        served.add((f"{rtype.group}/{rtype.version}" if rtype.group else rtype.version, rtype.kind))
    decodable = set(protobuf_schema.OTHER_VERSIONS) | {
        (version, kind) for kind, (version, _) in KINDS.items() if version is not None
    }
    missing = {kind for _, kind in served - decodable}
    documented = protobuf_schema.__doc__ or ""
    assert all(kind in documented for kind in missing), missing - {k for k in missing if k in documented}
    assert "HorizontalPodAutoscaler" not in missing and "LocalSubjectAccessReview" not in missing


# -- in the API server --------------------------------------------------------------------------------

CMS = "/api/v1/namespaces/default/configmaps"
PROTOBUF = {"Content-Type": MEDIA_TYPE, "Accept": f"{MEDIA_TYPE},application/json"}


async def test_a_protobuf_create_is_stored_and_answered_in_json(api: API) -> None:
    response = await api.client.post(CMS, content=KUBECTL_CONFIGMAP, headers=PROTOBUF)
    assert response.status_code == 201, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json()["data"] == {"a": "b"}
    assert (await api.client.get(f"{CMS}/x")).json()["data"] == {"a": "b"}


async def test_a_protobuf_update(api: API) -> None:
    assert (await api.client.post(CMS, content=KUBECTL_CONFIGMAP, headers=PROTOBUF)).status_code == 201
    body = envelope("v1", "ConfigMap", m(f(1, meta("x")), entry(2, "a", "changed")))
    response = await api.client.put(f"{CMS}/x", content=body, headers=PROTOBUF)
    assert response.status_code == 200, response.text
    assert response.json()["data"] == {"a": "changed"}


async def test_malformed_protobuf_is_400_not_500(api: API) -> None:
    response = await api.client.post(CMS, content=b"k8s\x00\x0a\x05ab", headers=PROTOBUF)
    assert response.status_code == 400
    status = response.json()
    assert status["reason"] == "BadRequest"
    assert status["message"].startswith("unable to decode protobuf body: ")


async def test_a_kind_without_a_protobuf_schema_is_415(api: API) -> None:
    body = envelope("example.com/v1", "Widget", b"")
    response = await api.client.post(CMS, content=body, headers=PROTOBUF)
    assert response.status_code == 415
    assert response.json()["reason"] == "UnsupportedMediaType"
    assert response.json()["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml"
    )


async def test_a_protobuf_object_of_another_kind_is_400(api: API) -> None:
    body = envelope("v1", "Secret", m(f(1, meta("x"))))
    response = await api.client.post(CMS, content=body, headers=PROTOBUF)
    assert response.status_code == 400
    assert "does not match the expected kind" in response.json()["message"]


async def test_a_protobuf_access_review(api: API) -> None:
    attributes = m(f(1, "default"), f(2, "get"), f(3, ""), f(4, ""), f(5, "pods"), f(6, ""), f(7, ""))
    body = envelope(
        "authorization.k8s.io/v1", "SelfSubjectAccessReview", m(f(1, meta("")), f(2, f(1, attributes)))
    )
    response = await api.client.post(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", content=body, headers=PROTOBUF
    )
    assert response.status_code == 201, response.text
    review = response.json()
    assert review["spec"]["resourceAttributes"] == {"namespace": "default", "verb": "get", "resource": "pods"}
    assert review["status"]["allowed"] is True


async def test_a_delete_with_protobuf_delete_options(api: API) -> None:
    assert (await api.client.post(CMS, content=KUBECTL_CONFIGMAP, headers=PROTOBUF)).status_code == 201
    response = await api.client.request(
        "DELETE", f"{CMS}/x", content=KUBECTL_DELETE_OPTIONS, headers=PROTOBUF
    )
    assert response.status_code == 200, response.text
    assert (await api.client.get(f"{CMS}/x")).status_code == 404


async def test_a_second_protobuf_autoscaling_v1_create_is_already_exists(api: API) -> None:
    """kubectl autoscale's fallback after its v2 create met AlreadyExists: the same answer, not 415."""
    url = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
    created = await api.client.post(url, content=KUBECTL_HPA_V1, headers=PROTOBUF)
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["maxReplicas"] == 5
    again = await api.client.post(url, content=KUBECTL_HPA_V1, headers=PROTOBUF)
    assert again.status_code == 409, again.text
    assert again.json()["reason"] == "AlreadyExists"
    assert again.json()["message"] == 'horizontalpodautoscalers.autoscaling "web" already exists'


async def test_a_protobuf_local_subject_access_review(api: API) -> None:
    attributes = m(f(1, "default"), f(2, "get"), f(3, ""), f(4, ""), f(5, "pods"), f(6, ""), f(7, ""))
    spec = m(f(1, attributes), f(3, "admin"), f(4, "system:masters"))
    body = envelope("authorization.k8s.io/v1", "LocalSubjectAccessReview", m(f(1, meta("")), f(2, spec)))
    response = await api.client.post(
        "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
        content=body,
        headers=PROTOBUF,
    )
    assert response.status_code == 201, response.text
    assert response.json()["status"]["allowed"] is True


async def test_a_protobuf_patch_is_still_415(api: API) -> None:
    assert (await api.client.post(CMS, content=KUBECTL_CONFIGMAP, headers=PROTOBUF)).status_code == 201
    response = await api.client.patch(f"{CMS}/x", content=KUBECTL_CONFIGMAP, headers=PROTOBUF)
    assert response.status_code == 415


# -- real kubectl against a real lab ------------------------------------------------------------------

KUBECTL = Path(sys.executable).parent / "kubectl"


@dataclass
class Lab:
    kubeconfig: Path
    cache: Path

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{done.stderr}")
        return done

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """``manage.py runlab`` on free ports, and a kubeconfig for its demo cluster's admin."""
    if not KUBECTL.exists():
        pytest.skip("kubectl is not installed in the virtualenv")
    tmp = tmp_path_factory.mktemp("protobuf-lab")
    runlab = Runlab(tmp / "data", tmp / "runlab.log")
    try:
        runlab.wait_for_output("Lab running.")
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBELAB_")}
        env["DJANGO_SETTINGS_MODULE"] = "config.settings"
        kubeconfig = subprocess.run(
            [
                sys.executable,
                "manage.py",
                "kubeconfig",
                "--cluster",
                "demo",
                "--user",
                "admin",
                "--server",
                f"https://127.0.0.1:{runlab.api}",
                "--data-dir",
                str(tmp / "data"),
            ],
            cwd=BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        path = tmp / "kubeconfig"
        path.write_text(kubeconfig)
        yield Lab(path, tmp / "cache")
        runlab.stop(signal.SIGINT)
    finally:
        runlab.kill()


@pytest.mark.slow
def test_kubectl_create_configmap(lab: Lab) -> None:
    lab.kubectl("create", "configmap", "pb-cm", "--from-literal=a=b", "--from-literal=empty=")
    assert lab.get("configmap", "pb-cm")["data"] == {"a": "b", "empty": ""}


@pytest.mark.slow
def test_kubectl_create_secret_generic(lab: Lab) -> None:
    lab.kubectl("create", "secret", "generic", "pb-secret", "--from-literal=password=hunter2")
    secret = lab.get("secret", "pb-secret")
    assert secret["data"] == {"password": base64.b64encode(b"hunter2").decode()}


@pytest.mark.slow
def test_kubectl_create_namespace_and_serviceaccount(lab: Lab) -> None:
    lab.kubectl("create", "namespace", "pb-ns")
    assert lab.get("namespace", "pb-ns")["metadata"]["name"] == "pb-ns"
    lab.kubectl("create", "serviceaccount", "pb-sa", "-n", "pb-ns")
    assert lab.get("serviceaccount", "pb-sa", "-n", "pb-ns")["metadata"]["namespace"] == "pb-ns"


@pytest.mark.slow
def test_kubectl_create_deployment(lab: Lab) -> None:
    lab.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2", "--port=80")
    deployment = lab.get("deployment", "web")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "nginx"
    assert container["ports"][0]["containerPort"] == 80


@pytest.mark.slow
def test_kubectl_create_service_clusterip(lab: Lab) -> None:
    lab.kubectl("create", "service", "clusterip", "pb-svc", "--tcp=80:8080")
    spec = lab.get("service", "pb-svc")["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["selector"] == {"app": "pb-svc"}
    [port] = spec["ports"]
    assert (port["port"], port["targetPort"], port["protocol"]) == (80, 8080, "TCP")


@pytest.mark.slow
def test_kubectl_create_service_nodeport_loadbalancer_and_externalname(lab: Lab) -> None:
    lab.kubectl("create", "service", "nodeport", "pb-np", "--tcp=81:http", "--node-port=30081")
    [port] = lab.get("service", "pb-np")["spec"]["ports"]
    assert (port["port"], port["targetPort"], port["nodePort"]) == (81, "http", 30081)
    lab.kubectl("create", "service", "loadbalancer", "pb-lb", "--tcp=82:8082")
    spec = lab.get("service", "pb-lb")["spec"]
    assert spec["type"] == "LoadBalancer"
    assert spec["ports"][0]["targetPort"] == 8082
    lab.kubectl("create", "service", "externalname", "pb-ext", "--external-name=example.com")
    spec = lab.get("service", "pb-ext")["spec"]
    assert (spec["type"], spec["externalName"]) == ("ExternalName", "example.com")


@pytest.mark.slow
def test_kubectl_create_role_and_rolebinding(lab: Lab) -> None:
    lab.kubectl("create", "role", "pb-role", "--verb=get", "--verb=list", "--resource=pods")
    assert lab.get("role", "pb-role")["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}
    ]
    lab.kubectl(
        "create", "rolebinding", "pb-rb", "--role=pb-role", "--user=bob", "--serviceaccount=default:bot"
    )
    binding = lab.get("rolebinding", "pb-rb")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pb-role"}
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"},
        {"kind": "ServiceAccount", "name": "bot", "namespace": "default"},
    ]


@pytest.mark.slow
def test_kubectl_create_clusterrole_and_clusterrolebinding(lab: Lab) -> None:
    lab.kubectl("create", "clusterrole", "pb-cr", "--verb=list", "--resource=deployments.apps")
    assert lab.get("clusterrole", "pb-cr")["rules"] == [
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list"]}
    ]
    lab.kubectl("create", "clusterrole", "pb-agg", "--aggregation-rule=team=a")
    assert lab.get("clusterrole", "pb-agg")["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": {"team": "a"}}]
    }
    lab.kubectl("create", "clusterrolebinding", "pb-crb", "--clusterrole=pb-cr", "--group=devs")
    binding = lab.get("clusterrolebinding", "pb-crb")
    assert binding["roleRef"]["name"] == "pb-cr"
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}]


@pytest.mark.slow
def test_kubectl_create_quota(lab: Lab) -> None:
    lab.kubectl("create", "namespace", "pb-quota-ns")  # its own namespace: a quota binds every pod in it
    ns = "--namespace=pb-quota-ns"
    hard = "--hard=pods=10,requests.cpu=500m"
    lab.kubectl("create", "quota", "pb-quota", hard, "--scopes=NotBestEffort", ns)
    spec = lab.get("resourcequota", "pb-quota", ns)["spec"]
    assert spec == {"hard": {"pods": "10", "requests.cpu": "500m"}, "scopes": ["NotBestEffort"]}


@pytest.mark.slow
def test_kubectl_run(lab: Lab) -> None:
    lab.kubectl("run", "pb-pod", "--image=nginx", "--env=MODE=demo", "--port=80", "--labels=tier=web")
    pod = lab.get("pod", "pb-pod")
    assert pod["metadata"]["labels"] == {"tier": "web"}
    [container] = pod["spec"]["containers"]
    assert (container["name"], container["image"]) == ("pb-pod", "nginx")
    assert container["env"] == [{"name": "MODE", "value": "demo"}]
    assert container["ports"][0]["containerPort"] == 80


@pytest.mark.slow
def test_kubectl_create_token_fails_cleanly_if_at_all(lab: Lab) -> None:
    """Until the token subresource exists the answer may be a Status error, never a decoding failure."""
    done = lab.kubectl("create", "token", "default", check=False)
    if done.returncode == 0:
        assert done.stdout.count(".") == 2  # a JWT
    else:
        assert "decode" not in done.stderr and "protobuf" not in done.stderr
        assert re.search(r"not supported|not found|NotFound|MethodNotAllowed", done.stderr), done.stderr


@pytest.mark.slow
def test_kubectl_auth_can_i_and_whoami(lab: Lab) -> None:
    assert lab.kubectl("auth", "can-i", "get", "pods").stdout.strip() == "yes"
    whoami = lab.kubectl("auth", "whoami", "-o", "json")
    assert json.loads(whoami.stdout)["status"]["userInfo"]["username"] == "admin"


@pytest.mark.slow
def test_kubectl_drain_deletes_with_protobuf_delete_options(lab: Lab) -> None:
    """``drain --disable-eviction`` DELETEs each pod with a protobuf DeleteOptions body."""
    objects: list[Mapping[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "pb-node"}},
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "pb-on-node"},
            "spec": {"nodeName": "pb-node", "containers": [{"name": "c", "image": "nginx"}]},
        },
    ]
    manifest = lab.kubeconfig.parent / "drain.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    lab.kubectl("create", "-f", str(manifest), "--validate=false")
    done = lab.kubectl(
        "drain", "pb-node", "--disable-eviction", "--force", "--grace-period=0", "--timeout=30s", check=False
    )
    assert "pod/pb-on-node deleted" in done.stdout, done.stderr
    assert lab.kubectl("get", "pod", "pb-on-node", check=False).returncode != 0


@pytest.mark.slow
def test_kubectl_autoscale_twice_says_already_exists(lab: Lab) -> None:
    """The second ``autoscale`` meets AlreadyExists in autoscaling/v2 and falls back to autoscaling/v1,
    also sent as protobuf (kubectl pkg/cmd/autoscale): upstream's AlreadyExists, not a 415."""
    lab.kubectl("create", "deployment", "pb-hpa", "--image=nginx")
    args = ("autoscale", "deployment", "pb-hpa", "--cpu=80%", "--min=2", "--max=5")
    assert lab.kubectl(*args).stdout == "horizontalpodautoscaler.autoscaling/pb-hpa autoscaled\n"
    again = lab.kubectl(*args, check=False)
    assert again.returncode == 1
    assert again.stderr == (
        'Error from server (AlreadyExists): horizontalpodautoscalers.autoscaling "pb-hpa" already exists\n'
    )
