"""What ``kubeadm init`` uploads: its configuration, the kubelets', and the ``cluster-info`` ConfigMap.

Before its addons (``kubesystemaddons.py``), ``kubeadm init`` leaves three ConfigMaps in the cluster for
the machines that join it later, each readable only by those who need it:

- **upload-config/kubeadm** (``cmd/kubeadm/app/phases/uploadconfig/uploadconfig.go``): the
  ``ClusterConfiguration`` it ran with, in ``kube-system/kubeadm-config`` (key ``ClusterConfiguration``),
  and the Role and RoleBinding ``kubeadm:nodes-kubeadm-config`` that let a joining node (the bootstrap
  token's group ``system:bootstrappers:kubeadm:default-node-token``) and every node (``system:nodes``)
  ``get`` it: ``kubeadm join`` and ``kubeadm upgrade node`` read it.
- **upload-config/kubelet** (``phases/kubelet/config.go``, ``CreateConfigMap``): the
  ``KubeletConfiguration`` every kubelet starts from, in ``kube-system/kubelet-config`` (key ``kubelet``),
  and the Role and RoleBinding ``kubeadm:kubelet-config`` for the same two groups. A configuration
  kubeadm made itself is signed with the annotation ``kubeadm.kubernetes.io/component-config.hash``
  (``componentconfigs/checksums.go``); one the user supplied is not.
- **bootstrap-token** (``phases/bootstraptoken/clusterinfo/clusterinfo.go``): ``kube-public/cluster-info``,
  a kubeconfig (key ``kubeconfig``) with one cluster, named ``""``: the CA and the server of kubeadm's
  ``admin.conf``, nothing else (no user, no context). The Role and RoleBinding
  ``kubeadm:bootstrap-signer-clusterinfo`` let ``system:anonymous`` ``get`` it: a machine that joins
  has no credential it could trust the cluster with yet. It trusts the ConfigMap because
  kube-controller-manager's bootstrap signer (``components/controllers/bootstrapsigner.py``) adds, for
  every bootstrap token allowed to sign, a key ``jws-kubeconfig-<token-id>``: a JWS of the kubeconfig
  keyed with the token's secret, which only a holder of the token can check.

Each YAML text is what kubeadm writes: its types marshalled to JSON, then to YAML with the keys sorted
(``sigs.k8s.io/yaml``), zero values included (``0s``), ``kubeadm.k8s.io/v1beta4`` and
``kubelet.config.k8s.io/v1beta1``. **What they say is Kubelab's cluster**: v1.37.0; the service CIDR
10.96.0.0/12 (``strategies/services.py``), the pod CIDR 10.244.0.0/14 the controller manager's
``--cluster-cidr`` and kube-proxy's ``clusterCIDR`` name, DNS at 10.96.0.10 in ``cluster.local``;
``clusterName: kubernetes`` (kubeadm's default, the controller manager's ``--cluster-name``); keys and
certificates ECDSA P-256, CAs for ten years and the rest for one (``controlplane/pki.py``). The
kubelets' configuration carries the timers of the cluster's timing profile (``timing.py``) that
``KubeletConfiguration`` names (``nodeStatusUpdateFrequency``, ``nodeStatusReportFrequency``,
``syncFrequency``, ``nodeLeaseDurationSeconds``): a value that is not the kubelet's default is written,
as if the cluster's administrator had given kubeadm a ``KubeletConfiguration`` with it (so the
classroom profile's is not signed); upstream's defaults stay kubeadm's ``0s``. ``cluster-info``'s CA is
the one that verifies the API server (what ``manage.py kubeconfig`` and ``kube-root-ca.crt`` trust:
the lab's serving CA, or the cluster's CA when the lab serves no HTTPS port) and its server the
advertised address and port (``kubernetesservice.py``) with the cluster's path,
``https://172.18.0.1:6443/clusters/<name>`` by default.

The texts are built once, shared by every cluster (one per timing profile for the kubelets'); only
``cluster-info`` differs between clusters, by its server URL.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api.strategies.services import SERVICE_CIDR
from controlplane.timing import UPSTREAM, TimingProfile

KUBERNETES_VERSION: Final = "v1.37.0"
#: kubeadm's default ``clusterName`` (also the controller manager's ``--cluster-name``).
CLUSTER_NAME: Final = "kubernetes"
#: The cluster's DNS Service address: the tenth of the service CIDR 10.96.0.0/12, kubeadm's ``GetDNSIP``
#: and the kubelets' ``clusterDNS``.
DNS_SERVICE_IP: Final = "10.96.0.10"
CLUSTER_DOMAIN: Final = "cluster.local"
#: ``networking.podSubnet``: the pod CIDR kube-proxy is told (``clusterCIDR``), as the kubelets' pod CIDRs
#: are cut from it.
CLUSTER_CIDR: Final = "10.244.0.0/14"

KUBE_SYSTEM: Final = "kube-system"
KUBE_PUBLIC: Final = "kube-public"
#: ``kubeadmconstants.KubeadmConfigConfigMap`` and ``ClusterConfigurationConfigMapKey``.
KUBEADM_CONFIG: Final = "kubeadm-config"
CLUSTER_CONFIGURATION_KEY: Final = "ClusterConfiguration"
#: ``uploadconfig.NodesKubeadmConfigClusterRoleName``.
NODES_KUBEADM_CONFIG_ROLE: Final = "kubeadm:nodes-kubeadm-config"
#: ``KubeletBaseConfigurationConfigMap``, ``KubeletBaseConfigurationConfigMapKey``,
#: ``KubeletBaseConfigMapRole``.
KUBELET_CONFIG: Final = "kubelet-config"
KUBELET_CONFIG_KEY: Final = "kubelet"
KUBELET_CONFIG_ROLE: Final = "kubeadm:kubelet-config"
#: ``ComponentConfigHashAnnotationKey``.
COMPONENT_CONFIG_HASH: Final = "kubeadm.kubernetes.io/component-config.hash"
#: ``bootstrapapi.ConfigMapClusterInfo``, ``KubeConfigKey``; ``clusterinfo.BootstrapSignerClusterRoleName``.
CLUSTER_INFO: Final = "cluster-info"
KUBECONFIG_KEY: Final = "kubeconfig"
CLUSTER_INFO_ROLE: Final = "kubeadm:bootstrap-signer-clusterinfo"
#: ``bootstrapapi.JWSSignatureKeyPrefix``: the bootstrap signer's keys in ``cluster-info``.
JWS_SIGNATURE_KEY_PREFIX: Final = "jws-kubeconfig-"

#: The groups kubeadm's Roles are bound to (``NodesGroup``, ``NodeBootstrapTokenAuthGroup``).
NODES_GROUP: Final = "system:nodes"
NODE_BOOTSTRAP_TOKEN_GROUP: Final = "system:bootstrappers:kubeadm:default-node-token"
ANONYMOUS: Final = "system:anonymous"
RBAC_GROUP: Final = "rbac.authorization.k8s.io"

#: ``kubeadm config print init-defaults``' ClusterConfiguration, with this lab's networking, version
#: and key algorithm; ``apiServer: {}`` and the others: no extra flags were given.
CLUSTER_CONFIGURATION: Final = f"""apiServer: {{}}
apiVersion: kubeadm.k8s.io/v1beta4
caCertificateValidityPeriod: 87600h0m0s
certificateValidityPeriod: 8760h0m0s
certificatesDir: /etc/kubernetes/pki
clusterName: {CLUSTER_NAME}
controllerManager: {{}}
dns: {{}}
encryptionAlgorithm: ECDSA-P256
etcd:
  local:
    dataDir: /var/lib/etcd
imageRepository: registry.k8s.io
kind: ClusterConfiguration
kubernetesVersion: {KUBERNETES_VERSION}
networking:
  dnsDomain: {CLUSTER_DOMAIN}
  podSubnet: {CLUSTER_CIDR}
  serviceSubnet: {SERVICE_CIDR}
proxy: {{}}
scheduler: {{}}
"""


def go_duration(seconds: float) -> str:
    """``time.Duration.String()``: ``0s``, ``500ms``, ``2s``, ``1.5s``, ``1m0s``, ``1h0m0s``."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                whole, fraction = divmod(nanos, size)
                digits = f"{fraction:0{len(str(size)) - 1}d}".rstrip("0") if size > 1 else ""
                return f"{sign}{whole}{'.' + digits if digits else ''}{unit}"
    whole_seconds, fraction = divmod(nanos, 1_000_000_000)
    hours, rest = divmod(whole_seconds, 3600)
    minutes, secs = divmod(rest, 60)
    digits = f"{fraction:09d}".rstrip("0")
    text = f"{secs}{'.' + digits if digits else ''}s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


@functools.cache
def kubelet_configuration(timing: TimingProfile) -> tuple[str, bool]:
    """The kubelets' ``KubeletConfiguration`` for ``timing`` as kubeadm marshals it, and whether it is
    kubeadm's own (signed) rather than one with values the administrator supplied (built once per
    profile)."""

    def timer(seconds: float, default: float) -> str:
        return "0s" if seconds == default else go_duration(seconds)

    lease = max(1, round(timing.node_lease_duration))
    update = timer(timing.node_status_update_frequency, UPSTREAM.node_status_update_frequency)
    report = timer(timing.node_status_report_frequency, UPSTREAM.node_status_report_frequency)
    sync = timer(timing.kubelet_sync_frequency, UPSTREAM.kubelet_sync_frequency)
    lease_line = "" if lease == UPSTREAM.node_lease_duration else f"nodeLeaseDurationSeconds: {lease}\n"
    text = f"""apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
- {DNS_SERVICE_IP}
clusterDomain: {CLUSTER_DOMAIN}
containerRuntimeEndpoint: ""
cpuManagerReconcilePeriod: 0s
crashLoopBackOff: {{}}
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
kind: KubeletConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
memorySwap: {{}}
{lease_line}nodeStatusReportFrequency: {report}
nodeStatusUpdateFrequency: {update}
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: {sync}
volumeStatsAggPeriod: 0s
"""
    supplied = bool(lease_line) or any(value != "0s" for value in (update, report, sync))
    return text, not supplied


def config_map_checksum(data: Mapping[str, str]) -> str:
    """``ChecksumForConfigMap``: SHA-256 of the values in key order, as ``sha256:<hex>``."""
    digest = hashlib.sha256()
    for key in sorted(data):
        digest.update(data[key].encode())
    return f"sha256:{digest.hexdigest()}"


@functools.lru_cache(maxsize=8)
def _base64(pem: bytes) -> str:
    """The CA bundle as ``certificate-authority-data`` (clusters share their CA's)."""
    return base64.b64encode(pem).decode("ascii")


def cluster_info_kubeconfig(server: str, ca_pem: bytes) -> str:
    """``clientcmd.Write`` of kubeadm's bootstrap config: the admin kubeconfig's cluster, named ``""``."""
    return f"""apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {_base64(ca_pem)}
    server: {server}
  name: ""
contexts: null
current-context: ""
kind: Config
users: null
"""


@dataclass(frozen=True, slots=True)
class KubeadmInit:
    """What ``kubeadm init`` knew of this cluster beyond the shared constants."""

    #: The API server's URL in ``cluster-info`` (``admin.conf``'s server).
    server: str
    #: The PEM CA bundle that verifies the API server (``admin.conf``'s certificate authority).
    ca_pem: bytes
    #: The timing profile the cluster's kubelets run with.
    timing: TimingProfile = UPSTREAM

    @classmethod
    def for_cluster(
        cls, cluster: str, *, public_ip: str, secure_port: int, ca_pem: bytes, timing: TimingProfile
    ) -> KubeadmInit:
        """The init of cluster ``cluster``, served at the advertised ``public_ip:secure_port``."""
        return cls(f"https://{public_ip}:{secure_port}/clusters/{cluster}", ca_pem, timing)


Entry = tuple[tuple[str, str, str], dict[str, Any]]
CONFIGMAPS: Final = ("", "v1", "configmaps")
ROLES: Final = (RBAC_GROUP, "v1", "roles")
ROLE_BINDINGS: Final = (RBAC_GROUP, "v1", "rolebindings")


def config_map(
    namespace: str, name: str, data: Mapping[str, str], annotations: Mapping[str, str] | None = None
) -> Entry:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = dict(annotations)
    return CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data)}


def get_config_map_role(namespace: str, name: str, config_map_name: str) -> Entry:
    """A Role that may ``get`` one ConfigMap."""
    return ROLES, {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": [
            {
                "verbs": ["get"],
                "apiGroups": [""],
                "resources": ["configmaps"],
                "resourceNames": [config_map_name],
            }
        ],
    }


def role_binding(namespace: str, name: str, subjects: Sequence[tuple[str, str]]) -> Entry:
    """The RoleBinding of the Role ``name`` to ``(kind, name)`` subjects (their API group defaulted)."""
    return ROLE_BINDINGS, {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": kind, "name": who} for kind, who in subjects],
    }


def upload_kubeadm_config_objects() -> list[Entry]:
    """``UploadConfiguration``: ``kubeadm-config``, then its Role and RoleBinding."""
    return [
        config_map(KUBE_SYSTEM, KUBEADM_CONFIG, {CLUSTER_CONFIGURATION_KEY: CLUSTER_CONFIGURATION}),
        get_config_map_role(KUBE_SYSTEM, NODES_KUBEADM_CONFIG_ROLE, KUBEADM_CONFIG),
        role_binding(
            KUBE_SYSTEM,
            NODES_KUBEADM_CONFIG_ROLE,
            [("Group", NODE_BOOTSTRAP_TOKEN_GROUP), ("Group", NODES_GROUP)],
        ),
    ]


def upload_kubelet_config_objects(timing: TimingProfile) -> list[Entry]:
    """``kubeletphase.CreateConfigMap``: ``kubelet-config`` (signed if kubeadm's own), Role, RoleBinding."""
    text, signed = kubelet_configuration(timing)
    data = {KUBELET_CONFIG_KEY: text}
    annotations = {COMPONENT_CONFIG_HASH: config_map_checksum(data)} if signed else {}
    return [
        config_map(KUBE_SYSTEM, KUBELET_CONFIG, data, annotations),
        get_config_map_role(KUBE_SYSTEM, KUBELET_CONFIG_ROLE, KUBELET_CONFIG),
        role_binding(
            KUBE_SYSTEM, KUBELET_CONFIG_ROLE, [("Group", NODES_GROUP), ("Group", NODE_BOOTSTRAP_TOKEN_GROUP)]
        ),
    ]


def cluster_info_objects(init: KubeadmInit) -> list[Entry]:
    """``CreateBootstrapConfigMapIfNotExists`` then ``CreateClusterInfoRBACRules``."""
    return [
        config_map(
            KUBE_PUBLIC, CLUSTER_INFO, {KUBECONFIG_KEY: cluster_info_kubeconfig(init.server, init.ca_pem)}
        ),
        get_config_map_role(KUBE_PUBLIC, CLUSTER_INFO_ROLE, CLUSTER_INFO),
        role_binding(KUBE_PUBLIC, CLUSTER_INFO_ROLE, [("User", ANONYMOUS)]),
    ]


def kubeadm_init_phases(init: KubeadmInit) -> list[tuple[str, list[Entry]]]:
    """kubeadm init's phases that leave objects before its addons, in its order, by phase name."""
    return [
        ("upload-config/kubeadm", upload_kubeadm_config_objects()),
        ("upload-config/kubelet", upload_kubelet_config_objects(init.timing)),
        ("bootstrap-token", cluster_info_objects(init)),
    ]


__all__ = [
    "CLUSTER_CIDR",
    "CLUSTER_CONFIGURATION",
    "CLUSTER_DOMAIN",
    "CLUSTER_INFO",
    "CLUSTER_INFO_ROLE",
    "CLUSTER_NAME",
    "COMPONENT_CONFIG_HASH",
    "DNS_SERVICE_IP",
    "JWS_SIGNATURE_KEY_PREFIX",
    "KUBEADM_CONFIG",
    "KUBECONFIG_KEY",
    "KUBELET_CONFIG",
    "KUBELET_CONFIG_ROLE",
    "KUBERNETES_VERSION",
    "NODES_KUBEADM_CONFIG_ROLE",
    "KubeadmInit",
    "cluster_info_kubeconfig",
    "cluster_info_objects",
    "config_map_checksum",
    "go_duration",
    "kubeadm_init_phases",
    "kubelet_configuration",
    "upload_kubeadm_config_objects",
    "upload_kubelet_config_objects",
]
