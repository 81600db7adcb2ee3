"""kube-system as kubeadm leaves it: the kube-proxy DaemonSet and CoreDNS, its two essential addons.

``kubeadm init`` ends with its addon phase (``kubeadm init phase addon all``, upstream
``cmd/kubeadm/app/phases/addons/proxy/manifests.go`` and ``addons/dns/manifests.go``), which creates:

- **kube-proxy**: a DaemonSet ``kube-system/kube-proxy`` (label ``k8s-app=kube-proxy``, host network,
  ``system-node-critical``, tolerating every taint so it runs on every node, cordoned or not), the
  ServiceAccount ``kube-proxy`` it runs as, bound to ``system:node-proxier`` by the ClusterRoleBinding
  ``kubeadm:node-proxier``, and the ConfigMap ``kube-proxy`` holding its ``KubeProxyConfiguration``;
- **CoreDNS**: a Deployment ``kube-system/coredns`` of two replicas (label ``k8s-app=kube-dns``,
  ``system-cluster-critical``, tolerating the control-plane taint), its ConfigMap ``coredns`` with the
  ``Corefile``, the Service ``kube-dns`` at the tenth address of the service CIDR (10.96.0.10 of
  10.96.0.0/12: the address every kubelet's ``clusterDNS`` names) and its ServiceAccount ``coredns``,
  which the ClusterRole ``system:coredns`` lets list and watch what it serves names for.

Kubelab does the same when its API server starts. The DaemonSet and Deployment controllers then make
the pods, the scheduler binds them and the simulated kubelets run them, like any workload. The pods
of CoreDNS answer nothing: they stand where users expect them. Those of kube-proxy stand for the
in-process kube-proxy of their node (``components/proxy``): their kubelet reports them Ready only while
that kube-proxy runs (``Kubelet.host_processes``, wired in ``runtime.py``).

Before them kubeadm has uploaded its configuration and the kubelets' and published ``cluster-info``
(``kubeadmconfig.py``); given what that needs (``KubeadmInit``: the cluster's server URL and CA, its
timing profile), ``ensure_kube_system_addons`` runs those phases first, in kubeadm's order.

kubeadm creates all this once and never looks at it again: an object a student deleted stays
deleted (``kubeadm upgrade`` or ``kubeadm init phase ...`` would bring it back). So an object that
already exists is left as it is, and one that does not is created only when its phase has not run:
the ``kube-proxy`` ConfigMap is the mark that the addon phase ran; a phase of ``kubeadmconfig.py``
ran if any of its three objects exists (delete ``cluster-info`` and it stays deleted while its Role
or RoleBinding is there; delete all three and the next start makes them again). A cluster made
before a phase existed gets its objects at its next start.

Like the system namespaces, these are the server's own writes to storage: no request, no admission.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from controlplane.apiserver import errors
from controlplane.apiserver.kubeadmconfig import (
    CLUSTER_CIDR,
    CLUSTER_DOMAIN,
    DNS_SERVICE_IP,
    KubeadmInit,
    kubeadm_init_phases,
)
from controlplane.apiserver.requestscope import RequestScope

if TYPE_CHECKING:
    from controlplane.apiserver.registry import Registry

ADDON_SCOPE: Final = RequestScope.unadmitted(reason="kubeadm's addon phase (kube-proxy, CoreDNS)")
NAMESPACE: Final = "kube-system"
KUBE_PROXY_IMAGE: Final = "registry.k8s.io/kube-proxy:v1.37.0"
COREDNS_IMAGE: Final = "registry.k8s.io/coredns/coredns:v1.12.1"
#: ``DNS_SERVICE_IP`` (10.96.0.10), ``CLUSTER_DOMAIN`` and ``CLUSTER_CIDR`` (kube-proxy's ``clusterCIDR``)
#: come from kubeadm's ClusterConfiguration (``kubeadmconfig.py``).
#: The label both kube-proxy's objects and its pods carry; what the kubelet recognises its pods by.
KUBE_PROXY_LABEL: Final = "k8s-app"
KUBE_PROXY_APP: Final = "kube-proxy"
KUBE_DNS_APP: Final = "kube-dns"

#: kubeadm's Corefile (``addons/dns/manifests.go`` ``CorefileTemplate``).
COREFILE: Final = f""".:53 {{
    errors
    health {{
       lameduck 5s
    }}
    ready
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }}
    prometheus :9153
    forward . /etc/resolv.conf {{
       max_concurrent 1000
    }}
    cache 30 {{
       disable success {CLUSTER_DOMAIN}
       disable denial {CLUSTER_DOMAIN}
    }}
    loop
    reload
    loadbalance
}}
"""

#: kube-proxy's configuration as kubeadm writes it (``componentconfigs/kubeproxy.go``), abridged.
KUBE_PROXY_CONFIG: Final = f"""apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
clientConnection:
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
  qps: 5
  burst: 10
clusterCIDR: {CLUSTER_CIDR}
kind: KubeProxyConfiguration
metricsBindAddress: ""
mode: ""
"""

KUBE_PROXY_KUBECONFIG: Final = """apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: https://kubelab-control-plane:6443
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
"""


def _meta(name: str, labels: Mapping[str, str] | None = None, namespace: str = NAMESPACE) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    return meta


def kube_proxy_objects() -> list[tuple[tuple[str, str, str], dict[str, Any]]]:
    """kube-proxy's addon objects, as ``((group, version, plural), object)``; its ConfigMap, the mark
    that the addon phase ran, last."""
    labels = {KUBE_PROXY_LABEL: KUBE_PROXY_APP}
    daemon_set = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta("kube-proxy", labels),
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "containers": [
                        {
                            "name": "kube-proxy",
                            "image": KUBE_PROXY_IMAGE,
                            "imagePullPolicy": "IfNotPresent",
                            "command": [
                                "/usr/local/bin/kube-proxy",
                                "--config=/var/lib/kube-proxy/config.conf",
                                "--hostname-override=$(NODE_NAME)",
                            ],
                            "securityContext": {"privileged": True},
                            "volumeMounts": [
                                {"mountPath": "/var/lib/kube-proxy", "name": "kube-proxy"},
                                {"mountPath": "/run/xtables.lock", "name": "xtables-lock"},
                                {"mountPath": "/lib/modules", "name": "lib-modules", "readOnly": True},
                            ],
                            "env": [
                                {
                                    "name": "NODE_NAME",
                                    "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                                }
                            ],
                        }
                    ],
                    "hostNetwork": True,
                    "serviceAccountName": "kube-proxy",
                    "volumes": [
                        {"name": "kube-proxy", "configMap": {"name": "kube-proxy"}},
                        {
                            "name": "xtables-lock",
                            "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"},
                        },
                        {"name": "lib-modules", "hostPath": {"path": "/lib/modules"}},
                    ],
                    # Every taint: kube-proxy runs on every node, NotReady, cordoned or tainted.
                    "tolerations": [{"operator": "Exists"}],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                },
            },
        },
    }
    return [
        (
            ("", "v1", "serviceaccounts"),
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta("kube-proxy")},
        ),
        (
            ("rbac.authorization.k8s.io", "v1", "clusterrolebindings"),
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": _meta("kubeadm:node-proxier", namespace=""),
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "system:node-proxier",
                },
                "subjects": [{"kind": "ServiceAccount", "name": "kube-proxy", "namespace": NAMESPACE}],
            },
        ),
        (("apps", "v1", "daemonsets"), daemon_set),
        (
            ("", "v1", "configmaps"),
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": _meta("kube-proxy", {"app": "kube-proxy"}),
                "data": {"config.conf": KUBE_PROXY_CONFIG, "kubeconfig.conf": KUBE_PROXY_KUBECONFIG},
            },
        ),
    ]


def coredns_objects() -> list[tuple[tuple[str, str, str], dict[str, Any]]]:
    """CoreDNS's addon objects, as ``((group, version, plural), object)``."""
    labels = {KUBE_PROXY_LABEL: KUBE_DNS_APP}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta("coredns", labels),
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "system-cluster-critical",
                    "serviceAccountName": "coredns",
                    "affinity": {
                        "podAntiAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "weight": 100,
                                    "podAffinityTerm": {
                                        "labelSelector": {
                                            "matchExpressions": [
                                                {"key": "k8s-app", "operator": "In", "values": ["kube-dns"]}
                                            ]
                                        },
                                        "topologyKey": "kubernetes.io/hostname",
                                    },
                                }
                            ]
                        }
                    },
                    "tolerations": [
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
                    ],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "containers": [
                        {
                            "name": "coredns",
                            "image": COREDNS_IMAGE,
                            "imagePullPolicy": "IfNotPresent",
                            "resources": {
                                "limits": {"memory": "170Mi"},
                                "requests": {"cpu": "100m", "memory": "70Mi"},
                            },
                            "args": ["-conf", "/etc/coredns/Corefile"],
                            "volumeMounts": [
                                {"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": True}
                            ],
                            "ports": [
                                {"containerPort": 53, "name": "dns", "protocol": "UDP"},
                                {"containerPort": 53, "name": "dns-tcp", "protocol": "TCP"},
                                {"containerPort": 9153, "name": "metrics", "protocol": "TCP"},
                            ],
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                                "readOnlyRootFilesystem": True,
                            },
                            "livenessProbe": {
                                "httpGet": {"path": "/health", "port": 8080, "scheme": "HTTP"},
                                "initialDelaySeconds": 60,
                                "timeoutSeconds": 5,
                                "successThreshold": 1,
                                "failureThreshold": 5,
                            },
                            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181, "scheme": "HTTP"}},
                        }
                    ],
                    "dnsPolicy": "Default",
                    "volumes": [
                        {
                            "name": "config-volume",
                            "configMap": {
                                "name": "coredns",
                                "items": [{"key": "Corefile", "path": "Corefile"}],
                            },
                        }
                    ],
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            **_meta(
                "kube-dns",
                {
                    "k8s-app": KUBE_DNS_APP,
                    "kubernetes.io/cluster-service": "true",
                    "kubernetes.io/name": "CoreDNS",
                },
            ),
            "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"},
        },
        "spec": {
            "clusterIP": DNS_SERVICE_IP,
            "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
            ],
            "selector": labels,
        },
    }
    cluster_role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta("system:coredns", namespace=""),
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["endpoints", "services", "pods", "namespaces"],
                "verbs": ["list", "watch"],
            },
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta("system:coredns", namespace=""),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:coredns"},
        "subjects": [{"kind": "ServiceAccount", "name": "coredns", "namespace": NAMESPACE}],
    }
    return [
        (
            ("", "v1", "configmaps"),
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": _meta("coredns"),
                "data": {"Corefile": COREFILE},
            },
        ),
        (
            ("", "v1", "serviceaccounts"),
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta("coredns")},
        ),
        (("rbac.authorization.k8s.io", "v1", "clusterroles"), cluster_role),
        (("rbac.authorization.k8s.io", "v1", "clusterrolebindings"), binding),
        (("apps", "v1", "deployments"), deployment),
        (("", "v1", "services"), service),
    ]


async def _phase_ran(
    registries: Mapping[tuple[str, str, str], Registry],
    entries: list[tuple[tuple[str, str, str], dict[str, Any]]],
) -> bool:
    """Whether any object of a phase exists (its registry missing: as if it did, nothing to make)."""
    for key, obj in entries:
        registry = registries.get(key)
        if registry is None:
            return True
        try:
            await registry.read(str(obj["metadata"].get("namespace", "")), obj["metadata"]["name"])
        except errors.StatusError:
            continue
        return True
    return False


async def _create(
    registries: Mapping[tuple[str, str, str], Registry],
    entries: list[tuple[tuple[str, str, str], dict[str, Any]]],
    scope: RequestScope,
) -> None:
    for key, obj in entries:
        registry = registries.get(key)
        if registry is None:
            continue
        namespace = str(obj["metadata"].get("namespace", ""))
        with contextlib.suppress(errors.StatusError):  # already there (a student's, or a half-run phase)
            await registry.create(obj, namespace, scope=scope)


async def ensure_kubeadm_init(
    registries: Mapping[tuple[str, str, str], Registry], init: KubeadmInit
) -> list[str]:
    """Run kubeadm init's upload-config and cluster-info phases that have not run (none of their
    objects exists); the names of those that ran now."""
    ran = []
    for phase, entries in kubeadm_init_phases(init):
        if await _phase_ran(registries, entries):
            continue
        await _create(registries, entries, RequestScope.unadmitted(reason=f"kubeadm init phase {phase}"))
        ran.append(phase)
    return ran


async def ensure_kube_system_addons(
    registries: Mapping[tuple[str, str, str], Registry], kubeadm: KubeadmInit | None = None
) -> bool:
    """Run kubeadm's phases: with ``kubeadm``, those before the addons that have not run
    (``ensure_kubeadm_init``); then the addon phase once: create kube-proxy's and CoreDNS's objects
    unless it ran (the ``kube-proxy`` ConfigMap exists). Whether the addon phase ran now."""
    if kubeadm is not None:
        await ensure_kubeadm_init(registries, kubeadm)
    configmaps = registries.get(("", "v1", "configmaps"))
    if configmaps is None:
        return False
    try:
        await configmaps.read(NAMESPACE, "kube-proxy")
    except errors.StatusError:
        pass  # not there: the phase has not run
    else:
        return False
    # The mark, kube-proxy's ConfigMap, last.
    await _create(registries, [*coredns_objects(), *kube_proxy_objects()], ADDON_SCOPE)
    return True


__all__ = [
    "CLUSTER_CIDR",
    "CLUSTER_DOMAIN",
    "COREDNS_IMAGE",
    "DNS_SERVICE_IP",
    "KUBE_PROXY_APP",
    "KUBE_PROXY_IMAGE",
    "coredns_objects",
    "ensure_kube_system_addons",
    "ensure_kubeadm_init",
    "kube_proxy_objects",
]
