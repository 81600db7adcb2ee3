"""Table printers: the columns ``kubectl get`` shows, computed by the API server.

``kubectl get pods`` does not know what a pod's STATUS column should say. It asks the server for a
**Table**: it sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` and gets back
``columnDefinitions`` (name, type, description, and a priority: 0 always shown, 1 only with
``-o wide``) and one **row** per object, whose ``cells`` are already-formatted values ("1/2",
"CrashLoopBackOff", "3 (5m ago)", "2d3h"). kubectl just lays them out. Putting the presentation
logic in the server means every client (kubectl of any version, the dashboard, this lab's browser
view) shows the same thing, and a new resource type gets sensible columns without a kubectl release.
A server that cannot make a Table still works, but kubectl then prints only NAME and AGE.

The row functions here port kubernetes ``pkg/printers/internalversion/printers.go``, reading the v1
JSON form of objects instead of Go structs. The server always builds the wide row (it calls the
printers with ``Wide: true``, ``pkg/printers/storage/storage.go``), so ``Printer.row`` returns every
cell and kubectl drops the priority-1 ones unless asked for ``-o wide``. Ages are
``translateTimestampSince``: ``duration.HumanDuration`` of now minus the timestamp, ported exactly
(apimachinery ``pkg/util/duration/duration.go``). Resources without their own printer get
``DEFAULT_PRINTER``, upstream's ``DefaultTableConvertor`` (Name, Created At; apiserver
``pkg/registry/rest/table.go``); RBAC Roles and ClusterRoles use it upstream too.

Column descriptions are upstream's (``SwaggerDoc()`` of the field each column shows); kubectl does not
display them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from controlplane.api.certificates import status_text as csr_status_text
from controlplane.api.conversion.autoscaling import v1_to_v2
from controlplane.api.meta import format_time, parse_time
from controlplane.api.quantity import QuantityError, parse_json_quantity
from controlplane.api.selectors import (
    SelectorError,
    format_label_selector,
    format_labels,
    label_selector_from_object,
    pod_ip,
)

Object = Mapping[str, Any]

# -- column descriptions: upstream SwaggerDoc() of each shown field (k8s.io/api, v1.37 OpenAPI) ------
# Deployment/ReplicaSet/RoleBinding columns upstream cite extensions/v1beta1 and rbac/v1beta1 docs;
# those versions are no longer served, so the apps/v1 and rbac/v1 wording stands in.

_NAME: Final = (  # ObjectMeta.name
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_CREATION_TIMESTAMP: Final = (  # ObjectMeta.creationTimestamp
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_POD_IP: Final = (  # PodStatus.podIP
    "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."
)
_POD_NODE_NAME: Final = (  # PodSpec.nodeName
    "NodeName indicates in which node this pod is scheduled. If empty, this pod is a "
    "candidate for scheduling by the scheduler defined in schedulerName. Once this field is "
    "set, the kubelet for this node becomes responsible for the lifecycle of this pod. This "
    "field should not be used to express a desire for the pod to be scheduled on a specific "
    "node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename"
)
_POD_NOMINATED_NODE_NAME: Final = (  # PodStatus.nominatedNodeName
    "nominatedNodeName is set only when this pod preempts other pods on the node, but it "
    "cannot be scheduled right away as preemption victims receive their graceful termination "
    "periods. This field does not guarantee that the pod will be scheduled on this node. "
    "Scheduler may decide to place the pod elsewhere if other nodes become available sooner. "
    "Scheduler may also decide to give the resources on this node to a higher priority pod "
    "that is created after preemption. As a result, this field may be different than "
    "PodSpec.nodeName when the pod is scheduled."
)
_POD_READINESS_GATES: Final = (  # PodSpec.readinessGates
    "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready "
    "when all its containers are ready AND all conditions specified in the readiness gates "
    'have status equal to "True" More info: '
    "https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates"
)
_RC_SPEC_REPLICAS: Final = (  # ReplicationControllerSpec.replicas
    "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero "
    "and unspecified. Defaults to 1. More info: "
    "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"
)
_RC_STATUS_REPLICAS: Final = (  # ReplicationControllerStatus.replicas
    "Replicas is the most recently observed number of replicas. More info: "
    "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"
)
_RC_READY_REPLICAS: Final = "The number of ready replicas for this replication controller."
_RC_SELECTOR: Final = (  # ReplicationControllerSpec.selector
    "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it "
    "is defaulted to the labels present on the Pod template. Label keys and values that must match in "
    "order to be controlled by this replication controller, if empty defaulted to labels on Pod template. "
    "More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
)
_PV_CAPACITY: Final = (  # PersistentVolumeSpec.capacity
    "capacity is the description of the persistent volume's resources and capacity. More info: "
    "https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity"
)
_PV_ACCESS_MODES: Final = (  # PersistentVolumeSpec.accessModes
    "accessModes contains all ways the volume can be mounted. More info: "
    "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes"
)
_PV_RECLAIM_POLICY: Final = (  # PersistentVolumeSpec.persistentVolumeReclaimPolicy
    "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its "
    "claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default "
    "for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported "
    "by the volume plugin underlying this PersistentVolume. More info: "
    "https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming"
)
_PV_PHASE: Final = (  # PersistentVolumeStatus.phase
    "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: "
    "https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase"
)
_PV_CLAIM_REF: Final = (  # PersistentVolumeSpec.claimRef
    "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. "
    "Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. "
    "More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"
)
_PV_REASON: Final = (  # PersistentVolumeStatus.reason
    "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and "
    "tidy display in the CLI."
)
_PV_VOLUME_MODE: Final = (  # PersistentVolumeSpec.volumeMode
    "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in "
    "raw block state. Value of Filesystem is implied when not included in spec."
)
_PVC_PHASE: Final = "phase represents the current phase of PersistentVolumeClaim."
_PVC_VOLUME_NAME: Final = "volumeName is the binding reference to the PersistentVolume backing this claim."
_PVC_CAPACITY: Final = "capacity represents the actual resources of the underlying volume."
_PVC_ACCESS_MODES: Final = (  # PersistentVolumeClaimStatus.accessModes
    "accessModes contains the actual access modes the volume backing the PVC has. More info: "
    "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1"
)
_PVC_VOLUME_MODE: Final = (  # PersistentVolumeClaimSpec.volumeMode
    "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied "
    "when not included in claim spec."
)
_SC_PROVISIONER: Final = "provisioner indicates the type of the provisioner."
_SC_RECLAIM_POLICY: Final = (  # StorageClass.reclaimPolicy
    "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this "
    "storage class. Defaults to Delete."
)
_SC_BINDING_MODE: Final = (  # StorageClass.volumeBindingMode
    "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, "
    "VolumeBindingImmediate is used. This field is only honored by servers that enable the "
    "VolumeScheduling feature."
)
_SC_ALLOW_EXPANSION: Final = "allowVolumeExpansion shows whether the storage class allow volume expand."
_INGRESS_CLASS: Final = (
    "The name of the IngressClass resource that should be used for additional configuration"
)
_INGRESS_HOSTS: Final = "Hosts that incoming requests are matched against before the ingress rule"
_NETPOL_POD_SELECTOR: Final = (  # NetworkPolicySpec.podSelector
    "podSelector selects the pods to which this NetworkPolicy object applies. The array of rules is "
    "applied to any pods selected by this field. An empty selector matches all pods in the policy's "
    "namespace. Multiple network policies can select the same set of pods. In this case, the ingress "
    "rules for each are combined additively. This field is optional. If it is not specified, it defaults "
    "to an empty selector."
)
_RS_SPEC_REPLICAS: Final = (  # ReplicaSetSpec.replicas
    "Replicas is the number of desired pods. This is a pointer to distinguish between "
    "explicit zero and unspecified. Defaults to 1. More info: "
    "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"
)
_RS_STATUS_REPLICAS: Final = (  # ReplicaSetStatus.replicas
    "Replicas is the most recently observed number of non-terminating pods. More info: "
    "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"
)
_RS_READY_REPLICAS: Final = (  # ReplicaSetStatus.readyReplicas
    "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition."
)
_RS_SELECTOR: Final = (  # ReplicaSetSpec.selector
    "Selector is a label query over pods that should match the replica count. Label keys and "
    "values that must match in order to be controlled by this replica set. It must match the "
    "pod template's labels. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
)
_SVC_TYPE: Final = (  # ServiceSpec.type
    "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are "
    'ExternalName, ClusterIP, NodePort, and LoadBalancer. "ClusterIP" allocates a '
    "cluster-internal IP address for load-balancing to endpoints. Endpoints are determined "
    "by the selector or if that is not specified, by manual construction of an Endpoints "
    'object or EndpointSlice objects. If clusterIP is "None", no virtual IP is allocated and '
    'the endpoints are published as a set of endpoints rather than a virtual IP. "NodePort" '
    "builds on ClusterIP and allocates a port on every node which routes to the same "
    'endpoints as the clusterIP. "LoadBalancer" builds on NodePort and creates an external '
    "load-balancer (if supported in the current cloud) which routes to the same endpoints as "
    'the clusterIP. "ExternalName" aliases this service to the specified externalName. '
    "Several other fields do not apply to ExternalName services. More info: "
    "https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types"
)
_SVC_CLUSTER_IP: Final = (  # ServiceSpec.clusterIP
    "clusterIP is the IP address of the service and is usually assigned randomly. If an "
    "address is specified manually, is in-range (as per system configuration), and is not in "
    "use, it will be allocated to the service; otherwise creation of the service will fail. "
    "This field may not be changed through updates unless the type field is also being "
    "changed to ExternalName (which requires this field to be blank) or the type field is "
    "being changed from ExternalName (in which case this field may optionally be specified, "
    'as describe above).  Valid values are "None", empty string (""), or a valid IP address. '
    'Setting this to "None" makes a "headless service" (no virtual IP), which is useful when '
    "direct endpoint connections are preferred and proxying is not required.  Only applies "
    "to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when "
    "creating a Service of type ExternalName, creation will fail. This field will be wiped "
    "when updating a Service to type ExternalName. More info: "
    "https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"
)
_SVC_EXTERNAL_IPS: Final = (  # ServiceSpec.externalIPs
    "externalIPs is a list of IP addresses for which nodes in the cluster will also accept "
    "traffic for this service.  These IPs are not managed by Kubernetes.  The user is "
    "responsible for ensuring that traffic arrives at a node with this IP.  A common example "
    "is external load-balancers that are not part of the Kubernetes system."
)
_SVC_PORTS: Final = (  # ServiceSpec.ports
    "The list of ports that are exposed by this service. More info: "
    "https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"
)
_SVC_SELECTOR: Final = (  # ServiceSpec.selector
    "Route service traffic to pods with label keys and values matching this selector. If "
    "empty or not present, the service is assumed to have an external process managing its "
    "endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, "
    "and LoadBalancer. Ignored if type is ExternalName. More info: "
    "https://kubernetes.io/docs/concepts/services-networking/service/"
)
_ENDPOINTS_SUBSETS: Final = (  # Endpoints.subsets
    "The set of all endpoints is the union of all subsets. Addresses are placed into subsets "
    "according to the IPs they share. A single address with multiple ports, some of which "
    "are ready and some of which are not (because they come from different containers) will "
    "result in the address being displayed in different subsets for the different ports. No "
    "address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of "
    "addresses and ports that comprise a service."
)
_NODE_KUBELET_VERSION: Final = (  # NodeSystemInfo.kubeletVersion
    "Kubelet Version reported by the node."
)
_NODE_ADDRESSES: Final = (  # NodeStatus.addresses
    "List of addresses reachable to the node. Queried from cloud provider, if available. "
    "More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This "
    "field is declared as mergeable, but the merge key is not sufficiently unique, which can "
    "cause data corruption when it is merged. Callers should instead use a full-replacement "
    "patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that "
    "addresses can change during the lifetime of a Node. However, there are some exceptions "
    "where this may not be possible, such as Pods that inherit a Node's address in its own "
    "status or consumers of the downward API (status.hostIP)."
)
_NODE_OS_IMAGE: Final = (  # NodeSystemInfo.osImage
    "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."
)
_NODE_KERNEL_VERSION: Final = (  # NodeSystemInfo.kernelVersion
    "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."
)
_NODE_CONTAINER_RUNTIME: Final = (  # NodeSystemInfo.containerRuntimeVersion
    "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."
)
_EVENT_LAST_TIMESTAMP: Final = (  # Event.lastTimestamp
    "The time at which the most recent occurrence of this event was recorded."
)
_EVENT_TYPE: Final = (  # Event.type
    "Type of this event (Normal, Warning), new types could be added in the future"
)
_EVENT_REASON: Final = (  # Event.reason
    "This should be a short, machine understandable string that gives the reason for the "
    "transition into the object's current status."
)
_EVENT_INVOLVED_OBJECT: Final = (  # Event.involvedObject
    "The object that this event is about."
)
_OBJECT_REFERENCE_FIELD_PATH: Final = (  # ObjectReference.fieldPath
    "If referring to a piece of an object instead of an entire object, this string should "
    "contain a valid JSON/Go field access statement, such as "
    "desiredState.manifest.containers[2]. For example, if the object reference is to a "
    'container within a pod, this would take on a value like: "spec.containers{name}" (where '
    '"name" refers to the name of the container that triggered the event) or if no container '
    'name is specified "spec.containers[2]" (container with index 2 in this pod). This '
    "syntax is chosen only to have some well-defined way of referencing a part of an object."
)
_EVENT_SOURCE: Final = (  # Event.source
    "The component reporting this event. Should be a short machine understandable string."
)
_EVENT_MESSAGE: Final = (  # Event.message
    "A human-readable description of the status of this operation."
)
_EVENT_FIRST_TIMESTAMP: Final = (  # Event.firstTimestamp
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"
)
_EVENT_COUNT: Final = (  # Event.count
    "The number of times this event has occurred."
)
_SECRET_TYPE: Final = (  # Secret.type
    "Used to facilitate programmatic handling of secret data. More info: "
    "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"
)
_SECRET_DATA: Final = (  # Secret.data
    "Data contains the secret data. Each key must consist of alphanumeric characters, '-', "
    "'_' or '.'. The serialized form of the secret data is a base64 encoded string, "
    "representing the arbitrary (possibly non-string) data value here. Described in "
    "https://tools.ietf.org/html/rfc4648#section-4"
)
_SA_SECRETS: Final = (  # ServiceAccount.secrets
    "Secrets is a list of the secrets in the same namespace that pods running using this "
    "ServiceAccount are allowed to use. Pods are only limited to this list if this service "
    'account has a "kubernetes.io/enforce-mountable-secrets" annotation set to "true". The '
    '"kubernetes.io/enforce-mountable-secrets" annotation is deprecated since v1.32. Prefer '
    "separate namespaces to isolate access to mounted secrets. This field should not be used "
    "to find auto-generated service account token secrets for use outside of pods. Instead, "
    "tokens can be requested directly using the TokenRequest API, or service account token "
    "secrets can be manually created. More info: "
    "https://kubernetes.io/docs/concepts/configuration/secret"
)
_DEPLOY_UPDATED_REPLICAS: Final = (  # DeploymentStatus.updatedReplicas
    "Total number of non-terminating pods targeted by this deployment that have the desired template spec."
)
_DEPLOY_AVAILABLE_REPLICAS: Final = (  # DeploymentStatus.availableReplicas
    "Total number of available non-terminating pods (ready for at least minReadySeconds) "
    "targeted by this deployment."
)
_DEPLOY_SELECTOR: Final = (  # DeploymentSpec.selector
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be "
    "the ones affected by this deployment. It must match the pod template's labels."
)
_DS_DESIRED: Final = (  # DaemonSetStatus.desiredNumberScheduled
    "The total number of nodes that should be running the daemon pod (including nodes correctly "
    "running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"
)
_DS_CURRENT: Final = (  # DaemonSetStatus.currentNumberScheduled
    "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. "
    "More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"
)
_DS_READY: Final = (  # DaemonSetStatus.numberReady
    "numberReady is the number of nodes that should be running the daemon pod and have one or more of "
    "the daemon pod running with a Ready Condition."
)
_DS_UPDATED: Final = (  # DaemonSetStatus.updatedNumberScheduled
    "The total number of nodes that are running updated daemon pod"
)
_DS_AVAILABLE: Final = (  # DaemonSetStatus.numberAvailable
    "The number of nodes that should be running the daemon pod and have one or more of the daemon pod "
    "running and available (ready for at least spec.minReadySeconds)"
)
_POD_NODE_SELECTOR: Final = (  # PodSpec.nodeSelector
    "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must "
    "match a node's labels for the pod to be scheduled on that node. More info: "
    "https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"
)
_DS_SELECTOR: Final = (  # DaemonSetSpec.selector
    "A label query over pods that are managed by the daemon set. Must match in order to be controlled. "
    "It must match the pod template's labels. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
)
_CR_REVISION: Final = "Revision indicates the revision of the state represented by Data."
_JOB_STATUS_SUCCEEDED: Final = (  # JobStatus.succeeded
    "The number of pods which reached phase Succeeded. The value increases monotonically for a given "
    "spec. However, it may decrease in reaction to scale down of elastic indexed jobs."
)
_JOB_SELECTOR: Final = (  # JobSpec.selector
    "A label query over pods that should match the pod count. Normally, the system sets this field for "
    "you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
)
_CRONJOB_SCHEDULE: Final = (  # CronJobSpec.schedule
    "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."
)
_CRONJOB_TIME_ZONE: Final = (  # CronJobSpec.timeZone
    "The time zone name for the given schedule, see "
    "https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default "
    "to the time zone of the kube-controller-manager process. The set of valid time zone names and the "
    "time zone offset is loaded from the system-wide time zone database by the API server during CronJob "
    "validation and the controller manager during execution. If no system-wide time zone database can be "
    "found a bundled version of the database is used instead. If the time zone name becomes invalid "
    "during the lifetime of a CronJob or due to a change in host configuration, the controller will stop "
    "creating new new Jobs and will create a system event with the reason UnknownTimeZone. More "
    "information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones"
)
_CRONJOB_SUSPEND: Final = (  # CronJobSpec.suspend
    "This flag tells the controller to suspend subsequent executions, it does not apply to already "
    "started executions.  Defaults to false."
)
_CRONJOB_ACTIVE: Final = "A list of pointers to currently running jobs."  # CronJobStatus.active
_CRONJOB_LAST_SCHEDULE: Final = (  # CronJobStatus.lastScheduleTime
    "Information when was the last time the job was successfully scheduled."
)
_CONFIGMAP_DATA: Final = (  # ConfigMap.data
    "Data contains the configuration data. Each key must consist of alphanumeric characters, "
    "'-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. "
    "The keys stored in Data must not overlap with the keys in the BinaryData field, this is "
    "enforced during validation process."
)
_ROLEBINDING_ROLE_REF: Final = (  # RoleBinding.roleRef
    "roleRef can reference a Role in the current namespace or a ClusterRole in the global "
    "namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This "
    "field is immutable."
)
_CLUSTERROLEBINDING_ROLE_REF: Final = (  # ClusterRoleBinding.roleRef
    "roleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot "
    "be resolved, the Authorizer must return an error. This field is immutable."
)
_LEASE_HOLDER: Final = (  # LeaseSpec.holderIdentity
    "holderIdentity contains the identity of the holder of a current lease. If Coordinated "
    "Leader Election is used, the holder identity must be equal to the elected "
    "LeaseCandidate.metadata.name field."
)
_PC_VALUE: Final = (  # PriorityClass.value
    "value represents the integer value of this priority class. This is the actual priority that "
    "pods receive when they have the name of this class in their pod spec."
)
_PC_GLOBAL_DEFAULT: Final = (  # PriorityClass.globalDefault
    "globalDefault specifies whether this PriorityClass should be considered as the default "
    "priority for pods that do not have any priority class. Only one PriorityClass can be marked "
    "as `globalDefault`. However, if more than one PriorityClasses exists with their "
    "`globalDefault` field set to true, the smallest value of such global default PriorityClasses "
    "will be used as the default priority."
)
_PC_PREEMPTION_POLICY: Final = (  # PriorityClass.preemptionPolicy
    "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, "
    "PreemptLowerPriority. Defaults to PreemptLowerPriority if unset."
)
# EndpointSlice's fields. Upstream's column definitions quote discovery/v1beta1's docs (printers.go);
# these are v1's, which differ in wording only (kubectl never shows a column's description).
_SLICE_ADDRESS_TYPE: Final = (  # EndpointSlice.addressType
    "addressType specifies the type of address carried by this EndpointSlice. All addresses in "
    "this slice must be the same type. This field is immutable after creation. The following "
    "address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: "
    "Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. (Deprecated) "
    "The EndpointSlice controller only generates, and kube-proxy only processes, slices of "
    'addressType "IPv4" and "IPv6". No semantics are defined for the "FQDN" type.'
)
_SLICE_PORTS: Final = (  # EndpointSlice.ports
    "ports specifies the list of network ports exposed by each endpoint in this slice. Each port "
    "must have a unique name. Each slice may include a maximum of 100 ports. Services always have "
    "at least 1 port, so EndpointSlices generated by the EndpointSlice controller will likewise "
    "always have at least 1 port. EndpointSlices used for other purposes may have an empty ports "
    "list."
)
_SLICE_ENDPOINTS: Final = (  # EndpointSlice.endpoints
    "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of "
    "1000 endpoints."
)
_FS_PRIORITY_LEVEL: Final = (  # PriorityLevelConfigurationReference.name
    "`name` is the name of the priority level configuration being referenced Required."
)
_FS_MATCHING_PRECEDENCE: Final = (  # FlowSchemaSpec.matchingPrecedence
    "`matchingPrecedence` is used to choose among the FlowSchemas that match a given "
    "request. The chosen FlowSchema is among those with the numerically lowest (which we "
    "take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must "
    "be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to "
    "1000 as default."
)
_FS_DISTINGUISHER: Final = (  # FlowSchemaSpec.distinguisherMethod
    "`distinguisherMethod` defines how to compute the flow distinguisher for requests that "
    "match this schema. `nil` specifies that the distinguisher is disabled and thus will "
    "always be the empty string."
)
_PL_TYPE: Final = (  # PriorityLevelConfigurationSpec.type
    "`type` indicates whether this priority level is subject to limitation on request "
    'execution.  A value of `"Exempt"` means that requests of this priority level are not '
    "subject to a limit (and thus are never queued) and do not detract from the capacity "
    'made available to other priority levels.  A value of `"Limited"` means that (a) '
    "requests of this priority level _are_ subject to limits and (b) some of the server's "
    "limited capacity is made available exclusively to this priority level. Required."
)
_PL_NCS: Final = (  # LimitedPriorityLevelConfiguration.nominalConcurrencyShares
    "`nominalConcurrencyShares` (NCS) contributes to the computation of the "
    "NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution "
    "seats available at this priority level. This is used both for requests dispatched from "
    "this priority level as well as requests dispatched from other priority levels borrowing "
    "seats from this level. The server's concurrency limit (ServerCL) is divided among the "
    "Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( "
    "ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers "
    "mean a larger nominal concurrency limit, at the expense of every other priority "
    "level.\n\nIf not specified, this field defaults to a value of 30.\n\nSetting this field to "
    'zero supports the construction of a "jail" for this priority level that is used to hold '
    "some request(s)"
)
_PL_QUEUES: Final = (  # QueuingConfiguration.queues
    "`queues` is the number of queues for this priority level. The queues exist "
    "independently at each apiserver. The value must be positive.  Setting it to 1 "
    "effectively precludes shufflesharding and thus makes the distinguisher method of "
    "associated flow schemas irrelevant.  This field has a default value of 64."
)
_PL_HAND_SIZE: Final = (  # QueuingConfiguration.handSize
    "`handSize` is a small positive number that configures the shuffle sharding of requests "
    "into queues.  When enqueuing a request at this priority level the request's flow "
    "identifier (a string pair) is hashed and the hash value is used to shuffle the list of "
    "queues and deal a hand of the size specified here.  The request is put into one of the "
    "shortest queues in that hand. `handSize` must be no larger than `queues`, and should be "
    "significantly smaller (so that a few heavy flows do not saturate most of the queues).  "
    "See the user-facing documentation for more extensive guidance on setting this field.  "
    "This field has a default value of 8."
)
_PL_QUEUE_LENGTH_LIMIT: Final = (  # QueuingConfiguration.queueLengthLimit
    "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given "
    "queue of this priority level at a time; excess requests are rejected.  This value must "
    "be positive.  If not specified, it will be defaulted to 50."
)


# -- columns ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Column:
    """One ``metav1.TableColumnDefinition``.

    ``type`` is an OpenAPI type ("string", "integer", "number", "boolean", "date"); ``format`` is
    "name" for the column holding the object's name; ``priority`` 1 marks ``-o wide`` columns.
    """

    name: str
    type: str = "string"
    format: str = ""
    description: str = ""
    priority: int = 0

    def to_json(self) -> dict[str, Any]:
        """The ``columnDefinitions`` entry (no field is omitted when empty, as upstream)."""
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


# -- time: translateTimestampSince and duration.HumanDuration ---------------------------------------

_NANOS_PER_SECOND: Final = 1_000_000_000


def _nanoseconds(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * _NANOS_PER_SECOND + delta.microseconds * 1_000


def human_duration(delta: timedelta) -> str:
    """``duration.HumanDuration``: ~2-3 significant figures ("70s", "3m10s", "2d1h", "2y1d").

    Up to two seconds in the future reads as "0s" (clock skew); further ahead is "<invalid>".
    """
    nanos = _nanoseconds(delta)
    seconds = -(-nanos // _NANOS_PER_SECOND) if nanos < 0 else nanos // _NANOS_PER_SECOND
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = nanos // (60 * _NANOS_PER_SECOND)
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = nanos // (3600 * _NANOS_PER_SECOND)
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if rest == 0 else f"{hours // 24 // 365}y{rest}d"
    return f"{hours // 24 // 365}y"


def _aware(now: datetime) -> datetime:
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)


def translate_timestamp_since(value: Any, now: datetime) -> str:
    """The AGE of a timestamp: ``<unknown>`` when unset, else ``human_duration(now - value)``."""
    timestamp = value if isinstance(value, datetime) else parse_time(value)
    if timestamp is None:
        return "<unknown>"
    return human_duration(_aware(now) - timestamp)


# -- small readers for the JSON form -----------------------------------------------------------------


def _get(obj: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _name(obj: Object) -> str:
    return _str(_get(obj, "metadata", "name"))


def _age(obj: Object, now: datetime) -> str:
    return translate_timestamp_since(_get(obj, "metadata", "creationTimestamp"), now)


def _later(current: datetime | None, candidate: Any) -> datetime | None:
    """``if current.Before(candidate) { current = candidate }`` with Go's zero time as None."""
    parsed = parse_time(candidate)
    if parsed is None:
        return current
    return parsed if current is None or current < parsed else current


def _layout_containers(containers: Any) -> tuple[str, str]:
    """``layoutContainerCells``: names and images, comma-separated."""
    items = [_map(c) for c in _list(containers)]
    return ",".join(_str(c.get("name")) for c in items), ",".join(_str(c.get("image")) for c in items)


def _join_host_port(host: str, port: int) -> str:
    """Go's ``net.JoinHostPort``: IPv6 hosts in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# -- pods -------------------------------------------------------------------------------------------


def _is_restartable_init_container(container: Any) -> bool:
    """A sidecar: an init container with ``restartPolicy: Always`` (``IsRestartableInitContainer``)."""
    return isinstance(container, Mapping) and container.get("restartPolicy") == "Always"


def _condition_status(conditions: Any, condition_type: str) -> str | None:
    for condition in _list(conditions):
        if _map(condition).get("type") == condition_type:
            return _str(_map(condition).get("status"))
    return None


def _has_pod_ready_condition(conditions: Any) -> bool:
    return any(
        _map(condition).get("type") == "Ready" and _map(condition).get("status") == "True"
        for condition in _list(conditions)
    )


def _pod_row(pod: Object, now: datetime) -> list[Any]:
    # printPod, pkg/printers/internalversion/printers.go
    spec, status = _map(pod.get("spec")), _map(pod.get("status"))
    init_specs = [_map(c) for c in _list(spec.get("initContainers"))]
    restarts = 0
    restartable_init_restarts = 0
    total_containers = len(_list(spec.get("containers")))
    ready_containers = 0
    last_restart: datetime | None = None
    last_restartable_init_restart: datetime | None = None

    phase = _str(status.get("phase"))
    reason = _str(status.get("reason")) or phase
    for condition in _list(status.get("conditions")):
        condition = _map(condition)
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    init_containers = {_str(c.get("name")): c for c in init_specs}
    total_containers += sum(1 for c in init_specs if _is_restartable_init_container(c))

    initializing = False
    for i, container_status in enumerate(_list(status.get("initContainerStatuses"))):
        container_status = _map(container_status)
        restart_count = _int(container_status.get("restartCount"))
        last_terminated = _get(container_status, "lastState", "terminated")
        restarts += restart_count
        if isinstance(last_terminated, Mapping):
            last_restart = _later(last_restart, last_terminated.get("finishedAt"))
        restartable = _is_restartable_init_container(init_containers.get(_str(container_status.get("name"))))
        if restartable:
            restartable_init_restarts += restart_count
            if isinstance(last_terminated, Mapping):
                last_restartable_init_restart = _later(
                    last_restartable_init_restart, last_terminated.get("finishedAt")
                )
        terminated = _get(container_status, "state", "terminated")
        waiting = _get(container_status, "state", "waiting")
        if isinstance(terminated, Mapping) and _int(terminated.get("exitCode")) == 0:
            continue
        if restartable and container_status.get("started") is True:
            if container_status.get("ready") is True:
                ready_containers += 1
            continue
        if isinstance(terminated, Mapping):  # initialization failed
            if not _str(terminated.get("reason")):
                if _int(terminated.get("signal")) != 0:
                    reason = f"Init:Signal:{_int(terminated.get('signal'))}"
                else:
                    reason = f"Init:ExitCode:{_int(terminated.get('exitCode'))}"
            else:
                reason = "Init:" + _str(terminated.get("reason"))
        elif (
            isinstance(waiting, Mapping)
            and _str(waiting.get("reason"))
            and waiting.get("reason") != "PodInitializing"
        ):
            reason = "Init:" + _str(waiting.get("reason"))
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _condition_status(status.get("conditions"), "Initialized") == "True":
        restarts = restartable_init_restarts
        last_restart = last_restartable_init_restart
        has_running = False
        for container_status in reversed(_list(status.get("containerStatuses"))):
            container_status = _map(container_status)
            restarts += _int(container_status.get("restartCount"))
            last_terminated = _get(container_status, "lastState", "terminated")
            if isinstance(last_terminated, Mapping):
                last_restart = _later(last_restart, last_terminated.get("finishedAt"))
            waiting = _get(container_status, "state", "waiting")
            terminated = _get(container_status, "state", "terminated")
            running = _get(container_status, "state", "running")
            if isinstance(waiting, Mapping) and _str(waiting.get("reason")):
                reason = _str(waiting.get("reason"))
            elif isinstance(terminated, Mapping) and _str(terminated.get("reason")):
                reason = _str(terminated.get("reason"))
            elif isinstance(terminated, Mapping):
                if _int(terminated.get("signal")) != 0:
                    reason = f"Signal:{_int(terminated.get('signal'))}"
                else:
                    reason = f"ExitCode:{_int(terminated.get('exitCode'))}"
            elif container_status.get("ready") is True and isinstance(running, Mapping):
                has_running = True
                ready_containers += 1
        # Back to "Running" if at least one container still runs.
        if reason == "Completed" and has_running:
            reason = "Running" if _has_pod_ready_condition(status.get("conditions")) else "NotReady"

    deleting = _get(pod, "metadata", "deletionTimestamp") is not None
    if deleting and status.get("reason") == "NodeLost":  # node.NodeUnreachablePodReason
        reason = "Unknown"
    elif deleting and phase not in ("Failed", "Succeeded"):
        reason = "Terminating"

    restarts_text = str(restarts)
    if restarts != 0 and last_restart is not None:
        restarts_text = f"{restarts} ({translate_timestamp_since(last_restart, now)} ago)"

    readiness_gates = "<none>"
    gates = _list(spec.get("readinessGates"))
    if gates:
        true_conditions = sum(
            1
            for gate in gates
            if _condition_status(status.get("conditions"), _str(_map(gate).get("conditionType"))) == "True"
        )
        readiness_gates = f"{true_conditions}/{len(gates)}"

    return [
        _name(pod),
        f"{ready_containers}/{total_containers}",
        reason,
        restarts_text,
        _age(pod, now),
        pod_ip(pod) or "<none>",
        _str(spec.get("nodeName")) or "<none>",
        _str(status.get("nominatedNodeName")) or "<none>",
        readiness_gates,
    ]


def _pod_conditions(pod: Object) -> list[dict[str, Any]]:
    phase = _get(pod, "status", "phase")
    if phase == "Succeeded":
        return [_completed_condition("Succeeded", "The pod has completed successfully.")]
    if phase == "Failed":
        return [_completed_condition("Failed", "The pod failed.")]
    return []


def _completed_condition(reason: str, message: str) -> dict[str, Any]:
    # metav1.TableRowCondition{Type: RowCompleted, Status: ConditionTrue, ...}
    return {"type": "Completed", "status": "True", "reason": reason, "message": message}


# -- nodes ------------------------------------------------------------------------------------------

_NODE_ROLE_PREFIX: Final = "node-role.kubernetes.io/"
_NODE_ROLE_LABEL: Final = "kubernetes.io/role"


def node_roles(node: Object) -> list[str]:
    """``findNodeRoles``: ``node-role.kubernetes.io/<role>`` keys and the ``kubernetes.io/role`` value."""
    roles = set()
    for key, value in _map(_get(node, "metadata", "labels")).items():
        if key.startswith(_NODE_ROLE_PREFIX):
            role = key[len(_NODE_ROLE_PREFIX) :]
            if role:
                roles.add(role)
        elif key == _NODE_ROLE_LABEL and value:
            roles.add(str(value))
    return sorted(roles)


def _node_address(node: Object, address_type: str) -> str:
    for address in _list(_get(node, "status", "addresses")):
        if _map(address).get("type") == address_type:
            return _str(_map(address).get("address"))
    return "<none>"


def _node_row(node: Object, now: datetime) -> list[Any]:
    conditions: dict[str, Mapping[str, Any]] = {}
    for condition in _list(_get(node, "status", "conditions")):
        conditions[_str(_map(condition).get("type"))] = _map(condition)
    status = []
    for condition_type in ("Ready",):  # NodeAllConditions
        if condition_type in conditions:
            healthy = conditions[condition_type].get("status") == "True"
            status.append(condition_type if healthy else "Not" + condition_type)
    if not status:
        status.append("Unknown")
    if _get(node, "spec", "unschedulable") is True:
        status.append("SchedulingDisabled")
    info = _map(_get(node, "status", "nodeInfo"))
    return [
        _name(node),
        ",".join(status),
        ",".join(node_roles(node)) or "<none>",
        _age(node, now),
        _str(info.get("kubeletVersion")),
        _node_address(node, "InternalIP"),
        _node_address(node, "ExternalIP"),
        _str(info.get("osImage")) or "<unknown>",
        _str(info.get("kernelVersion")) or "<unknown>",
        _str(info.get("containerRuntimeVersion")) or "<unknown>",
    ]


# -- services and endpoints -------------------------------------------------------------------------


def _load_balancer_ips(service: Object) -> str:
    """``loadBalancerStatusStringer`` with ``wide`` true (the server never clips)."""
    found = set()
    for ingress in _list(_get(service, "status", "loadBalancer", "ingress")):
        ingress = _map(ingress)
        if _str(ingress.get("ip")):
            found.add(_str(ingress.get("ip")))
        elif _str(ingress.get("hostname")):
            found.add(_str(ingress.get("hostname")))
    return ",".join(sorted(found))


def _service_external_ip(service: Object) -> str:
    spec = _map(service.get("spec"))
    external_ips = [_str(ip) for ip in _list(spec.get("externalIPs"))]
    service_type = spec.get("type")
    if service_type in ("ClusterIP", "NodePort"):
        return ",".join(external_ips) if external_ips else "<none>"
    if service_type == "LoadBalancer":
        lb_ips = _load_balancer_ips(service)
        if external_ips:
            return ",".join(([*lb_ips.split(",")] if lb_ips else []) + external_ips)
        return lb_ips or "<pending>"
    if service_type == "ExternalName":
        return _str(spec.get("externalName"))
    return "<unknown>"


def _service_ports(ports: Any) -> str:
    """``makePortString``: ``80/TCP``, ``443:30443/TCP`` when a node port is set."""
    pieces = []
    for port in _list(ports):
        port = _map(port)
        node_port = _int(port.get("nodePort"))
        protocol = _str(port.get("protocol"))
        if node_port > 0:
            pieces.append(f"{_int(port.get('port'))}:{node_port}/{protocol}")
        else:
            pieces.append(f"{_int(port.get('port'))}/{protocol}")
    return ",".join(pieces)


def _service_row(service: Object, now: datetime) -> list[Any]:
    spec = _map(service.get("spec"))
    # The internal type keeps clusterIPs; a v1 object with only clusterIP set means the same.
    cluster_ips = _list(spec.get("clusterIPs"))
    internal_ip = _str(cluster_ips[0]) if cluster_ips else _str(spec.get("clusterIP"))
    return [
        _name(service),
        _str(spec.get("type")),
        internal_ip or "<none>",
        _service_external_ip(service),
        _service_ports(spec.get("ports")) or "<none>",
        _age(service, now),
        format_labels(_map(spec.get("selector"))),
    ]


def format_endpoints(endpoints: Object) -> str:
    """``formatEndpoints`` with all ports: up to three ``ip:port``, then `` + N more...``."""
    subsets = _list(endpoints.get("subsets"))
    if not subsets:
        return "<none>"
    shown: list[str] = []
    limit, more, count = 3, False, 0
    for subset in subsets:
        addresses = _list(_map(subset).get("addresses"))
        ports = _list(_map(subset).get("ports"))
        if not ports:  # headless services may have no ports
            count += len(addresses)
            for address in addresses:
                if len(shown) == limit:
                    more = True
                    break
                shown.append(_str(_map(address).get("ip")))
            continue
        for port in ports:
            count += len(addresses)
            for address in addresses:
                if len(shown) == limit:
                    more = True
                    break
                shown.append(_join_host_port(_str(_map(address).get("ip")), _int(_map(port).get("port"))))
    text = ",".join(shown)
    return f"{text} + {count - limit} more..." if more else text


def _list_with_more(shown: list[str], more: bool, count: int, limit: int) -> str:
    """``listWithMoreString``: the first ``limit`` entries, `` + N more...``, or ``<unset>``."""
    text = ",".join(shown)
    if more:
        return f"{text} + {count - limit} more..."
    return text or "<unset>"


def format_discovery_ports(ports: Any) -> str:
    """``formatDiscoveryPorts``: an EndpointSlice's port numbers (a name if unnumbered, else ``*``)."""
    shown: list[str] = []
    limit, more, count = 3, False, 0
    for port in _list(ports):
        if len(shown) < limit:
            number, name = _map(port).get("port"), _map(port).get("name")
            shown.append(str(number) if number is not None else name if name is not None else "*")
        elif len(shown) == limit:
            more = True
        count += 1
    return _list_with_more(shown, more, count, limit)


def format_discovery_endpoints(endpoints: Any) -> str:
    """``formatDiscoveryEndpoints``: the addresses of an EndpointSlice's endpoints, ready or not."""
    shown: list[str] = []
    limit, more, count = 3, False, 0
    for endpoint in _list(endpoints):
        for address in _list(_map(endpoint).get("addresses")):
            if len(shown) < limit:
                shown.append(_str(address))
            elif len(shown) == limit:
                more = True
            count += 1
    return _list_with_more(shown, more, count, limit)


# -- events -----------------------------------------------------------------------------------------


def _as_core_event(event: Object) -> Object:
    """An events.k8s.io/v1 Event in core/v1 field names (``Convert_v1_Event_To_core_Event``)."""
    return {
        "metadata": event.get("metadata"),
        "involvedObject": event.get("regarding"),
        "reason": event.get("reason"),
        "message": event.get("note"),
        "source": event.get("deprecatedSource"),
        "firstTimestamp": event.get("deprecatedFirstTimestamp"),
        "lastTimestamp": event.get("deprecatedLastTimestamp"),
        "count": event.get("deprecatedCount"),
        "type": event.get("type"),
        "eventTime": event.get("eventTime"),
        "series": event.get("series"),
        "reportingComponent": event.get("reportingController"),
        "reportingInstance": event.get("reportingInstance"),
    }


def _event_source(event: Object) -> str:
    """``formatEventSource``: component (or reporting controller), then ``, host`` if any."""
    source = _map(event.get("source"))
    component = _str(source.get("component")) or _str(event.get("reportingComponent"))
    instance = _str(source.get("host")) or _str(event.get("reportingInstance"))
    return component if not instance else f"{component}, {instance}"


def _event_row(event: Object, now: datetime) -> list[Any]:
    """``printEvent`` on a core/v1 Event (events.k8s.io ones go through ``_as_core_event`` first)."""
    first_seen = translate_timestamp_since(event.get("firstTimestamp"), now)
    if parse_time(event.get("firstTimestamp")) is None:
        first_seen = translate_timestamp_since(event.get("eventTime"), now)
    last_seen = translate_timestamp_since(event.get("lastTimestamp"), now)
    if parse_time(event.get("lastTimestamp")) is None:
        last_seen = first_seen
    count = _int(event.get("count"))
    series = event.get("series")
    if isinstance(series, Mapping):
        last_seen = translate_timestamp_since(series.get("lastObservedTime"), now)
        count = _int(series.get("count"))
    elif count == 0:
        count = 1  # singleton events have no count in the new API
    involved = _map(event.get("involvedObject"))
    kind = _str(involved.get("kind")).lower()
    target = f"{kind}/{_str(involved.get('name'))}" if _str(involved.get("name")) else kind
    return [
        last_seen,
        _str(event.get("type")),
        _str(event.get("reason")),
        target,
        _str(involved.get("fieldPath")),
        _event_source(event),
        _str(event.get("message")).strip(),
        first_seen,
        count,
        _name(event),
    ]


# -- workloads --------------------------------------------------------------------------------------


def _deployment_row(deployment: Object, now: datetime) -> list[Any]:
    spec, status = _map(deployment.get("spec")), _map(deployment.get("status"))
    try:
        selector = str(label_selector_from_object(spec.get("selector")))
    except SelectorError:
        selector = "<invalid>"
    names, images = _layout_containers(_get(spec, "template", "spec", "containers"))
    return [
        _name(deployment),
        f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'))}",
        _int(status.get("updatedReplicas")),
        _int(status.get("availableReplicas")),
        _age(deployment, now),
        names,
        images,
        selector,
    ]


def _replica_set_row(replica_set: Object, now: datetime) -> list[Any]:
    spec, status = _map(replica_set.get("spec")), _map(replica_set.get("status"))
    names, images = _layout_containers(_get(spec, "template", "spec", "containers"))
    return [
        _name(replica_set),
        _int(spec.get("replicas")),
        _int(status.get("replicas")),
        _int(status.get("readyReplicas")),
        _age(replica_set, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _daemon_set_row(daemon_set: Object, now: datetime) -> list[Any]:
    """``printDaemonSet``: the status counts, the template's node selector."""
    spec, status = _map(daemon_set.get("spec")), _map(daemon_set.get("status"))
    names, images = _layout_containers(_get(spec, "template", "spec", "containers"))
    return [
        _name(daemon_set),
        _int(status.get("desiredNumberScheduled")),
        _int(status.get("currentNumberScheduled")),
        _int(status.get("numberReady")),
        _int(status.get("updatedNumberScheduled")),
        _int(status.get("numberAvailable")),
        format_labels(_map(_get(spec, "template", "spec", "nodeSelector"))),
        _age(daemon_set, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _stateful_set_row(stateful_set: Object, now: datetime) -> list[Any]:
    """``printStatefulSet``: ready of desired."""
    spec, status = _map(stateful_set.get("spec")), _map(stateful_set.get("status"))
    names, images = _layout_containers(_get(spec, "template", "spec", "containers"))
    return [
        _name(stateful_set),
        f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'))}",
        _age(stateful_set, now),
        names,
        images,
    ]


def _controller_revision_row(revision: Object, now: datetime) -> list[Any]:
    """``printControllerRevision``: the controller as ``kind.group/name`` (``formatResourceName``)."""
    controller = "<none>"
    for ref in _list(_get(revision, "metadata", "ownerReferences")):
        ref = _map(ref)
        if ref.get("controller"):
            group = _str(ref.get("apiVersion")).rpartition("/")[0]
            kind = _str(ref.get("kind"))
            group_kind = f"{kind}.{group}" if group else kind
            name = _str(ref.get("name"))
            controller = f"{group_kind.lower()}/{name}" if group_kind else name
            break
    return [_name(revision), controller, _int(revision.get("revision")), _age(revision, now)]


def _job_condition_true(job: Object, condition_type: str) -> bool:
    """``hasJobCondition``: the first condition of that type, and whether it is True."""
    return _condition_status(_get(job, "status", "conditions"), condition_type) == "True"


def _job_row(job: Object, now: datetime) -> list[Any]:
    """``printJob``: completions as succeeded/wanted, a status from the conditions, the duration."""
    spec, status = _map(job.get("spec")), _map(job.get("status"))
    succeeded = _int(status.get("succeeded"))
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{_int(spec.get('completions'))}"
    elif _int(spec.get("parallelism")) > 1:
        completions = f"{succeeded}/1 of {_int(spec.get('parallelism'))}"
    else:
        completions = f"{succeeded}/1"
    started = parse_time(status.get("startTime"))
    finished = parse_time(status.get("completionTime"))
    if started is None:
        duration = ""
    elif finished is None:
        duration = human_duration(now - started)
    else:
        duration = human_duration(finished - started)
    if _job_condition_true(job, "Complete"):
        state = "Complete"
    elif _job_condition_true(job, "Failed"):
        state = "Failed"
    elif _get(job, "metadata", "deletionTimestamp"):
        state = "Terminating"
    elif _job_condition_true(job, "Suspended"):
        state = "Suspended"
    elif _job_condition_true(job, "FailureTarget"):
        state = "FailureTarget"
    elif _job_condition_true(job, "SuccessCriteriaMet"):
        state = "SuccessCriteriaMet"
    else:
        state = "Running"
    names, images = _layout_containers(_get(spec, "template", "spec", "containers"))
    return [
        _name(job),
        state,
        completions,
        duration,
        _age(job, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _cron_job_row(cron_job: Object, now: datetime) -> list[Any]:
    """``printCronJob``."""
    spec, status = _map(cron_job.get("spec")), _map(cron_job.get("status"))
    last = status.get("lastScheduleTime")
    suspend = spec.get("suspend")
    job_spec = _map(_get(spec, "jobTemplate", "spec"))
    names, images = _layout_containers(_get(job_spec, "template", "spec", "containers"))
    return [
        _name(cron_job),
        _str(spec.get("schedule")),
        _str(spec.get("timeZone")) if spec.get("timeZone") is not None else "<none>",
        ("True" if suspend else "False") if isinstance(suspend, bool) else "<unset>",
        len(_list(status.get("active"))),
        translate_timestamp_since(last, now) if last is not None else "<none>",
        _age(cron_job, now),
        names,
        images,
        format_label_selector(job_spec.get("selector")),
    ]


def _quantity(value: Any) -> str:
    """A ``resource.Quantity`` through ``String()`` (its canonical form)."""
    try:
        return parse_json_quantity(value).canonical()
    except QuantityError:
        return _str(value)


def _hpa_target(spec: Mapping[str, Any], status: Mapping[str, Any] | None) -> str:
    """One metric of ``formatHPAMetrics``: ``cpu: <unknown>/80%``, ``<unknown>/10 (avg)``..."""
    kind = spec.get("type")
    if kind in ("External", "Object"):
        source = _map(spec.get(kind.lower()))
        current = _map(_map(status).get(kind.lower())).get("current") if status else None
        target = _map(source.get("target"))
        if target.get("averageValue") is not None:
            shown = "<unknown>"
            if current is not None and _map(current).get("averageValue") is not None:
                shown = _quantity(_map(current)["averageValue"])
            return f"{shown}/{_quantity(target['averageValue'])} (avg)"
        shown = "<unknown>" if current is None else _quantity(_map(current).get("value", "0"))
        return f"{shown}/{_quantity(target.get('value', '0'))}"
    if kind == "Pods":
        current = _map(_map(status).get("pods")).get("current") if status else None
        shown = "<unknown>" if current is None else _quantity(_map(current).get("averageValue", "0"))
        return f"{shown}/{_quantity(_map(_map(spec.get('pods')).get('target')).get('averageValue', '0'))}"
    if kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        source = _map(spec.get(field))
        current = _map(_map(status).get(field)).get("current") if status and _map(status).get(field) else None
        target = _map(source.get("target"))
        name = _str(source.get("name"))
        if target.get("averageValue") is not None:
            shown = "<unknown>" if current is None else _quantity(_map(current).get("averageValue", "0"))
            return f"{name}: {shown}/{_quantity(target['averageValue'])}"
        shown = "<unknown>"
        if current is not None and _map(current).get("averageUtilization") is not None:
            shown = f"{_int(_map(current)['averageUtilization'])}%"
        utilization = target.get("averageUtilization")
        wanted = "<auto>" if utilization is None else f"{_int(utilization)}%"
        return f"{name}: {shown}/{wanted}"
    return "<unknown type>"


def format_hpa_metrics(specs: Any, statuses: Any) -> str:
    """``formatHPAMetrics``: the first two metrics as current/target, then ``+ N more...``."""
    specs, statuses = _list(specs), _list(statuses)
    if not specs:
        return "<none>"
    shown = [
        _hpa_target(_map(spec), _map(statuses[i]) if i < len(statuses) else None)
        for i, spec in enumerate(specs)
    ]
    if len(shown) > 2:
        return f"{', '.join(shown[:2])} + {len(shown) - 2} more..."
    return ", ".join(shown)


def _horizontal_pod_autoscaler_row(hpa: Object, now: datetime) -> list[Any]:
    """``printHorizontalPodAutoscaler`` (on the internal, v2-shaped object: v1 is converted first)."""
    if hpa.get("apiVersion") == "autoscaling/v1":
        hpa = v1_to_v2(dict(hpa))
    spec = _map(hpa.get("spec"))
    ref = _map(spec.get("scaleTargetRef"))
    min_replicas = spec.get("minReplicas")
    return [
        _name(hpa),
        f"{_str(ref.get('kind'))}/{_str(ref.get('name'))}",
        format_hpa_metrics(spec.get("metrics"), _get(hpa, "status", "currentMetrics")),
        "<unset>" if min_replicas is None else str(_int(min_replicas)),
        _int(spec.get("maxReplicas")),
        _int(_get(hpa, "status", "currentReplicas")),
        _age(hpa, now),
    ]


def _pod_disruption_budget_row(pdb: Object, now: datetime) -> list[Any]:
    """``printPodDisruptionBudget``: each bound as ``IntOrString.String()``, ``N/A`` when unset."""
    spec = _map(pdb.get("spec"))
    bounds = [
        "N/A" if spec.get(field) is None else str(spec[field]) for field in ("minAvailable", "maxUnavailable")
    ]
    return [_name(pdb), *bounds, _int(_get(pdb, "status", "disruptionsAllowed")), _age(pdb, now)]


# -- the rest ---------------------------------------------------------------------------------------


def _secret_row(secret: Object, now: datetime) -> list[Any]:
    # The internal Secret holds data with stringData merged in (v1 conversion), so count the union.
    keys = set(_map(secret.get("data"))) | set(_map(secret.get("stringData")))
    return [_name(secret), _str(secret.get("type")), len(keys), _age(secret, now)]


def _binding_row(binding: Object, now: datetime) -> list[Any]:
    """RoleBinding and ClusterRoleBinding; ``rbac.SubjectsStrings`` groups the subjects by kind."""
    role_ref = _map(binding.get("roleRef"))
    users, groups, service_accounts = [], [], []
    for subject in _list(binding.get("subjects")):
        subject = _map(subject)
        kind, name = subject.get("kind"), _str(subject.get("name"))
        if kind == "ServiceAccount":
            service_accounts.append(f"{_str(subject.get('namespace'))}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return [
        _name(binding),
        f"{_str(role_ref.get('kind'))}/{_str(role_ref.get('name'))}",
        _age(binding, now),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(service_accounts),
    ]


def _flow_schema_row(flow_schema: Object, now: datetime) -> list[Any]:
    spec = _map(flow_schema.get("spec"))
    distinguisher = _get(spec, "distinguisherMethod")
    dangling = "?"
    for condition in _list(_get(flow_schema, "status", "conditions")):
        if _map(condition).get("type") == "Dangling":
            dangling = _str(_map(condition).get("status"))
            break
    return [
        _name(flow_schema),
        _str(_get(spec, "priorityLevelConfiguration", "name")),
        _int(spec.get("matchingPrecedence")),
        _str(_map(distinguisher).get("type")) if isinstance(distinguisher, Mapping) else "<none>",
        _age(flow_schema, now),
        dangling,
    ]


def _flow_schema_order(flow_schema: Object) -> tuple[int, str]:
    # apihelpers.FlowSchemaSequence: lowest matchingPrecedence first, then by name.
    return _int(_get(flow_schema, "spec", "matchingPrecedence")), _name(flow_schema)


def _priority_level_row(level: Object, now: datetime) -> list[Any]:
    spec = _map(level.get("spec"))
    shares: Any = "<none>"
    queues: Any = "<none>"
    hand_size: Any = "<none>"
    queue_length_limit: Any = "<none>"
    limited = spec.get("limited")
    if isinstance(limited, Mapping):
        shares = _int(limited.get("nominalConcurrencyShares"))
        queuing = _get(limited, "limitResponse", "queuing")
        if isinstance(queuing, Mapping):
            queues = _int(queuing.get("queues"))
            hand_size = _int(queuing.get("handSize"))
            queue_length_limit = _int(queuing.get("queueLengthLimit"))
    return [
        _name(level),
        _str(spec.get("type")),
        shares,
        queues,
        hand_size,
        queue_length_limit,
        _age(level, now),
    ]


def _component_status_row(status: Object, now: datetime) -> list[Any]:
    """``printComponentStatus``: the ``Healthy`` condition as Healthy/Unhealthy, its message and error."""
    for condition in _list(status.get("conditions")):
        if _map(condition).get("type") == "Healthy":
            healthy = "Healthy" if condition.get("status") == "True" else "Unhealthy"
            return [_name(status), healthy, _str(condition.get("message")), _str(condition.get("error"))]
    return [_name(status), "Unknown", "", ""]


def _priority_class_row(priority_class: Object, now: datetime) -> list[Any]:
    """``printPriorityClass``: the value as an int64, globalDefault as a bool, the policy or ""."""
    global_default = priority_class.get("globalDefault")
    return [
        _name(priority_class),
        _int(priority_class.get("value")),
        global_default if isinstance(global_default, bool) else False,
        _age(priority_class, now),
        _str(priority_class.get("preemptionPolicy")),
    ]


def _default_row(obj: Object, now: datetime) -> list[Any]:
    # DefaultTableConvertor: the creation time itself, RFC 3339 in UTC (Go's zero time when unset).
    created = parse_time(_get(obj, "metadata", "creationTimestamp"))
    text = format_time(created.timestamp()) if created else "0001-01-01T00:00:00Z"
    return [_name(obj), text]


# -- replication controllers, pod templates, storage, networking ------------------------------------


def _replication_controller_row(rc: Object, now: datetime) -> list[Any]:
    """``printReplicationController``: the selector is a plain label map."""
    spec, status = _map(rc.get("spec")), _map(rc.get("status"))
    names, images = _layout_containers(_get(spec, "template", "spec", "containers"))
    return [
        _name(rc),
        _int(spec.get("replicas")),
        _int(status.get("replicas")),
        _int(status.get("readyReplicas")),
        _age(rc, now),
        names,
        images,
        format_labels(_map(spec.get("selector"))),
    ]


def _pod_template_row(template: Object, now: datetime) -> list[Any]:
    """``printPodTemplate``: no age column."""
    names, images = _layout_containers(_get(template, "template", "spec", "containers"))
    labels = _map(_get(template, "template", "metadata", "labels"))
    return [_name(template), names, images, format_labels(labels)]


#: ``helper.GetAccessModesAsString``: each mode once, in this order, by its short name.
_ACCESS_MODE_NAMES: Final = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)
_BETA_STORAGE_CLASS: Final = "volume.beta.kubernetes.io/storage-class"


def access_modes_text(modes: Any) -> str:
    present = {_str(mode) for mode in _list(modes)}
    return ",".join(short for mode, short in _ACCESS_MODE_NAMES if mode in present)


def _storage_class_of(obj: Object) -> str:
    """``GetPersistentVolume{,Claim}Class``: the beta annotation first, then ``spec.storageClassName``."""
    annotations = _map(_get(obj, "metadata", "annotations"))
    if _BETA_STORAGE_CLASS in annotations:
        return _str(annotations[_BETA_STORAGE_CLASS])
    return _str(_get(obj, "spec", "storageClassName"))


def _quantity_text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _persistent_volume_row(pv: Object, now: datetime) -> list[Any]:
    """``printPersistentVolume``."""
    spec, status = _map(pv.get("spec")), _map(pv.get("status"))
    claim_ref = spec.get("claimRef")
    claim = ""
    if isinstance(claim_ref, Mapping):
        claim = f"{_str(claim_ref.get('namespace'))}/{_str(claim_ref.get('name'))}"
    phase = _str(status.get("phase"))
    if _get(pv, "metadata", "deletionTimestamp") is not None:
        phase = "Terminating"
    return [
        _name(pv),
        _quantity_text(_map(spec.get("capacity")).get("storage", "0")),
        access_modes_text(spec.get("accessModes")),
        _str(spec.get("persistentVolumeReclaimPolicy")),
        phase,
        claim,
        _storage_class_of(pv),
        _str(spec.get("volumeAttributesClassName")) or "<unset>",
        _str(status.get("reason")),
        _age(pv, now),
        _str(spec.get("volumeMode")) or "<unset>",
    ]


def _persistent_volume_claim_row(pvc: Object, now: datetime) -> list[Any]:
    """``printPersistentVolumeClaim``: capacity and access modes only once bound to a volume."""
    spec, status = _map(pvc.get("spec")), _map(pvc.get("status"))
    phase = _str(status.get("phase"))
    if _get(pvc, "metadata", "deletionTimestamp") is not None:
        phase = "Terminating"
    capacity = access_modes = ""
    if _str(spec.get("volumeName")):
        access_modes = access_modes_text(status.get("accessModes"))
        capacity = _quantity_text(_map(status.get("capacity")).get("storage", "0"))
    return [
        _name(pvc),
        phase,
        _str(spec.get("volumeName")),
        capacity,
        access_modes,
        _storage_class_of(pvc),
        _str(spec.get("volumeAttributesClassName")) or "<unset>",
        _age(pvc, now),
        _str(spec.get("volumeMode")) or "<unset>",
    ]


def _storage_class_row(storage_class: Object, now: datetime) -> list[Any]:
    """``printStorageClass``: the default class is named ``standard (default)``."""
    annotations = _map(_get(storage_class, "metadata", "annotations"))
    name = _name(storage_class)
    if (
        annotations.get("storageclass.kubernetes.io/is-default-class") == "true"
        or annotations.get("storageclass.beta.kubernetes.io/is-default-class") == "true"
    ):
        name += " (default)"
    expansion = storage_class.get("allowVolumeExpansion")
    return [
        name,
        _str(storage_class.get("provisioner")),
        _str(storage_class.get("reclaimPolicy")) or "Delete",
        _str(storage_class.get("volumeBindingMode")) or "Immediate",
        expansion if isinstance(expansion, bool) else False,
        _age(storage_class, now),
    ]


def _ingress_hosts(rules: Any) -> str:
    """``formatHosts``: the first three hosts, ``*`` when none."""
    hosts: list[str] = []
    more = False
    items = _list(rules)
    for rule in items:
        if len(hosts) == 3:
            more = True
        host = _str(_map(rule).get("host"))
        if not more and host:
            hosts.append(host)
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(items) - 3} more..." if more else text


def _ingress_row(ingress: Object, now: datetime) -> list[Any]:
    """``printIngress`` (wide: the address is never clipped)."""
    spec = _map(ingress.get("spec"))
    addresses = set()
    for point in _list(_get(ingress, "status", "loadBalancer", "ingress")):
        point = _map(point)
        if _str(point.get("ip")):
            addresses.add(_str(point.get("ip")))
        elif _str(point.get("hostname")):
            addresses.add(_str(point.get("hostname")))
    class_name = spec.get("ingressClassName")
    return [
        _name(ingress),
        class_name if isinstance(class_name, str) else "<none>",
        _ingress_hosts(spec.get("rules")),
        ",".join(sorted(addresses)),
        "80, 443" if _list(spec.get("tls")) else "80",
        _age(ingress, now),
    ]


def _ingress_class_row(ingress_class: Object, now: datetime) -> list[Any]:
    """``printIngressClass``: parameters as ``Kind.group/name``."""
    spec = _map(ingress_class.get("spec"))
    parameters = "<none>"
    reference = spec.get("parameters")
    if isinstance(reference, Mapping):
        parameters = _str(reference.get("kind"))
        if isinstance(reference.get("apiGroup"), str):
            parameters += "." + _str(reference.get("apiGroup"))
        parameters += "/" + _str(reference.get("name"))
    return [_name(ingress_class), _str(spec.get("controller")), parameters, _age(ingress_class, now)]


def _network_policy_row(policy: Object, now: datetime) -> list[Any]:
    """``printNetworkPolicy``: an empty pod selector prints as ``<none>``."""
    return [
        _name(policy),
        format_label_selector(_map(_get(policy, "spec", "podSelector"))),
        _age(policy, now),
    ]


_CSR_SIGNER_NAME: Final = (  # CertificateSigningRequestSpec.signerName
    "signerName indicates the requested signer, and is a qualified name.\n\nList/watch requests for"
    ' CertificateSigningRequests can filter on this field using a "spec.signerName=NAME"'
    " fieldSelector.\n\nWell-known Kubernetes signers are:\n 1."
    ' "kubernetes.io/kube-apiserver-client": issues client certificates that can be used to'
    " authenticate to kube-apiserver.\n  Requests for this signer are never auto-approved by"
    ' kube-controller-manager, can be issued by the "csrsigning" controller in'
    ' kube-controller-manager.\n 2. "kubernetes.io/kube-apiserver-client-kubelet": issues client'
    " certificates that kubelets use to authenticate to kube-apiserver.\n  Requests for this signer"
    ' can be auto-approved by the "csrapproving" controller in kube-controller-manager, and can be'
    ' issued by the "csrsigning" controller in kube-controller-manager.\n 3.'
    ' "kubernetes.io/kubelet-serving" issues serving certificates that kubelets use to serve TLS'
    " endpoints, which kube-apiserver can connect to securely.\n  Requests for this signer are"
    ' never auto-approved by kube-controller-manager, and can be issued by the "csrsigning"'
    " controller in kube-controller-manager.\n\nMore details are available at"
    " https://k8s.io/docs/reference/access-authn-authz/certificate-signing-requests/#kubernetes-signers\n\nCustom"
    " signerNames can also be specified. The signer defines:\n 1. Trust distribution: how trust (CA"
    " bundles) are distributed.\n 2. Permitted subjects: and behavior when a disallowed subject is"
    " requested.\n 3. Required, permitted, or forbidden x509 extensions in the request (including"
    " whether subjectAltNames are allowed, which types, restrictions on allowed values) and"
    " behavior when a disallowed extension is requested.\n 4. Required, permitted, or forbidden key"
    " usages / extended key usages.\n 5. Expiration/certificate lifetime: whether it is fixed by"
    " the signer, configurable by the admin.\n 6. Whether or not requests for CA certificates are"
    " allowed."
)
_CSR_REQUEST: Final = (  # CertificateSigningRequestSpec.request
    'request contains an x509 certificate signing request encoded in a "CERTIFICATE REQUEST" PEM'
    " block. When serialized as JSON or YAML, the data is additionally base64-encoded."
)
_CSR_EXPIRATION_SECONDS: Final = (  # CertificateSigningRequestSpec.expirationSeconds
    "expirationSeconds is the requested duration of validity of the issued certificate. The"
    " certificate signer may issue a certificate with a different validity duration so a client"
    " must check the delta between the notBefore and and notAfter fields in the issued certificate"
    " to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known"
    " Kubernetes signers will honor this field as long as the requested duration is not greater"
    " than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the"
    " Kubernetes controller manager.\n\nCertificate signers may not honor this field for various"
    " reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree\n    "
    " implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than the"
    " requested duration\n  3. Signer whose configured minimum is longer than the requested"
    " duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes."
)
_CSR_CONDITIONS: Final = (  # CertificateSigningRequestStatus.conditions
    'conditions applied to the request. Known conditions are "Approved", "Denied", and "Failed".'
)


def _certificate_signing_request_row(csr: Object, now: datetime) -> list[Any]:
    """``printCertificateSigningRequest``: the requestor is ``spec.username``; CONDITION is
    ``extractCSRStatus`` (Pending, Approved or Denied, then ,Failed and ,Issued)."""
    spec = _map(csr.get("spec"))
    seconds = spec.get("expirationSeconds")
    return [
        _name(csr),
        _age(csr, now),
        _str(spec.get("signerName")) or "<none>",
        _str(spec.get("username")),
        human_duration(timedelta(seconds=seconds)) if isinstance(seconds, int) else "<none>",
        csr_status_text(csr),
    ]


# -- printers ---------------------------------------------------------------------------------------

RowFunction = Callable[[Object, datetime], list[Any]]


@dataclass(frozen=True, slots=True)
class Printer:
    """The columns of one resource and the function that fills a row for one object."""

    columns: tuple[Column, ...]
    render: RowFunction
    conditions_of: Callable[[Object], list[dict[str, Any]]] | None = None
    order_key: Callable[[Object], Any] | None = None

    def row(self, obj: Object, now: datetime) -> list[Any]:
        """The row's ``cells``, one per column (wide columns included), as upstream's JSON values."""
        return self.render(obj, _aware(now))

    def conditions(self, obj: Object) -> list[dict[str, Any]]:
        """The row's ``conditions`` (only pods have one: Completed, for Succeeded or Failed)."""
        return self.conditions_of(obj) if self.conditions_of else []

    def ordered(self, objects: Iterable[Object]) -> list[Object]:
        """Objects in the order upstream's list printer emits rows (FlowSchemas sort by precedence)."""
        items = list(objects)
        return sorted(items, key=self.order_key) if self.order_key else items

    def column_definitions(self) -> list[dict[str, Any]]:
        return [column.to_json() for column in self.columns]


def _columns(*columns: Column) -> tuple[Column, ...]:
    return columns


_NAME_COLUMN: Final = Column("Name", "string", "name", _NAME)
_AGE_COLUMN: Final = Column("Age", "string", "", _CREATION_TIMESTAMP)
_CONTAINERS_COLUMN: Final = Column(
    "Containers", description="Names of each container in the template.", priority=1
)
_IMAGES_COLUMN: Final = Column(
    "Images", description="Images referenced by each container in the template.", priority=1
)


def _count_row(field: str) -> RowFunction:
    """Name, number of entries in ``field`` (a list or a map), Age."""

    def render(obj: Object, now: datetime) -> list[Any]:
        value = obj.get(field)
        return [_name(obj), len(value) if isinstance(value, list | Mapping) else 0, _age(obj, now)]

    return render


POD_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
        Column("Status", description="The aggregate status of the containers in this pod."),
        Column(
            "Restarts",
            description=(
                "The number of times the containers in this pod have been restarted and when the last "
                "container in this pod has restarted."
            ),
        ),
        _AGE_COLUMN,
        Column("IP", priority=1, description=_POD_IP),
        Column("Node", priority=1, description=_POD_NODE_NAME),
        Column("Nominated Node", priority=1, description=_POD_NOMINATED_NODE_NAME),
        Column("Readiness Gates", priority=1, description=_POD_READINESS_GATES),
    ),
    _pod_row,
    conditions_of=_pod_conditions,
)

NODE_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Status", description="The status of the node"),
        Column("Roles", description="The roles of the node"),
        _AGE_COLUMN,
        Column("Version", description=_NODE_KUBELET_VERSION),
        Column("Internal-IP", priority=1, description=_NODE_ADDRESSES),
        Column("External-IP", priority=1, description=_NODE_ADDRESSES),
        Column("OS-Image", priority=1, description=_NODE_OS_IMAGE),
        Column("Kernel-Version", priority=1, description=_NODE_KERNEL_VERSION),
        Column("Container-Runtime", priority=1, description=_NODE_CONTAINER_RUNTIME),
    ),
    _node_row,
)

NAMESPACE_PRINTER: Final = Printer(
    _columns(_NAME_COLUMN, Column("Status", description="The status of the namespace"), _AGE_COLUMN),
    lambda obj, now: [_name(obj), _str(_get(obj, "status", "phase")), _age(obj, now)],
)

SERVICE_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Type", description=_SVC_TYPE),
        Column("Cluster-IP", description=_SVC_CLUSTER_IP),
        Column("External-IP", description=_SVC_EXTERNAL_IPS),
        Column("Port(s)", description=_SVC_PORTS),
        _AGE_COLUMN,
        Column("Selector", priority=1, description=_SVC_SELECTOR),
    ),
    _service_row,
)

ENDPOINTS_PRINTER: Final = Printer(
    _columns(_NAME_COLUMN, Column("Endpoints", description=_ENDPOINTS_SUBSETS), _AGE_COLUMN),
    lambda obj, now: [_name(obj), format_endpoints(obj), _age(obj, now)],
)

ENDPOINT_SLICE_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("AddressType", description=_SLICE_ADDRESS_TYPE),
        Column("Ports", description=_SLICE_PORTS),
        Column("Endpoints", description=_SLICE_ENDPOINTS),
        _AGE_COLUMN,
    ),
    lambda obj, now: [
        _name(obj),
        _str(obj.get("addressType")),
        format_discovery_ports(obj.get("ports")),
        format_discovery_endpoints(obj.get("endpoints")),
        _age(obj, now),
    ],
)

CONFIG_MAP_PRINTER: Final = Printer(
    _columns(_NAME_COLUMN, Column("Data", description=_CONFIGMAP_DATA), _AGE_COLUMN),
    lambda obj, now: [
        _name(obj),
        len(_map(obj.get("data"))) + len(_map(obj.get("binaryData"))),
        _age(obj, now),
    ],
)


def _canonical_quantity(value: Any) -> str:
    """A quantity as ``Quantity.String()`` writes it (canonical), or as stored if it does not parse."""
    try:
        return str(parse_json_quantity(value))
    except QuantityError:
        return str(value)


def _resource_quota_row(obj: Object, now: datetime) -> list[Any]:
    """``printResourceQuota``: ``name: used/hard`` for each hard limit in ``status`` (sorted by name),
    the ``limits.*`` ones in their own column."""
    status = _map(obj.get("status"))
    hard, used = _map(status.get("hard")), _map(status.get("used"))
    request: list[str] = []
    limit: list[str] = []
    for name in sorted(hard, key=str):
        pieces = str(name).split(".")
        column = limit if len(pieces) > 1 and pieces[0] == "limits" else request
        column.append(f"{name}: {_canonical_quantity(used.get(name, '0'))}/{_canonical_quantity(hard[name])}")
    return [_name(obj), _age(obj, now), ", ".join(request), ", ".join(limit)]


RESOURCE_QUOTA_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        _AGE_COLUMN,
        Column(
            "Request",
            description="Request represents a minimum amount of cpu/memory that a container may consume.",
        ),
        Column(
            "Limit",
            description="Limits control the maximum amount of cpu/memory that a container may use"
            " independent of contention on the node.",
        ),
    ),
    _resource_quota_row,
)

SECRET_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Type", description=_SECRET_TYPE),
        Column("Data", description=_SECRET_DATA),
        _AGE_COLUMN,
    ),
    _secret_row,
)

SERVICE_ACCOUNT_PRINTER: Final = Printer(
    _columns(_NAME_COLUMN, Column("Secrets", description=_SA_SECRETS), _AGE_COLUMN),
    _count_row("secrets"),
)

_EVENT_COLUMNS: Final = (
    Column("Last Seen", description=_EVENT_LAST_TIMESTAMP),
    Column("Type", description=_EVENT_TYPE),
    Column("Reason", description=_EVENT_REASON),
    Column("Object", description=_EVENT_INVOLVED_OBJECT),
    Column("Subobject", priority=1, description=_OBJECT_REFERENCE_FIELD_PATH),
    Column("Source", priority=1, description=_EVENT_SOURCE),
    Column("Message", description=_EVENT_MESSAGE),
    Column("First Seen", priority=1, description=_EVENT_FIRST_TIMESTAMP),
    Column("Count", priority=1, description=_EVENT_COUNT),
    Column("Name", format="name", priority=1, description=_NAME),
)
EVENT_PRINTER: Final = Printer(_EVENT_COLUMNS, _event_row)
#: The same storage serves events.k8s.io/v1; its objects are converted to the core Event first.
EVENTS_V1_PRINTER: Final = Printer(_EVENT_COLUMNS, lambda obj, now: _event_row(_as_core_event(obj), now))

DEPLOYMENT_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Ready", description="Number of the pod with ready state"),
        Column("Up-to-date", description=_DEPLOY_UPDATED_REPLICAS),
        Column("Available", description=_DEPLOY_AVAILABLE_REPLICAS),
        _AGE_COLUMN,
        _CONTAINERS_COLUMN,
        _IMAGES_COLUMN,
        Column("Selector", priority=1, description=_DEPLOY_SELECTOR),
    ),
    _deployment_row,
)

REPLICA_SET_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Desired", "integer", description=_RS_SPEC_REPLICAS),
        Column("Current", "integer", description=_RS_STATUS_REPLICAS),
        Column("Ready", "integer", description=_RS_READY_REPLICAS),
        _AGE_COLUMN,
        _CONTAINERS_COLUMN,
        _IMAGES_COLUMN,
        Column("Selector", priority=1, description=_RS_SELECTOR),
    ),
    _replica_set_row,
)

DAEMON_SET_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Desired", "integer", description=_DS_DESIRED),
        Column("Current", "integer", description=_DS_CURRENT),
        Column("Ready", "integer", description=_DS_READY),
        Column("Up-to-date", "integer", description=_DS_UPDATED),
        Column("Available", "integer", description=_DS_AVAILABLE),
        Column("Node Selector", description=_POD_NODE_SELECTOR),
        _AGE_COLUMN,
        _CONTAINERS_COLUMN,
        _IMAGES_COLUMN,
        Column("Selector", priority=1, description=_DS_SELECTOR),
    ),
    _daemon_set_row,
)

STATEFUL_SET_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Ready", description="Number of the pod with ready state"),
        _AGE_COLUMN,
        _CONTAINERS_COLUMN,
        _IMAGES_COLUMN,
    ),
    _stateful_set_row,
)

CONTROLLER_REVISION_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Controller", description="Controller of the object"),
        Column("Revision", description=_CR_REVISION),
        _AGE_COLUMN,
    ),
    _controller_revision_row,
)

JOB_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Status", description="Status of the job."),
        Column("Completions", description=_JOB_STATUS_SUCCEEDED),
        Column("Duration", description="Time required to complete the job."),
        _AGE_COLUMN,
        _CONTAINERS_COLUMN,
        _IMAGES_COLUMN,
        Column("Selector", priority=1, description=_JOB_SELECTOR),
    ),
    _job_row,
)

CRON_JOB_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Schedule", description=_CRONJOB_SCHEDULE),
        Column("Timezone", description=_CRONJOB_TIME_ZONE),
        Column("Suspend", "boolean", description=_CRONJOB_SUSPEND),
        Column("Active", "integer", description=_CRONJOB_ACTIVE),
        Column("Last Schedule", description=_CRONJOB_LAST_SCHEDULE),
        _AGE_COLUMN,
        _CONTAINERS_COLUMN,
        _IMAGES_COLUMN,
        Column("Selector", priority=1, description=_JOB_SELECTOR),
    ),
    _cron_job_row,
)

POD_DISRUPTION_BUDGET_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Min Available", description="The minimum number of pods that must be available."),
        Column("Max Unavailable", description="The maximum number of pods that may be unavailable."),
        Column(
            "Allowed Disruptions",
            "integer",
            description="Calculated number of pods that may be disrupted at this time.",
        ),
        _AGE_COLUMN,
    ),
    _pod_disruption_budget_row,
)

# The descriptions are autoscaling/v2beta1's, as upstream's column definitions cite that version.
HORIZONTAL_POD_AUTOSCALER_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column(
            "Reference",
            description=(
                "scaleTargetRef points to the target resource to scale, and is used to the pods for which "
                "metrics should be collected, as well as to actually change the replica count."
            ),
        ),
        Column(
            "Targets",
            description=(
                "metrics contains the specifications for which to use to calculate the desired replica "
                "count (the maximum replica count across all metrics will be used).  The desired replica "
                "count is calculated multiplying the ratio between the target value and the current value "
                "by the current number of pods.  Ergo, metrics used must decrease as the pod count is "
                "increased, and vice-versa.  See the individual metric source types for more information "
                "about how each type of metric must respond."
            ),
        ),
        Column(
            "MinPods",
            description=(
                "minReplicas is the lower limit for the number of replicas to which the autoscaler can "
                "scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature "
                "gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  "
                "Scaling is active as long as at least one metric value is available."
            ),
        ),
        Column(
            "MaxPods",
            description=(
                "maxReplicas is the upper limit for the number of replicas to which the autoscaler can "
                "scale up. It cannot be less that minReplicas."
            ),
        ),
        Column(
            "Replicas",
            description="currentReplicas is current number of replicas of pods managed by this autoscaler.",
        ),
        _AGE_COLUMN,
    ),
    _horizontal_pod_autoscaler_row,
)

LEASE_PRINTER: Final = Printer(
    _columns(_NAME_COLUMN, Column("Holder", description=_LEASE_HOLDER), _AGE_COLUMN),
    lambda obj, now: [_name(obj), _str(_get(obj, "spec", "holderIdentity")), _age(obj, now)],
)


def _binding_printer(role_ref_description: str, what: str) -> Printer:
    return Printer(
        _columns(
            _NAME_COLUMN,
            Column("Role", description=role_ref_description),
            _AGE_COLUMN,
            Column("Users", priority=1, description=f"Users in the {what}"),
            Column("Groups", priority=1, description=f"Groups in the {what}"),
            Column("ServiceAccounts", priority=1, description=f"ServiceAccounts in the {what}"),
        ),
        _binding_row,
    )


ROLE_BINDING_PRINTER: Final = _binding_printer(_ROLEBINDING_ROLE_REF, "roleBinding")
CLUSTER_ROLE_BINDING_PRINTER: Final = _binding_printer(_CLUSTERROLEBINDING_ROLE_REF, "clusterRoleBinding")

WEBHOOK_CONFIGURATION_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column(
            "Webhooks",
            "integer",
            description="Webhooks indicates the number of webhooks registered in this configuration",
        ),
        _AGE_COLUMN,
    ),
    _count_row("webhooks"),
)


def _param_kind(obj: Object) -> str:
    """``printValidatingAdmissionPolicy``: ``<apiVersion>/<kind>`` of ``spec.paramKind``, or ``<unset>``."""
    kind = _get(obj, "spec", "paramKind")
    if not isinstance(kind, Mapping):
        return "<unset>"
    return f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}"


def _param_ref(obj: Object) -> str:
    """``printValidatingAdmissionPolicyBinding``: ``<namespace>/<name>`` of ``spec.paramRef`` (``*``
    for a selector), or ``<unset>``."""
    ref = _get(obj, "spec", "paramRef")
    if not isinstance(ref, Mapping):
        return "<unset>"
    name = ref.get("name") or "*"
    namespace = ref.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)


VALIDATING_ADMISSION_POLICY_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column(
            "Validations",
            "integer",
            description="Validations indicates the number of validation rules defined in this configuration",
        ),
        Column(
            "ParamKind",
            description="ParamKind specifies the kind of resources used to parameterize this policy",
        ),
        _AGE_COLUMN,
    ),
    lambda obj, now: [
        _name(obj),
        len(v) if isinstance(v := _get(obj, "spec", "validations"), list) else 0,
        _param_kind(obj),
        _age(obj, now),
    ],
)

VALIDATING_ADMISSION_POLICY_BINDING_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column(
            "PolicyName",
            description="PolicyName indicates the policy definition which the policy binding binded to",
        ),
        Column(
            "ParamRef", description="ParamRef indicates the param resource which sets the configration param"
        ),
        _AGE_COLUMN,
    ),
    lambda obj, now: [_name(obj), _str(_get(obj, "spec", "policyName")), _param_ref(obj), _age(obj, now)],
)

FLOW_SCHEMA_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("PriorityLevel", description=_FS_PRIORITY_LEVEL),
        Column("MatchingPrecedence", description=_FS_MATCHING_PRECEDENCE),
        Column("DistinguisherMethod", description=_FS_DISTINGUISHER),
        _AGE_COLUMN,
        Column("MissingPL", description="references a broken or non-existent PriorityLevelConfiguration"),
    ),
    _flow_schema_row,
    order_key=_flow_schema_order,
)

PRIORITY_LEVEL_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Type", description=_PL_TYPE),
        Column("NominalConcurrencyShares", description=_PL_NCS),
        Column("Queues", description=_PL_QUEUES),
        Column("HandSize", description=_PL_HAND_SIZE),
        Column("QueueLengthLimit", description=_PL_QUEUE_LENGTH_LIMIT),
        _AGE_COLUMN,
    ),
    _priority_level_row,
)

COMPONENT_STATUS_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Status", description="Status of the component conditions"),
        Column("Message", description="Message of the component conditions"),
        Column("Error", description="Error of the component conditions"),
    ),
    _component_status_row,
)

PRIORITY_CLASS_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Value", "integer", description=_PC_VALUE),
        Column("Global-Default", "boolean", description=_PC_GLOBAL_DEFAULT),
        _AGE_COLUMN,
        Column("PreemptionPolicy", description=_PC_PREEMPTION_POLICY),
    ),
    _priority_class_row,
)

REPLICATION_CONTROLLER_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Desired", "integer", description=_RC_SPEC_REPLICAS),
        Column("Current", "integer", description=_RC_STATUS_REPLICAS),
        Column("Ready", "integer", description=_RC_READY_REPLICAS),
        _AGE_COLUMN,
        _CONTAINERS_COLUMN,
        _IMAGES_COLUMN,
        Column("Selector", priority=1, description=_RC_SELECTOR),
    ),
    _replication_controller_row,
)

POD_TEMPLATE_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Containers", description="Names of each container in the template."),
        Column("Images", description="Images referenced by each container in the template."),
        Column("Pod Labels", description="The labels for the pod template."),
    ),
    _pod_template_row,
)

PERSISTENT_VOLUME_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Capacity", description=_PV_CAPACITY),
        Column("Access Modes", description=_PV_ACCESS_MODES),
        Column("Reclaim Policy", description=_PV_RECLAIM_POLICY),
        Column("Status", description=_PV_PHASE),
        Column("Claim", description=_PV_CLAIM_REF),
        Column("StorageClass", description="StorageClass of the pv"),
        Column("VolumeAttributesClass", description="VolumeAttributesClass of the pv"),
        Column("Reason", description=_PV_REASON),
        _AGE_COLUMN,
        Column("VolumeMode", priority=1, description=_PV_VOLUME_MODE),
    ),
    _persistent_volume_row,
)

PERSISTENT_VOLUME_CLAIM_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Status", description=_PVC_PHASE),
        Column("Volume", description=_PVC_VOLUME_NAME),
        Column("Capacity", description=_PVC_CAPACITY),
        Column("Access Modes", description=_PVC_ACCESS_MODES),
        Column("StorageClass", description="StorageClass of the pvc"),
        Column("VolumeAttributesClass", description="VolumeAttributesClass of the pvc"),
        _AGE_COLUMN,
        Column("VolumeMode", priority=1, description=_PVC_VOLUME_MODE),
    ),
    _persistent_volume_claim_row,
)

STORAGE_CLASS_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Provisioner", description=_SC_PROVISIONER),
        Column("ReclaimPolicy", description=_SC_RECLAIM_POLICY),
        Column("VolumeBindingMode", description=_SC_BINDING_MODE),
        Column("AllowVolumeExpansion", description=_SC_ALLOW_EXPANSION),
        _AGE_COLUMN,
    ),
    _storage_class_row,
)

INGRESS_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Class", description=_INGRESS_CLASS),
        Column("Hosts", description=_INGRESS_HOSTS),
        Column("Address", description="Address is a list containing ingress points for the load-balancer"),
        Column("Ports", description="Ports of TLS configurations that open"),
        _AGE_COLUMN,
    ),
    _ingress_row,
)

INGRESS_CLASS_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        Column("Controller", description="Controller that is responsible for handling this class"),
        Column("Parameters", description="A reference to a resource with additional parameters"),
        _AGE_COLUMN,
    ),
    _ingress_class_row,
)

NETWORK_POLICY_PRINTER: Final = Printer(
    _columns(_NAME_COLUMN, Column("Pod-Selector", description=_NETPOL_POD_SELECTOR), _AGE_COLUMN),
    _network_policy_row,
)

CERTIFICATE_SIGNING_REQUEST_PRINTER: Final = Printer(
    _columns(
        _NAME_COLUMN,
        _AGE_COLUMN,
        Column("SignerName", description=_CSR_SIGNER_NAME),
        Column("Requestor", description=_CSR_REQUEST),
        Column("RequestedDuration", description=_CSR_EXPIRATION_SECONDS),
        Column("Condition", description=_CSR_CONDITIONS),
    ),
    _certificate_signing_request_row,
)

#: Upstream's ``DefaultTableConvertor``: every resource without a printer of its own.
DEFAULT_PRINTER: Final = Printer(
    _columns(_NAME_COLUMN, Column("Created At", "date", description=_CREATION_TIMESTAMP)),
    _default_row,
)

PRINTERS: Final[dict[tuple[str, str], Printer]] = {
    ("", "pods"): POD_PRINTER,
    ("", "nodes"): NODE_PRINTER,
    ("", "namespaces"): NAMESPACE_PRINTER,
    ("", "services"): SERVICE_PRINTER,
    ("", "endpoints"): ENDPOINTS_PRINTER,
    ("discovery.k8s.io", "endpointslices"): ENDPOINT_SLICE_PRINTER,
    ("", "configmaps"): CONFIG_MAP_PRINTER,
    ("", "resourcequotas"): RESOURCE_QUOTA_PRINTER,
    ("", "secrets"): SECRET_PRINTER,
    ("", "serviceaccounts"): SERVICE_ACCOUNT_PRINTER,
    ("", "events"): EVENT_PRINTER,
    ("events.k8s.io", "events"): EVENTS_V1_PRINTER,
    ("apps", "deployments"): DEPLOYMENT_PRINTER,
    ("apps", "replicasets"): REPLICA_SET_PRINTER,
    ("apps", "daemonsets"): DAEMON_SET_PRINTER,
    ("apps", "controllerrevisions"): CONTROLLER_REVISION_PRINTER,
    ("apps", "statefulsets"): STATEFUL_SET_PRINTER,
    ("autoscaling", "horizontalpodautoscalers"): HORIZONTAL_POD_AUTOSCALER_PRINTER,
    ("batch", "jobs"): JOB_PRINTER,
    ("batch", "cronjobs"): CRON_JOB_PRINTER,
    ("", "replicationcontrollers"): REPLICATION_CONTROLLER_PRINTER,
    ("", "podtemplates"): POD_TEMPLATE_PRINTER,
    ("", "persistentvolumes"): PERSISTENT_VOLUME_PRINTER,
    ("", "persistentvolumeclaims"): PERSISTENT_VOLUME_CLAIM_PRINTER,
    ("storage.k8s.io", "storageclasses"): STORAGE_CLASS_PRINTER,
    ("networking.k8s.io", "ingresses"): INGRESS_PRINTER,
    ("networking.k8s.io", "ingressclasses"): INGRESS_CLASS_PRINTER,
    ("networking.k8s.io", "networkpolicies"): NETWORK_POLICY_PRINTER,
    ("certificates.k8s.io", "certificatesigningrequests"): CERTIFICATE_SIGNING_REQUEST_PRINTER,
    ("policy", "poddisruptionbudgets"): POD_DISRUPTION_BUDGET_PRINTER,
    ("coordination.k8s.io", "leases"): LEASE_PRINTER,
    ("rbac.authorization.k8s.io", "rolebindings"): ROLE_BINDING_PRINTER,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): CLUSTER_ROLE_BINDING_PRINTER,
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): WEBHOOK_CONFIGURATION_PRINTER,
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): WEBHOOK_CONFIGURATION_PRINTER,
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): VALIDATING_ADMISSION_POLICY_PRINTER,
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): (
        VALIDATING_ADMISSION_POLICY_BINDING_PRINTER
    ),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"): FLOW_SCHEMA_PRINTER,
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"): PRIORITY_LEVEL_PRINTER,
    ("scheduling.k8s.io", "priorityclasses"): PRIORITY_CLASS_PRINTER,
    ("", "componentstatuses"): COMPONENT_STATUS_PRINTER,
}


def printer_for(group: str, resource: str) -> Printer:
    """The printer kube-apiserver uses for ``group``/``resource``; ``DEFAULT_PRINTER`` otherwise.

    Roles and ClusterRoles are deliberately absent: upstream serves them with the default convertor
    (``kubectl get roles`` shows NAME and CREATED AT).
    """
    return PRINTERS.get((group, resource), DEFAULT_PRINTER)
