"""Kubernetes' protobuf messages as data: which field number is which JSON field, for the kinds kubectl sends.

A protobuf message on the wire carries no field names, only numbers (see :mod:`protobuf`). The numbers
come from the ``generated.proto`` files upstream generates from the Go types, whose struct tags hold
both names at once::

    Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`

This module is that correspondence, written out as tables: ``MESSAGES["apps.DeploymentSpec"][1]`` is
``("replicas", "*int")``, "field 1 of a DeploymentSpec is the JSON field ``replicas``, an integer".
Each message's name starts with its proto package (``core`` for ``k8s.io.api.core.v1``, ``meta`` for
``k8s.io.apimachinery.pkg.apis.meta.v1``...) and the comment beside it names the directory of the
``generated.proto`` it comes from: kubernetes/api for API groups (``core/v1``, ``apps/v1``...),
kubernetes/apimachinery for the rest (``pkg/apis/meta/v1``, ``pkg/api/resource``,
``pkg/util/intstr``, ``pkg/runtime``). Field sets are Kubernetes 1.37's.

How to read a field's type:

``string``, ``int``, ``bool``, ``bytes``
    A scalar (``int`` covers int32 and int64; ``bytes`` is base64 in JSON). Go's protobuf code writes
    every plain field even when it is empty, so a zero value (``""``, ``0``, ``false``) means "not
    set" and is left out, as ``omitempty`` leaves it out of JSON.
``*string``, ``*int``, ``*bool``
    A scalar whose zero value counts: a Go pointer (``replicas: 0`` is not "unset") or a field
    without ``omitempty`` (a container's ``name``). It is written only when set, and kept as is.
``[]T``
    A repeated field: one wire field per element, every element kept (``apiGroups: [""]``).
``map[string]T``
    A map: one ``{1: key, 2: value}`` entry message per key.
``pkg.Message``
    Another message, always kept when present: Go writes a plain struct field even when empty, and
    JSON shows it as ``{}`` (``"resources": {}``) just the same.

A field whose JSON name is ``""`` is **inlined**: a Go struct embedded with ``json:",inline"`` (a
Volume's source, a Probe's handler) is a nested message in protobuf but flat in JSON.

A few messages have a JSON form of their own (``meta.Time`` is an RFC 3339 string, ``intstr.IntOrString``
a number or a string, ``resource.Quantity`` a string): their wire tables are here like any other and
:mod:`protobuf` turns them into their JSON form.

Not covered (field numbers skipped on decoding): ``Pod.status`` (written by kubelets, never sent by
kubectl) and the deprecated in-tree volume plugins of ``VolumeSource`` (awsElasticBlockStore,
azureDisk, azureFile, cephfs, cinder, fc, flexVolume, flocker, gcePersistentDisk, gitRepo,
glusterfs, iscsi, photonPersistentDisk, portworxVolume, quobyte, rbd, scaleIO, storageos,
vsphereVolume).

Kinds the lab serves that have no table yet, so that a protobuf body of one is answered 415 (where
kube-apiserver, which has a protobuf schema for every built-in kind, would decode it): ComponentStatus,
Endpoints, Event (``v1`` and ``events.k8s.io/v1``), LimitRange, Node, PersistentVolume,
PersistentVolumeClaim, PodTemplate, ReplicationController (``v1``); ControllerRevision, DaemonSet,
StatefulSet (``apps/v1``); MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding (``admissionregistration.k8s.io/v1``);
CustomResourceDefinition; EndpointSlice; FlowSchema,
PriorityLevelConfiguration; IngressClass, NetworkPolicy; StorageClass. kubectl 1.37 sends none of them
as protobuf: its typed commands (``create <kind>``, ``create token``, ``autoscale``, ``auth can-i``,
``auth whoami``, ``auth reconcile``, ``certificate approve``, ``drain``, ``debug node/...``) send the
kinds of :data:`KINDS`; ``run`` and ``expose`` send JSON, and ``scale``, ``label``, ``rollout``,
``set``, ``cordon``, ``taint`` send patches, which are JSON (a protobuf patch is 415 upstream too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

Field = tuple[str, str]
"""``(json name, type)``; the type is written as described in the module docstring."""

Message = Mapping[int, Field]
"""A message's fields by field number."""

MESSAGES: Final[Mapping[str, Message]] = {
    # -- messages with a JSON form of their own (see protobuf.JSON_FORMS) --
    "meta.Time": {1: ("seconds", "*int"), 2: ("nanos", "*int")},  # pkg/apis/meta/v1
    "meta.MicroTime": {1: ("seconds", "*int"), 2: ("nanos", "*int")},  # pkg/apis/meta/v1
    "meta.FieldsV1": {1: ("Raw", "bytes")},  # pkg/apis/meta/v1
    "resource.Quantity": {1: ("string", "string")},  # pkg/api/resource
    "intstr.IntOrString": {  # pkg/util/intstr
        1: ("type", "*int"),
        2: ("intVal", "*int"),
        3: ("strVal", "*string"),
    },
    "runtime.RawExtension": {1: ("raw", "bytes")},  # pkg/runtime
    "runtime.TypeMeta": {1: ("apiVersion", "string"), 2: ("kind", "string")},  # pkg/runtime
    "runtime.Unknown": {  # pkg/runtime: the envelope around every object
        1: ("typeMeta", "runtime.TypeMeta"),
        2: ("raw", "bytes"),
        3: ("contentEncoding", "string"),
        4: ("contentType", "string"),
    },
    "authentication.AttestationValue": {1: ("items", "[]string")},  # authentication/v1
    "authentication.ExtraValue": {1: ("items", "[]string")},  # authentication/v1
    "authorization.ExtraValue": {1: ("items", "[]string")},  # authorization/v1
    # -- the kinds below and every message they use --
    "apps.Deployment": {  # apps/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "apps.DeploymentSpec"),
        3: ("status", "apps.DeploymentStatus"),
    },
    "apps.DeploymentCondition": {  # apps/v1
        1: ("type", "*string"),
        2: ("status", "*string"),
        4: ("reason", "string"),
        5: ("message", "string"),
        6: ("lastUpdateTime", "meta.Time"),
        7: ("lastTransitionTime", "meta.Time"),
    },
    "apps.DeploymentSpec": {  # apps/v1
        1: ("replicas", "*int"),
        2: ("selector", "meta.LabelSelector"),
        3: ("template", "core.PodTemplateSpec"),
        4: ("strategy", "apps.DeploymentStrategy"),
        5: ("minReadySeconds", "int"),
        6: ("revisionHistoryLimit", "*int"),
        7: ("paused", "bool"),
        9: ("progressDeadlineSeconds", "*int"),
    },
    "apps.DeploymentStatus": {  # apps/v1
        1: ("observedGeneration", "int"),
        2: ("replicas", "int"),
        3: ("updatedReplicas", "int"),
        4: ("availableReplicas", "int"),
        5: ("unavailableReplicas", "int"),
        6: ("conditions", "[]apps.DeploymentCondition"),
        7: ("readyReplicas", "int"),
        8: ("collisionCount", "*int"),
        9: ("terminatingReplicas", "*int"),
    },
    "apps.DeploymentStrategy": {  # apps/v1
        1: ("type", "string"),
        2: ("rollingUpdate", "apps.RollingUpdateDeployment"),
    },
    "apps.ReplicaSet": {  # apps/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "apps.ReplicaSetSpec"),
        3: ("status", "apps.ReplicaSetStatus"),
    },
    "apps.ReplicaSetCondition": {  # apps/v1
        1: ("type", "*string"),
        2: ("status", "*string"),
        3: ("lastTransitionTime", "meta.Time"),
        4: ("reason", "string"),
        5: ("message", "string"),
    },
    "apps.ReplicaSetSpec": {  # apps/v1
        1: ("replicas", "*int"),
        2: ("selector", "meta.LabelSelector"),
        3: ("template", "core.PodTemplateSpec"),
        4: ("minReadySeconds", "int"),
    },
    "apps.ReplicaSetStatus": {  # apps/v1
        1: ("replicas", "*int"),
        2: ("fullyLabeledReplicas", "int"),
        3: ("observedGeneration", "int"),
        4: ("readyReplicas", "int"),
        5: ("availableReplicas", "int"),
        6: ("conditions", "[]apps.ReplicaSetCondition"),
        7: ("terminatingReplicas", "*int"),
    },
    "apps.RollingUpdateDeployment": {  # apps/v1
        1: ("maxUnavailable", "intstr.IntOrString"),
        2: ("maxSurge", "intstr.IntOrString"),
    },
    "authentication.BoundObjectReference": {  # authentication/v1
        1: ("kind", "string"),
        2: ("apiVersion", "string"),
        3: ("name", "string"),
        4: ("uid", "string"),
    },
    "authentication.SelfSubjectReview": {  # authentication/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("status", "authentication.SelfSubjectReviewStatus"),
    },
    "authentication.SelfSubjectReviewStatus": {  # authentication/v1
        1: ("userInfo", "authentication.UserInfo"),
    },
    "authentication.TokenRequest": {  # authentication/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "authentication.TokenRequestSpec"),
        3: ("status", "authentication.TokenRequestStatus"),
    },
    "authentication.TokenRequestSpec": {  # authentication/v1
        1: ("audiences", "[]string"),
        3: ("boundObjectRef", "authentication.BoundObjectReference"),
        4: ("expirationSeconds", "*int"),
        5: ("attestations", "map[string]authentication.AttestationValue"),
    },
    "authentication.TokenRequestStatus": {  # authentication/v1
        1: ("token", "*string"),
        2: ("expirationTimestamp", "meta.Time"),
    },
    "authentication.TokenReview": {  # authentication/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "authentication.TokenReviewSpec"),
        3: ("status", "authentication.TokenReviewStatus"),
    },
    "authentication.TokenReviewSpec": {  # authentication/v1
        1: ("token", "string"),
        2: ("audiences", "[]string"),
    },
    "authentication.TokenReviewStatus": {  # authentication/v1
        1: ("authenticated", "bool"),
        2: ("user", "authentication.UserInfo"),
        3: ("error", "string"),
        4: ("audiences", "[]string"),
    },
    "authentication.UserInfo": {  # authentication/v1
        1: ("username", "string"),
        2: ("uid", "string"),
        3: ("groups", "[]string"),
        4: ("extra", "map[string]authentication.ExtraValue"),
    },
    "authorization.FieldSelectorAttributes": {  # authorization/v1
        1: ("rawSelector", "string"),
        2: ("requirements", "[]meta.FieldSelectorRequirement"),
    },
    "authorization.LabelSelectorAttributes": {  # authorization/v1
        1: ("rawSelector", "string"),
        2: ("requirements", "[]meta.LabelSelectorRequirement"),
    },
    "authorization.LocalSubjectAccessReview": {  # authorization/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "authorization.SubjectAccessReviewSpec"),
        3: ("status", "authorization.SubjectAccessReviewStatus"),
    },
    "authorization.NonResourceAttributes": {1: ("path", "string"), 2: ("verb", "string")},  # authorization/v1
    "authorization.NonResourceRule": {  # authorization/v1
        1: ("verbs", "[]string"),
        2: ("nonResourceURLs", "[]string"),
    },
    "authorization.ResourceAttributes": {  # authorization/v1
        1: ("namespace", "string"),
        2: ("verb", "string"),
        3: ("group", "string"),
        4: ("version", "string"),
        5: ("resource", "string"),
        6: ("subresource", "string"),
        7: ("name", "string"),
        8: ("fieldSelector", "authorization.FieldSelectorAttributes"),
        9: ("labelSelector", "authorization.LabelSelectorAttributes"),
    },
    "authorization.ResourceRule": {  # authorization/v1
        1: ("verbs", "[]string"),
        2: ("apiGroups", "[]string"),
        3: ("resources", "[]string"),
        4: ("resourceNames", "[]string"),
    },
    "authorization.SelfSubjectAccessReview": {  # authorization/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "authorization.SelfSubjectAccessReviewSpec"),
        3: ("status", "authorization.SubjectAccessReviewStatus"),
    },
    "authorization.SelfSubjectAccessReviewSpec": {  # authorization/v1
        1: ("resourceAttributes", "authorization.ResourceAttributes"),
        2: ("nonResourceAttributes", "authorization.NonResourceAttributes"),
    },
    "authorization.SelfSubjectRulesReview": {  # authorization/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "authorization.SelfSubjectRulesReviewSpec"),
        3: ("status", "authorization.SubjectRulesReviewStatus"),
    },
    "authorization.SelfSubjectRulesReviewSpec": {1: ("namespace", "string")},  # authorization/v1
    "authorization.SubjectAccessReview": {  # authorization/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "authorization.SubjectAccessReviewSpec"),
        3: ("status", "authorization.SubjectAccessReviewStatus"),
    },
    "authorization.SubjectAccessReviewSpec": {  # authorization/v1
        1: ("resourceAttributes", "authorization.ResourceAttributes"),
        2: ("nonResourceAttributes", "authorization.NonResourceAttributes"),
        3: ("user", "string"),
        4: ("groups", "[]string"),
        5: ("extra", "map[string]authorization.ExtraValue"),
        6: ("uid", "string"),
    },
    "authorization.SubjectAccessReviewStatus": {  # authorization/v1
        1: ("allowed", "*bool"),
        2: ("reason", "string"),
        3: ("evaluationError", "string"),
        4: ("denied", "bool"),
    },
    "authorization.SubjectRulesReviewStatus": {  # authorization/v1
        1: ("resourceRules", "[]authorization.ResourceRule"),
        2: ("nonResourceRules", "[]authorization.NonResourceRule"),
        3: ("incomplete", "*bool"),
        4: ("evaluationError", "string"),
    },
    # autoscaling/v1 HorizontalPodAutoscaler: what ``kubectl autoscale`` falls back to when its
    # autoscaling/v2 create fails, for any reason, AlreadyExists included (kubectl pkg/cmd/autoscale).
    "autoscaling.CrossVersionObjectReference": {  # autoscaling/v1
        1: ("kind", "*string"),
        2: ("name", "*string"),
        3: ("apiVersion", "string"),
    },
    "autoscaling.HorizontalPodAutoscaler": {  # autoscaling/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "autoscaling.HorizontalPodAutoscalerSpec"),
        3: ("status", "autoscaling.HorizontalPodAutoscalerStatus"),
    },
    "autoscaling.HorizontalPodAutoscalerSpec": {  # autoscaling/v1
        1: ("scaleTargetRef", "autoscaling.CrossVersionObjectReference"),
        2: ("minReplicas", "*int"),
        3: ("maxReplicas", "*int"),
        4: ("targetCPUUtilizationPercentage", "*int"),
    },
    "autoscaling.HorizontalPodAutoscalerStatus": {  # autoscaling/v1
        1: ("observedGeneration", "*int"),
        2: ("lastScaleTime", "meta.Time"),
        3: ("currentReplicas", "*int"),
        4: ("desiredReplicas", "*int"),
        5: ("currentCPUUtilizationPercentage", "*int"),
    },
    "autoscaling.Scale": {  # autoscaling/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "autoscaling.ScaleSpec"),
        3: ("status", "autoscaling.ScaleStatus"),
    },
    "autoscaling.ScaleSpec": {1: ("replicas", "int")},  # autoscaling/v1
    "autoscaling.ScaleStatus": {1: ("replicas", "*int"), 2: ("selector", "string")},  # autoscaling/v1
    # autoscaling/v2 HorizontalPodAutoscaler (kubectl autoscale sends it as protobuf).
    "autoscalingv2.HorizontalPodAutoscaler": {
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "autoscalingv2.HorizontalPodAutoscalerSpec"),
        3: ("status", "autoscalingv2.HorizontalPodAutoscalerStatus"),
    },
    "autoscalingv2.HorizontalPodAutoscalerSpec": {
        1: ("scaleTargetRef", "autoscalingv2.CrossVersionObjectReference"),
        2: ("minReplicas", "*int"),
        3: ("maxReplicas", "int"),
        4: ("metrics", "[]autoscalingv2.MetricSpec"),
        5: ("behavior", "autoscalingv2.HorizontalPodAutoscalerBehavior"),
    },
    "autoscalingv2.CrossVersionObjectReference": {
        1: ("kind", "string"),
        2: ("name", "string"),
        3: ("apiVersion", "string"),
    },
    "autoscalingv2.MetricSpec": {
        1: ("type", "string"),
        2: ("object", "autoscalingv2.ObjectMetricSource"),
        3: ("pods", "autoscalingv2.PodsMetricSource"),
        4: ("resource", "autoscalingv2.ResourceMetricSource"),
        5: ("external", "autoscalingv2.ExternalMetricSource"),
        7: ("containerResource", "autoscalingv2.ContainerResourceMetricSource"),
    },
    "autoscalingv2.ObjectMetricSource": {
        1: ("describedObject", "autoscalingv2.CrossVersionObjectReference"),
        2: ("target", "autoscalingv2.MetricTarget"),
        3: ("metric", "autoscalingv2.MetricIdentifier"),
    },
    "autoscalingv2.PodsMetricSource": {
        1: ("metric", "autoscalingv2.MetricIdentifier"),
        2: ("target", "autoscalingv2.MetricTarget"),
    },
    "autoscalingv2.ResourceMetricSource": {
        1: ("name", "string"),
        2: ("target", "autoscalingv2.MetricTarget"),
    },
    "autoscalingv2.ContainerResourceMetricSource": {
        1: ("name", "string"),
        2: ("target", "autoscalingv2.MetricTarget"),
        3: ("container", "string"),
    },
    "autoscalingv2.ExternalMetricSource": {
        1: ("metric", "autoscalingv2.MetricIdentifier"),
        2: ("target", "autoscalingv2.MetricTarget"),
    },
    "autoscalingv2.MetricIdentifier": {1: ("name", "string"), 2: ("selector", "meta.LabelSelector")},
    "autoscalingv2.MetricTarget": {
        1: ("type", "string"),
        2: ("value", "resource.Quantity"),
        3: ("averageValue", "resource.Quantity"),
        4: ("averageUtilization", "*int"),
    },
    "autoscalingv2.HorizontalPodAutoscalerBehavior": {
        1: ("scaleUp", "autoscalingv2.HPAScalingRules"),
        2: ("scaleDown", "autoscalingv2.HPAScalingRules"),
    },
    "autoscalingv2.HPAScalingRules": {
        3: ("stabilizationWindowSeconds", "*int"),
        1: ("selectPolicy", "*string"),
        2: ("policies", "[]autoscalingv2.HPAScalingPolicy"),
        4: ("tolerance", "resource.Quantity"),
    },
    "autoscalingv2.HPAScalingPolicy": {
        1: ("type", "string"),
        2: ("value", "int"),
        3: ("periodSeconds", "int"),
    },
    "autoscalingv2.HorizontalPodAutoscalerStatus": {
        1: ("observedGeneration", "*int"),
        2: ("lastScaleTime", "meta.Time"),
        3: ("currentReplicas", "int"),
        4: ("desiredReplicas", "int"),
        5: ("currentMetrics", "[]autoscalingv2.MetricStatus"),
        6: ("conditions", "[]autoscalingv2.HorizontalPodAutoscalerCondition"),
    },
    "autoscalingv2.MetricStatus": {
        1: ("type", "string"),
        2: ("object", "autoscalingv2.ObjectMetricStatus"),
        3: ("pods", "autoscalingv2.PodsMetricStatus"),
        4: ("resource", "autoscalingv2.ResourceMetricStatus"),
        5: ("external", "autoscalingv2.ExternalMetricStatus"),
        7: ("containerResource", "autoscalingv2.ContainerResourceMetricStatus"),
    },
    "autoscalingv2.ObjectMetricStatus": {
        1: ("metric", "autoscalingv2.MetricIdentifier"),
        2: ("current", "autoscalingv2.MetricValueStatus"),
        3: ("describedObject", "autoscalingv2.CrossVersionObjectReference"),
    },
    "autoscalingv2.PodsMetricStatus": {
        1: ("metric", "autoscalingv2.MetricIdentifier"),
        2: ("current", "autoscalingv2.MetricValueStatus"),
    },
    "autoscalingv2.ResourceMetricStatus": {
        1: ("name", "string"),
        2: ("current", "autoscalingv2.MetricValueStatus"),
    },
    "autoscalingv2.ContainerResourceMetricStatus": {
        1: ("name", "string"),
        2: ("current", "autoscalingv2.MetricValueStatus"),
        3: ("container", "string"),
    },
    "autoscalingv2.ExternalMetricStatus": {
        1: ("metric", "autoscalingv2.MetricIdentifier"),
        2: ("current", "autoscalingv2.MetricValueStatus"),
    },
    "autoscalingv2.MetricValueStatus": {
        1: ("value", "resource.Quantity"),
        2: ("averageValue", "resource.Quantity"),
        3: ("averageUtilization", "*int"),
    },
    "autoscalingv2.HorizontalPodAutoscalerCondition": {
        1: ("type", "string"),
        2: ("status", "string"),
        3: ("lastTransitionTime", "meta.Time"),
        4: ("reason", "string"),
        5: ("message", "string"),
        6: ("observedGeneration", "int"),
    },
    "batch.CronJob": {  # batch/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "batch.CronJobSpec"),
        3: ("status", "batch.CronJobStatus"),
    },
    "batch.CronJobSpec": {  # batch/v1
        1: ("schedule", "string"),
        2: ("startingDeadlineSeconds", "*int"),
        3: ("concurrencyPolicy", "string"),
        4: ("suspend", "*bool"),
        5: ("jobTemplate", "batch.JobTemplateSpec"),
        6: ("successfulJobsHistoryLimit", "*int"),
        7: ("failedJobsHistoryLimit", "*int"),
        8: ("timeZone", "*string"),
    },
    "batch.CronJobStatus": {  # batch/v1
        1: ("active", "[]core.ObjectReference"),
        4: ("lastScheduleTime", "meta.Time"),
        5: ("lastSuccessfulTime", "meta.Time"),
    },
    "batch.Job": {  # batch/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "batch.JobSpec"),
        3: ("status", "batch.JobStatus"),
    },
    "batch.JobCondition": {  # batch/v1
        1: ("type", "*string"),
        2: ("status", "*string"),
        3: ("lastProbeTime", "meta.Time"),
        4: ("lastTransitionTime", "meta.Time"),
        5: ("reason", "string"),
        6: ("message", "string"),
    },
    "batch.JobSpec": {  # batch/v1
        1: ("parallelism", "*int"),
        2: ("completions", "*int"),
        3: ("activeDeadlineSeconds", "*int"),
        4: ("selector", "meta.LabelSelector"),
        5: ("manualSelector", "*bool"),
        6: ("template", "core.PodTemplateSpec"),
        7: ("backoffLimit", "*int"),
        8: ("ttlSecondsAfterFinished", "*int"),
        9: ("completionMode", "*string"),
        10: ("suspend", "*bool"),
        11: ("podFailurePolicy", "batch.PodFailurePolicy"),
        12: ("backoffLimitPerIndex", "*int"),
        13: ("maxFailedIndexes", "*int"),
        14: ("podReplacementPolicy", "*string"),
        15: ("managedBy", "*string"),
        16: ("successPolicy", "batch.SuccessPolicy"),
    },
    "batch.JobStatus": {  # batch/v1
        1: ("conditions", "[]batch.JobCondition"),
        2: ("startTime", "meta.Time"),
        3: ("completionTime", "meta.Time"),
        4: ("active", "int"),
        5: ("succeeded", "int"),
        6: ("failed", "int"),
        7: ("completedIndexes", "string"),
        8: ("uncountedTerminatedPods", "batch.UncountedTerminatedPods"),
        9: ("ready", "*int"),
        10: ("failedIndexes", "*string"),
        11: ("terminating", "*int"),
    },
    "batch.JobTemplateSpec": {  # batch/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "batch.JobSpec"),
    },
    "batch.PodFailurePolicy": {1: ("rules", "[]batch.PodFailurePolicyRule")},  # batch/v1
    "batch.PodFailurePolicyOnExitCodesRequirement": {  # batch/v1
        1: ("containerName", "*string"),
        2: ("operator", "*string"),
        3: ("values", "[]int"),
    },
    "batch.PodFailurePolicyOnPodConditionsPattern": {
        1: ("type", "*string"),
        2: ("status", "string"),
    },  # batch/v1
    "batch.PodFailurePolicyRule": {  # batch/v1
        1: ("action", "*string"),
        2: ("onExitCodes", "batch.PodFailurePolicyOnExitCodesRequirement"),
        3: ("onPodConditions", "[]batch.PodFailurePolicyOnPodConditionsPattern"),
        4: ("name", "*string"),
    },
    "batch.SuccessPolicy": {1: ("rules", "[]batch.SuccessPolicyRule")},  # batch/v1
    "batch.SuccessPolicyRule": {
        1: ("succeededIndexes", "*string"),
        2: ("succeededCount", "*int"),
    },  # batch/v1
    "batch.UncountedTerminatedPods": {1: ("succeeded", "[]string"), 2: ("failed", "[]string")},  # batch/v1
    "certificates.CertificateSigningRequest": {  # certificates/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "certificates.CertificateSigningRequestSpec"),
        3: ("status", "certificates.CertificateSigningRequestStatus"),
    },
    "certificates.CertificateSigningRequestCondition": {  # certificates/v1
        1: ("type", "string"),
        2: ("reason", "string"),
        3: ("message", "string"),
        4: ("lastUpdateTime", "meta.Time"),
        5: ("lastTransitionTime", "meta.Time"),
        6: ("status", "string"),
    },
    "certificates.CertificateSigningRequestSpec": {  # certificates/v1
        1: ("request", "bytes"),
        2: ("username", "string"),
        3: ("uid", "string"),
        4: ("groups", "[]string"),
        5: ("usages", "[]string"),
        6: ("extra", "map[string]certificates.ExtraValue"),
        7: ("signerName", "string"),
        8: ("expirationSeconds", "*int"),
    },
    "certificates.CertificateSigningRequestStatus": {  # certificates/v1
        1: ("conditions", "[]certificates.CertificateSigningRequestCondition"),
        2: ("certificate", "bytes"),
    },
    "certificates.ExtraValue": {1: ("items", "[]string")},  # certificates/v1
    "coordination.Lease": {  # coordination/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "coordination.LeaseSpec"),
    },
    "coordination.LeaseSpec": {  # coordination/v1
        1: ("holderIdentity", "*string"),
        2: ("leaseDurationSeconds", "*int"),
        3: ("acquireTime", "meta.MicroTime"),
        4: ("renewTime", "meta.MicroTime"),
        5: ("leaseTransitions", "*int"),
        6: ("strategy", "*string"),
        7: ("preferredHolder", "*string"),
    },
    "core.Affinity": {  # core/v1
        1: ("nodeAffinity", "core.NodeAffinity"),
        2: ("podAffinity", "core.PodAffinity"),
        3: ("podAntiAffinity", "core.PodAntiAffinity"),
    },
    "core.AppArmorProfile": {1: ("type", "*string"), 2: ("localhostProfile", "*string")},  # core/v1
    "core.Binding": {1: ("metadata", "meta.ObjectMeta"), 2: ("target", "core.ObjectReference")},  # core/v1
    "core.CSIVolumeSource": {  # core/v1
        1: ("driver", "*string"),
        2: ("readOnly", "*bool"),
        3: ("fsType", "*string"),
        4: ("volumeAttributes", "map[string]string"),
        5: ("nodePublishSecretRef", "core.LocalObjectReference"),
    },
    "core.Capabilities": {1: ("add", "[]string"), 2: ("drop", "[]string")},  # core/v1
    "core.ClientIPConfig": {1: ("timeoutSeconds", "*int")},  # core/v1
    "core.ClusterTrustBundleProjection": {  # core/v1
        1: ("name", "*string"),
        2: ("signerName", "*string"),
        3: ("labelSelector", "meta.LabelSelector"),
        4: ("path", "*string"),
        5: ("optional", "*bool"),
        6: ("user", "*int"),
    },
    "core.ConfigMap": {  # core/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("data", "map[string]string"),
        3: ("binaryData", "map[string]bytes"),
        4: ("immutable", "*bool"),
    },
    "core.ConfigMapEnvSource": {1: ("", "core.LocalObjectReference"), 2: ("optional", "*bool")},  # core/v1
    "core.ConfigMapKeySelector": {  # core/v1
        1: ("", "core.LocalObjectReference"),
        2: ("key", "*string"),
        3: ("optional", "*bool"),
    },
    "core.ConfigMapProjection": {  # core/v1
        1: ("", "core.LocalObjectReference"),
        2: ("items", "[]core.KeyToPath"),
        4: ("optional", "*bool"),
    },
    "core.ConfigMapVolumeSource": {  # core/v1
        1: ("", "core.LocalObjectReference"),
        2: ("items", "[]core.KeyToPath"),
        3: ("defaultMode", "*int"),
        4: ("optional", "*bool"),
        5: ("defaultUser", "*int"),
    },
    "core.Container": {  # core/v1
        1: ("name", "*string"),
        2: ("image", "string"),
        3: ("command", "[]string"),
        4: ("args", "[]string"),
        5: ("workingDir", "string"),
        6: ("ports", "[]core.ContainerPort"),
        7: ("env", "[]core.EnvVar"),
        8: ("resources", "core.ResourceRequirements"),
        9: ("volumeMounts", "[]core.VolumeMount"),
        10: ("livenessProbe", "core.Probe"),
        11: ("readinessProbe", "core.Probe"),
        12: ("lifecycle", "core.Lifecycle"),
        13: ("terminationMessagePath", "string"),
        14: ("imagePullPolicy", "string"),
        15: ("securityContext", "core.SecurityContext"),
        16: ("stdin", "bool"),
        17: ("stdinOnce", "bool"),
        18: ("tty", "bool"),
        19: ("envFrom", "[]core.EnvFromSource"),
        20: ("terminationMessagePolicy", "string"),
        21: ("volumeDevices", "[]core.VolumeDevice"),
        22: ("startupProbe", "core.Probe"),
        23: ("resizePolicy", "[]core.ContainerResizePolicy"),
        24: ("restartPolicy", "*string"),
        25: ("restartPolicyRules", "[]core.ContainerRestartRule"),
    },
    "core.ContainerPort": {  # core/v1
        1: ("name", "string"),
        2: ("hostPort", "int"),
        3: ("containerPort", "*int"),
        4: ("protocol", "string"),
        5: ("hostIP", "string"),
    },
    "core.ContainerResizePolicy": {  # core/v1
        1: ("resourceName", "*string"),
        2: ("restartPolicy", "*string"),
    },
    "core.ContainerRestartRule": {  # core/v1
        1: ("action", "string"),
        2: ("exitCodes", "core.ContainerRestartRuleOnExitCodes"),
    },
    "core.ContainerRestartRuleOnExitCodes": {1: ("operator", "string"), 2: ("values", "[]int")},  # core/v1
    "core.DownwardAPIProjection": {1: ("items", "[]core.DownwardAPIVolumeFile")},  # core/v1
    "core.DownwardAPIVolumeFile": {  # core/v1
        1: ("path", "*string"),
        2: ("fieldRef", "core.ObjectFieldSelector"),
        3: ("resourceFieldRef", "core.ResourceFieldSelector"),
        4: ("mode", "*int"),
        5: ("user", "*int"),
    },
    "core.DownwardAPIVolumeSource": {  # core/v1
        1: ("items", "[]core.DownwardAPIVolumeFile"),
        2: ("defaultMode", "*int"),
        3: ("defaultUser", "*int"),
    },
    "core.EmptyDirVolumeSource": {  # core/v1
        1: ("medium", "string"),
        2: ("sizeLimit", "resource.Quantity"),
        3: ("mode", "*int"),
    },
    "core.EnvFromSource": {  # core/v1
        1: ("prefix", "string"),
        2: ("configMapRef", "core.ConfigMapEnvSource"),
        3: ("secretRef", "core.SecretEnvSource"),
    },
    "core.EnvVar": {  # core/v1
        1: ("name", "*string"),
        2: ("value", "string"),
        3: ("valueFrom", "core.EnvVarSource"),
    },
    "core.EnvVarSource": {  # core/v1
        1: ("fieldRef", "core.ObjectFieldSelector"),
        2: ("resourceFieldRef", "core.ResourceFieldSelector"),
        3: ("configMapKeyRef", "core.ConfigMapKeySelector"),
        4: ("secretKeyRef", "core.SecretKeySelector"),
        5: ("fileKeyRef", "core.FileKeySelector"),
    },
    "core.EphemeralContainer": {  # core/v1
        1: ("", "core.EphemeralContainerCommon"),
        2: ("targetContainerName", "string"),
    },
    "core.EphemeralContainerCommon": {  # core/v1
        1: ("name", "*string"),
        2: ("image", "string"),
        3: ("command", "[]string"),
        4: ("args", "[]string"),
        5: ("workingDir", "string"),
        6: ("ports", "[]core.ContainerPort"),
        7: ("env", "[]core.EnvVar"),
        8: ("resources", "core.ResourceRequirements"),
        9: ("volumeMounts", "[]core.VolumeMount"),
        10: ("livenessProbe", "core.Probe"),
        11: ("readinessProbe", "core.Probe"),
        12: ("lifecycle", "core.Lifecycle"),
        13: ("terminationMessagePath", "string"),
        14: ("imagePullPolicy", "string"),
        15: ("securityContext", "core.SecurityContext"),
        16: ("stdin", "bool"),
        17: ("stdinOnce", "bool"),
        18: ("tty", "bool"),
        19: ("envFrom", "[]core.EnvFromSource"),
        20: ("terminationMessagePolicy", "string"),
        21: ("volumeDevices", "[]core.VolumeDevice"),
        22: ("startupProbe", "core.Probe"),
        23: ("resizePolicy", "[]core.ContainerResizePolicy"),
        24: ("restartPolicy", "*string"),
        25: ("restartPolicyRules", "[]core.ContainerRestartRule"),
    },
    "core.EphemeralVolumeSource": {  # core/v1
        1: ("volumeClaimTemplate", "core.PersistentVolumeClaimTemplate"),
    },
    "core.EvictionResponder": {1: ("name", "*string"), 2: ("priority", "*int")},  # core/v1
    "core.ExecAction": {1: ("command", "[]string")},  # core/v1
    "core.FileKeySelector": {  # core/v1
        1: ("volumeName", "*string"),
        2: ("path", "*string"),
        3: ("key", "*string"),
        4: ("optional", "*bool"),
    },
    "core.GRPCAction": {1: ("port", "*int"), 2: ("service", "*string"), 3: ("mode", "*string")},  # core/v1
    "core.HTTPGetAction": {  # core/v1
        1: ("path", "string"),
        2: ("port", "intstr.IntOrString"),
        3: ("host", "string"),
        4: ("scheme", "string"),
        5: ("httpHeaders", "[]core.HTTPHeader"),
        6: ("protocol", "*string"),
    },
    "core.HTTPHeader": {1: ("name", "*string"), 2: ("value", "*string")},  # core/v1
    "core.HostAlias": {1: ("ip", "*string"), 2: ("hostnames", "[]string")},  # core/v1
    "core.HostPathVolumeSource": {1: ("path", "*string"), 2: ("type", "*string")},  # core/v1
    "core.ImageVolumeSource": {1: ("reference", "string"), 2: ("pullPolicy", "string")},  # core/v1
    "core.KeyToPath": {  # core/v1
        1: ("key", "*string"),
        2: ("path", "*string"),
        3: ("mode", "*int"),
        4: ("user", "*int"),
    },
    "core.Lifecycle": {  # core/v1
        1: ("postStart", "core.LifecycleHandler"),
        2: ("preStop", "core.LifecycleHandler"),
        3: ("stopSignal", "*string"),
    },
    "core.LifecycleHandler": {  # core/v1
        1: ("exec", "core.ExecAction"),
        2: ("httpGet", "core.HTTPGetAction"),
        3: ("tcpSocket", "core.TCPSocketAction"),
        4: ("sleep", "core.SleepAction"),
    },
    "core.LoadBalancerIngress": {  # core/v1
        1: ("ip", "string"),
        2: ("hostname", "string"),
        3: ("ipMode", "*string"),
        4: ("ports", "[]core.PortStatus"),
    },
    "core.LoadBalancerStatus": {1: ("ingress", "[]core.LoadBalancerIngress")},  # core/v1
    "core.LocalObjectReference": {1: ("name", "string")},  # core/v1
    "core.NFSVolumeSource": {  # core/v1
        1: ("server", "*string"),
        2: ("path", "*string"),
        3: ("readOnly", "bool"),
    },
    "core.Namespace": {  # core/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "core.NamespaceSpec"),
        3: ("status", "core.NamespaceStatus"),
    },
    "core.NamespaceCondition": {  # core/v1
        1: ("type", "*string"),
        2: ("status", "*string"),
        4: ("lastTransitionTime", "meta.Time"),
        5: ("reason", "string"),
        6: ("message", "string"),
    },
    "core.NamespaceSpec": {1: ("finalizers", "[]string")},  # core/v1
    "core.NamespaceStatus": {  # core/v1
        1: ("phase", "string"),
        2: ("conditions", "[]core.NamespaceCondition"),
    },
    "core.NodeAffinity": {  # core/v1
        1: ("requiredDuringSchedulingIgnoredDuringExecution", "core.NodeSelector"),
        2: ("preferredDuringSchedulingIgnoredDuringExecution", "[]core.PreferredSchedulingTerm"),
    },
    "core.NodeSelector": {1: ("nodeSelectorTerms", "[]core.NodeSelectorTerm")},  # core/v1
    "core.NodeSelectorRequirement": {  # core/v1
        1: ("key", "*string"),
        2: ("operator", "*string"),
        3: ("values", "[]string"),
    },
    "core.NodeSelectorTerm": {  # core/v1
        1: ("matchExpressions", "[]core.NodeSelectorRequirement"),
        2: ("matchFields", "[]core.NodeSelectorRequirement"),
    },
    "core.ObjectFieldSelector": {1: ("apiVersion", "string"), 2: ("fieldPath", "*string")},  # core/v1
    "core.ObjectReference": {  # core/v1
        1: ("kind", "string"),
        2: ("namespace", "string"),
        3: ("name", "string"),
        4: ("uid", "string"),
        5: ("apiVersion", "string"),
        6: ("resourceVersion", "string"),
        7: ("fieldPath", "string"),
    },
    "core.PersistentVolumeClaimSpec": {  # core/v1
        1: ("accessModes", "[]string"),
        2: ("resources", "core.VolumeResourceRequirements"),
        3: ("volumeName", "string"),
        4: ("selector", "meta.LabelSelector"),
        5: ("storageClassName", "*string"),
        6: ("volumeMode", "*string"),
        7: ("dataSource", "core.TypedLocalObjectReference"),
        8: ("dataSourceRef", "core.TypedObjectReference"),
        9: ("volumeAttributesClassName", "*string"),
    },
    "core.PersistentVolumeClaimTemplate": {  # core/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "core.PersistentVolumeClaimSpec"),
    },
    "core.PersistentVolumeClaimVolumeSource": {  # core/v1
        1: ("claimName", "*string"),
        2: ("readOnly", "bool"),
    },
    "core.Pod": {1: ("metadata", "meta.ObjectMeta"), 2: ("spec", "core.PodSpec")},  # core/v1
    "core.PodAffinity": {  # core/v1
        1: ("requiredDuringSchedulingIgnoredDuringExecution", "[]core.PodAffinityTerm"),
        2: ("preferredDuringSchedulingIgnoredDuringExecution", "[]core.WeightedPodAffinityTerm"),
    },
    "core.PodAffinityTerm": {  # core/v1
        1: ("labelSelector", "meta.LabelSelector"),
        2: ("namespaces", "[]string"),
        3: ("topologyKey", "*string"),
        4: ("namespaceSelector", "meta.LabelSelector"),
        5: ("matchLabelKeys", "[]string"),
        6: ("mismatchLabelKeys", "[]string"),
    },
    "core.PodAntiAffinity": {  # core/v1
        1: ("requiredDuringSchedulingIgnoredDuringExecution", "[]core.PodAffinityTerm"),
        2: ("preferredDuringSchedulingIgnoredDuringExecution", "[]core.WeightedPodAffinityTerm"),
    },
    "core.PodCertificateProjection": {  # core/v1
        1: ("signerName", "string"),
        2: ("keyType", "string"),
        3: ("maxExpirationSeconds", "*int"),
        4: ("credentialBundlePath", "string"),
        5: ("keyPath", "string"),
        6: ("certificateChainPath", "string"),
        7: ("userAnnotations", "map[string]string"),
        8: ("user", "*int"),
    },
    "core.PodDNSConfig": {  # core/v1
        1: ("nameservers", "[]string"),
        2: ("searches", "[]string"),
        3: ("options", "[]core.PodDNSConfigOption"),
    },
    "core.PodDNSConfigOption": {1: ("name", "string"), 2: ("value", "*string")},  # core/v1
    "core.PodOS": {1: ("name", "*string")},  # core/v1
    "core.PodReadinessGate": {1: ("conditionType", "*string")},  # core/v1
    "core.PodResourceClaim": {  # core/v1
        1: ("name", "*string"),
        3: ("resourceClaimName", "*string"),
        4: ("resourceClaimTemplateName", "*string"),
    },
    "core.PodSchedulingGate": {1: ("name", "*string")},  # core/v1
    "core.PodSchedulingGroup": {1: ("podGroupName", "*string")},  # core/v1
    "core.PodSecurityContext": {  # core/v1
        1: ("seLinuxOptions", "core.SELinuxOptions"),
        2: ("runAsUser", "*int"),
        3: ("runAsNonRoot", "*bool"),
        4: ("supplementalGroups", "[]int"),
        5: ("fsGroup", "*int"),
        6: ("runAsGroup", "*int"),
        7: ("sysctls", "[]core.Sysctl"),
        8: ("windowsOptions", "core.WindowsSecurityContextOptions"),
        9: ("fsGroupChangePolicy", "*string"),
        10: ("seccompProfile", "core.SeccompProfile"),
        11: ("appArmorProfile", "core.AppArmorProfile"),
        12: ("supplementalGroupsPolicy", "*string"),
        13: ("seLinuxChangePolicy", "*string"),
    },
    "core.PodSpec": {  # core/v1
        1: ("volumes", "[]core.Volume"),
        2: ("containers", "[]core.Container"),
        3: ("restartPolicy", "string"),
        4: ("terminationGracePeriodSeconds", "*int"),
        5: ("activeDeadlineSeconds", "*int"),
        6: ("dnsPolicy", "string"),
        7: ("nodeSelector", "map[string]string"),
        8: ("serviceAccountName", "string"),
        9: ("serviceAccount", "string"),
        10: ("nodeName", "string"),
        11: ("hostNetwork", "bool"),
        12: ("hostPID", "bool"),
        13: ("hostIPC", "bool"),
        14: ("securityContext", "core.PodSecurityContext"),
        15: ("imagePullSecrets", "[]core.LocalObjectReference"),
        16: ("hostname", "string"),
        17: ("subdomain", "string"),
        18: ("affinity", "core.Affinity"),
        19: ("schedulerName", "string"),
        20: ("initContainers", "[]core.Container"),
        21: ("automountServiceAccountToken", "*bool"),
        22: ("tolerations", "[]core.Toleration"),
        23: ("hostAliases", "[]core.HostAlias"),
        24: ("priorityClassName", "string"),
        25: ("priority", "*int"),
        26: ("dnsConfig", "core.PodDNSConfig"),
        27: ("shareProcessNamespace", "*bool"),
        28: ("readinessGates", "[]core.PodReadinessGate"),
        29: ("runtimeClassName", "*string"),
        30: ("enableServiceLinks", "*bool"),
        31: ("preemptionPolicy", "*string"),
        32: ("overhead", "map[string]resource.Quantity"),
        33: ("topologySpreadConstraints", "[]core.TopologySpreadConstraint"),
        34: ("ephemeralContainers", "[]core.EphemeralContainer"),
        35: ("setHostnameAsFQDN", "*bool"),
        36: ("os", "core.PodOS"),
        37: ("hostUsers", "*bool"),
        38: ("schedulingGates", "[]core.PodSchedulingGate"),
        39: ("resourceClaims", "[]core.PodResourceClaim"),
        40: ("resources", "core.ResourceRequirements"),
        41: ("hostnameOverride", "*string"),
        43: ("schedulingGroup", "core.PodSchedulingGroup"),
        44: ("evictionResponders", "[]core.EvictionResponder"),
    },
    "core.PodTemplateSpec": {1: ("metadata", "meta.ObjectMeta"), 2: ("spec", "core.PodSpec")},  # core/v1
    "core.PortStatus": {1: ("port", "*int"), 2: ("protocol", "*string"), 3: ("error", "*string")},  # core/v1
    "core.PreferredSchedulingTerm": {  # core/v1
        1: ("weight", "*int"),
        2: ("preference", "core.NodeSelectorTerm"),
    },
    "core.Probe": {  # core/v1
        1: ("", "core.ProbeHandler"),
        2: ("initialDelaySeconds", "int"),
        3: ("timeoutSeconds", "int"),
        4: ("periodSeconds", "int"),
        5: ("successThreshold", "int"),
        6: ("failureThreshold", "int"),
        7: ("terminationGracePeriodSeconds", "*int"),
    },
    "core.ProbeHandler": {  # core/v1
        1: ("exec", "core.ExecAction"),
        2: ("httpGet", "core.HTTPGetAction"),
        3: ("tcpSocket", "core.TCPSocketAction"),
        4: ("grpc", "core.GRPCAction"),
    },
    "core.ProjectedVolumeSource": {  # core/v1
        1: ("sources", "[]core.VolumeProjection"),
        2: ("defaultMode", "*int"),
        3: ("defaultUser", "*int"),
    },
    "core.ResourceClaim": {1: ("name", "*string"), 2: ("request", "string")},  # core/v1
    "core.ResourceFieldSelector": {  # core/v1
        1: ("containerName", "string"),
        2: ("resource", "*string"),
        3: ("divisor", "resource.Quantity"),
    },
    "core.ResourceRequirements": {  # core/v1
        1: ("limits", "map[string]resource.Quantity"),
        2: ("requests", "map[string]resource.Quantity"),
        3: ("claims", "[]core.ResourceClaim"),
    },
    "core.ResourceQuota": {  # core/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "core.ResourceQuotaSpec"),
        3: ("status", "core.ResourceQuotaStatus"),
    },
    "core.ResourceQuotaSpec": {  # core/v1
        1: ("hard", "map[string]resource.Quantity"),
        2: ("scopes", "[]string"),
        3: ("scopeSelector", "core.ScopeSelector"),
    },
    "core.ResourceQuotaStatus": {  # core/v1
        1: ("hard", "map[string]resource.Quantity"),
        2: ("used", "map[string]resource.Quantity"),
    },
    "core.SELinuxOptions": {  # core/v1
        1: ("user", "string"),
        2: ("role", "string"),
        3: ("type", "string"),
        4: ("level", "string"),
    },
    "core.ScopeSelector": {1: ("matchExpressions", "[]core.ScopedResourceSelectorRequirement")},  # core/v1
    "core.ScopedResourceSelectorRequirement": {  # core/v1
        1: ("scopeName", "*string"),
        2: ("operator", "*string"),
        3: ("values", "[]string"),
    },
    "core.SeccompProfile": {1: ("type", "*string"), 2: ("localhostProfile", "*string")},  # core/v1
    "core.Secret": {  # core/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("data", "map[string]bytes"),
        3: ("type", "string"),
        4: ("stringData", "map[string]string"),
        5: ("immutable", "*bool"),
    },
    "core.SecretEnvSource": {1: ("", "core.LocalObjectReference"), 2: ("optional", "*bool")},  # core/v1
    "core.SecretKeySelector": {  # core/v1
        1: ("", "core.LocalObjectReference"),
        2: ("key", "*string"),
        3: ("optional", "*bool"),
    },
    "core.SecretProjection": {  # core/v1
        1: ("", "core.LocalObjectReference"),
        2: ("items", "[]core.KeyToPath"),
        4: ("optional", "*bool"),
    },
    "core.SecretVolumeSource": {  # core/v1
        1: ("secretName", "string"),
        2: ("items", "[]core.KeyToPath"),
        3: ("defaultMode", "*int"),
        4: ("optional", "*bool"),
        5: ("defaultUser", "*int"),
    },
    "core.SecurityContext": {  # core/v1
        1: ("capabilities", "core.Capabilities"),
        2: ("privileged", "*bool"),
        3: ("seLinuxOptions", "core.SELinuxOptions"),
        4: ("runAsUser", "*int"),
        5: ("runAsNonRoot", "*bool"),
        6: ("readOnlyRootFilesystem", "*bool"),
        7: ("allowPrivilegeEscalation", "*bool"),
        8: ("runAsGroup", "*int"),
        9: ("procMount", "*string"),
        10: ("windowsOptions", "core.WindowsSecurityContextOptions"),
        11: ("seccompProfile", "core.SeccompProfile"),
        12: ("appArmorProfile", "core.AppArmorProfile"),
    },
    "core.Service": {  # core/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "core.ServiceSpec"),
        3: ("status", "core.ServiceStatus"),
    },
    "core.ServiceAccount": {  # core/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("secrets", "[]core.ObjectReference"),
        3: ("imagePullSecrets", "[]core.LocalObjectReference"),
        4: ("automountServiceAccountToken", "*bool"),
    },
    "core.ServiceAccountTokenProjection": {  # core/v1
        1: ("audience", "string"),
        2: ("expirationSeconds", "*int"),
        3: ("path", "*string"),
        4: ("user", "*int"),
    },
    "core.ServicePort": {  # core/v1
        1: ("name", "string"),
        2: ("protocol", "string"),
        3: ("port", "*int"),
        4: ("targetPort", "intstr.IntOrString"),
        5: ("nodePort", "int"),
        6: ("appProtocol", "*string"),
    },
    "core.ServiceSpec": {  # core/v1
        1: ("ports", "[]core.ServicePort"),
        2: ("selector", "map[string]string"),
        3: ("clusterIP", "string"),
        4: ("type", "string"),
        5: ("externalIPs", "[]string"),
        7: ("sessionAffinity", "string"),
        8: ("loadBalancerIP", "string"),
        9: ("loadBalancerSourceRanges", "[]string"),
        10: ("externalName", "string"),
        11: ("externalTrafficPolicy", "string"),
        12: ("healthCheckNodePort", "int"),
        13: ("publishNotReadyAddresses", "bool"),
        14: ("sessionAffinityConfig", "core.SessionAffinityConfig"),
        17: ("ipFamilyPolicy", "*string"),
        18: ("clusterIPs", "[]string"),
        19: ("ipFamilies", "[]string"),
        20: ("allocateLoadBalancerNodePorts", "*bool"),
        21: ("loadBalancerClass", "*string"),
        22: ("internalTrafficPolicy", "*string"),
        23: ("trafficDistribution", "*string"),
    },
    "core.ServiceStatus": {  # core/v1
        1: ("loadBalancer", "core.LoadBalancerStatus"),
        2: ("conditions", "[]meta.Condition"),
    },
    "core.SessionAffinityConfig": {1: ("clientIP", "core.ClientIPConfig")},  # core/v1
    "core.SleepAction": {1: ("seconds", "*int")},  # core/v1
    "core.Sysctl": {1: ("name", "*string"), 2: ("value", "*string")},  # core/v1
    "core.TCPSocketAction": {1: ("port", "intstr.IntOrString"), 2: ("host", "string")},  # core/v1
    "core.Toleration": {  # core/v1
        1: ("key", "string"),
        2: ("operator", "string"),
        3: ("value", "string"),
        4: ("effect", "string"),
        5: ("tolerationSeconds", "*int"),
    },
    "core.TopologySpreadConstraint": {  # core/v1
        1: ("maxSkew", "*int"),
        2: ("topologyKey", "*string"),
        3: ("whenUnsatisfiable", "*string"),
        4: ("labelSelector", "meta.LabelSelector"),
        5: ("minDomains", "*int"),
        6: ("nodeAffinityPolicy", "*string"),
        7: ("nodeTaintsPolicy", "*string"),
        8: ("matchLabelKeys", "[]string"),
    },
    "core.TypedLocalObjectReference": {  # core/v1
        1: ("apiGroup", "*string"),
        2: ("kind", "*string"),
        3: ("name", "*string"),
    },
    "core.TypedObjectReference": {  # core/v1
        1: ("apiGroup", "*string"),
        2: ("kind", "*string"),
        3: ("name", "*string"),
        4: ("namespace", "*string"),
    },
    "core.Volume": {1: ("name", "*string"), 2: ("", "core.VolumeSource")},  # core/v1
    "core.VolumeDevice": {1: ("name", "*string"), 2: ("devicePath", "*string")},  # core/v1
    "core.VolumeMount": {  # core/v1
        1: ("name", "*string"),
        2: ("readOnly", "bool"),
        3: ("mountPath", "*string"),
        4: ("subPath", "string"),
        5: ("mountPropagation", "*string"),
        6: ("subPathExpr", "string"),
        7: ("recursiveReadOnly", "*string"),
        8: ("bindMountOptions", "[]string"),
    },
    "core.VolumeProjection": {  # core/v1
        1: ("secret", "core.SecretProjection"),
        2: ("downwardAPI", "core.DownwardAPIProjection"),
        3: ("configMap", "core.ConfigMapProjection"),
        4: ("serviceAccountToken", "core.ServiceAccountTokenProjection"),
        5: ("clusterTrustBundle", "core.ClusterTrustBundleProjection"),
        6: ("podCertificate", "core.PodCertificateProjection"),
    },
    "core.VolumeResourceRequirements": {  # core/v1
        1: ("limits", "map[string]resource.Quantity"),
        2: ("requests", "map[string]resource.Quantity"),
    },
    "core.VolumeSource": {  # core/v1
        1: ("hostPath", "core.HostPathVolumeSource"),
        2: ("emptyDir", "core.EmptyDirVolumeSource"),
        6: ("secret", "core.SecretVolumeSource"),
        7: ("nfs", "core.NFSVolumeSource"),
        10: ("persistentVolumeClaim", "core.PersistentVolumeClaimVolumeSource"),
        16: ("downwardAPI", "core.DownwardAPIVolumeSource"),
        19: ("configMap", "core.ConfigMapVolumeSource"),
        26: ("projected", "core.ProjectedVolumeSource"),
        28: ("csi", "core.CSIVolumeSource"),
        29: ("ephemeral", "core.EphemeralVolumeSource"),
        30: ("image", "core.ImageVolumeSource"),
    },
    "core.WeightedPodAffinityTerm": {  # core/v1
        1: ("weight", "*int"),
        2: ("podAffinityTerm", "core.PodAffinityTerm"),
    },
    "core.WindowsSecurityContextOptions": {  # core/v1
        1: ("gmsaCredentialSpecName", "*string"),
        2: ("gmsaCredentialSpec", "*string"),
        3: ("runAsUserName", "*string"),
        4: ("hostProcess", "*bool"),
    },
    "meta.Condition": {  # pkg/apis/meta/v1
        1: ("type", "*string"),
        2: ("status", "*string"),
        3: ("observedGeneration", "int"),
        4: ("lastTransitionTime", "meta.Time"),
        5: ("reason", "*string"),
        6: ("message", "*string"),
    },
    "meta.DeleteOptions": {  # pkg/apis/meta/v1
        1: ("gracePeriodSeconds", "*int"),
        2: ("preconditions", "meta.Preconditions"),
        3: ("orphanDependents", "*bool"),
        4: ("propagationPolicy", "*string"),
        5: ("dryRun", "[]string"),
        6: ("ignoreStoreReadErrorWithClusterBreakingPotential", "*bool"),
    },
    "meta.FieldSelectorRequirement": {  # pkg/apis/meta/v1
        1: ("key", "*string"),
        2: ("operator", "*string"),
        3: ("values", "[]string"),
    },
    "meta.LabelSelector": {  # pkg/apis/meta/v1
        1: ("matchLabels", "map[string]string"),
        2: ("matchExpressions", "[]meta.LabelSelectorRequirement"),
    },
    "meta.LabelSelectorRequirement": {  # pkg/apis/meta/v1
        1: ("key", "*string"),
        2: ("operator", "*string"),
        3: ("values", "[]string"),
    },
    "meta.ManagedFieldsEntry": {  # pkg/apis/meta/v1
        1: ("manager", "string"),
        2: ("operation", "string"),
        3: ("apiVersion", "string"),
        4: ("time", "meta.Time"),
        6: ("fieldsType", "string"),
        7: ("fieldsV1", "meta.FieldsV1"),
        8: ("subresource", "string"),
    },
    "meta.ObjectMeta": {  # pkg/apis/meta/v1
        1: ("name", "string"),
        2: ("generateName", "string"),
        3: ("namespace", "string"),
        4: ("selfLink", "string"),
        5: ("uid", "string"),
        6: ("resourceVersion", "string"),
        7: ("generation", "int"),
        8: ("creationTimestamp", "meta.Time"),
        9: ("deletionTimestamp", "meta.Time"),
        10: ("deletionGracePeriodSeconds", "*int"),
        11: ("labels", "map[string]string"),
        12: ("annotations", "map[string]string"),
        13: ("ownerReferences", "[]meta.OwnerReference"),
        14: ("finalizers", "[]string"),
        17: ("managedFields", "[]meta.ManagedFieldsEntry"),
    },
    "meta.OwnerReference": {  # pkg/apis/meta/v1
        1: ("kind", "*string"),
        3: ("name", "*string"),
        4: ("uid", "*string"),
        5: ("apiVersion", "*string"),
        6: ("controller", "*bool"),
        7: ("blockOwnerDeletion", "*bool"),
    },
    "meta.Preconditions": {1: ("uid", "*string"), 2: ("resourceVersion", "*string")},  # pkg/apis/meta/v1
    "networking.HTTPIngressPath": {  # networking/v1
        1: ("path", "string"),
        2: ("backend", "networking.IngressBackend"),
        3: ("pathType", "*string"),
    },
    "networking.HTTPIngressRuleValue": {1: ("paths", "[]networking.HTTPIngressPath")},  # networking/v1
    "networking.Ingress": {  # networking/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "networking.IngressSpec"),
        3: ("status", "networking.IngressStatus"),
    },
    "networking.IngressBackend": {  # networking/v1
        3: ("resource", "core.TypedLocalObjectReference"),
        4: ("service", "networking.IngressServiceBackend"),
    },
    "networking.IngressLoadBalancerIngress": {  # networking/v1
        1: ("ip", "string"),
        2: ("hostname", "string"),
        4: ("ports", "[]networking.IngressPortStatus"),
    },
    "networking.IngressLoadBalancerStatus": {  # networking/v1
        1: ("ingress", "[]networking.IngressLoadBalancerIngress"),
    },
    "networking.IngressPortStatus": {  # networking/v1
        1: ("port", "*int"),
        2: ("protocol", "*string"),
        3: ("error", "*string"),
    },
    "networking.IngressRule": {  # networking/v1
        1: ("host", "string"),
        2: ("", "networking.IngressRuleValue"),
    },
    "networking.IngressRuleValue": {1: ("http", "networking.HTTPIngressRuleValue")},  # networking/v1
    "networking.IngressServiceBackend": {  # networking/v1
        1: ("name", "*string"),
        2: ("port", "networking.ServiceBackendPort"),
    },
    "networking.IngressSpec": {  # networking/v1
        1: ("defaultBackend", "networking.IngressBackend"),
        2: ("tls", "[]networking.IngressTLS"),
        3: ("rules", "[]networking.IngressRule"),
        4: ("ingressClassName", "*string"),
    },
    "networking.IngressStatus": {  # networking/v1
        1: ("loadBalancer", "networking.IngressLoadBalancerStatus"),
    },
    "networking.IngressTLS": {1: ("hosts", "[]string"), 2: ("secretName", "string")},  # networking/v1
    "networking.ServiceBackendPort": {1: ("name", "string"), 2: ("number", "int")},  # networking/v1
    "policy.Eviction": {  # policy/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("deleteOptions", "meta.DeleteOptions"),
    },
    "policy.PodDisruptionBudget": {  # policy/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("spec", "policy.PodDisruptionBudgetSpec"),
        3: ("status", "policy.PodDisruptionBudgetStatus"),
    },
    "policy.PodDisruptionBudgetSpec": {  # policy/v1
        1: ("minAvailable", "intstr.IntOrString"),
        2: ("selector", "meta.LabelSelector"),
        3: ("maxUnavailable", "intstr.IntOrString"),
        4: ("unhealthyPodEvictionPolicy", "*string"),
    },
    "policy.PodDisruptionBudgetStatus": {  # policy/v1
        1: ("observedGeneration", "int"),
        2: ("disruptedPods", "map[string]meta.Time"),
        3: ("disruptionsAllowed", "*int"),
        4: ("currentHealthy", "*int"),
        5: ("desiredHealthy", "*int"),
        6: ("expectedPods", "*int"),
        7: ("conditions", "[]meta.Condition"),
    },
    "rbac.AggregationRule": {1: ("clusterRoleSelectors", "[]meta.LabelSelector")},  # rbac/v1
    "rbac.ClusterRole": {  # rbac/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("rules", "[]rbac.PolicyRule"),
        3: ("aggregationRule", "rbac.AggregationRule"),
    },
    "rbac.ClusterRoleBinding": {  # rbac/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("subjects", "[]rbac.Subject"),
        3: ("roleRef", "rbac.RoleRef"),
    },
    "rbac.PolicyRule": {  # rbac/v1
        1: ("verbs", "[]string"),
        2: ("apiGroups", "[]string"),
        3: ("resources", "[]string"),
        4: ("resourceNames", "[]string"),
        5: ("nonResourceURLs", "[]string"),
    },
    "rbac.Role": {1: ("metadata", "meta.ObjectMeta"), 2: ("rules", "[]rbac.PolicyRule")},  # rbac/v1
    "rbac.RoleBinding": {  # rbac/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("subjects", "[]rbac.Subject"),
        3: ("roleRef", "rbac.RoleRef"),
    },
    "rbac.RoleRef": {1: ("apiGroup", "*string"), 2: ("kind", "*string"), 3: ("name", "*string")},  # rbac/v1
    "rbac.Subject": {  # rbac/v1
        1: ("kind", "*string"),
        2: ("apiGroup", "string"),
        3: ("name", "*string"),
        4: ("namespace", "string"),
    },
    "scheduling.PriorityClass": {  # scheduling/v1
        1: ("metadata", "meta.ObjectMeta"),
        2: ("value", "*int"),
        3: ("globalDefault", "bool"),
        4: ("description", "string"),
        5: ("preemptionPolicy", "*string"),
    },
}

KINDS: Final[Mapping[str, tuple[str | None, str]]] = {
    # kind: (apiVersion, message); the kinds kubectl's typed commands send, and their neighbours.
    "Namespace": ("v1", "core.Namespace"),  # kubectl create namespace
    "ConfigMap": ("v1", "core.ConfigMap"),  # kubectl create configmap
    "Secret": ("v1", "core.Secret"),  # kubectl create secret generic|tls|docker-registry
    "ServiceAccount": ("v1", "core.ServiceAccount"),  # kubectl create serviceaccount
    "Service": ("v1", "core.Service"),  # kubectl create service clusterip|nodeport|...
    "Pod": ("v1", "core.Pod"),  # kubectl run
    "ResourceQuota": ("v1", "core.ResourceQuota"),  # kubectl create quota
    "Binding": ("v1", "core.Binding"),  # pods/binding (schedulers)
    "Deployment": ("apps/v1", "apps.Deployment"),  # kubectl create deployment
    "ReplicaSet": ("apps/v1", "apps.ReplicaSet"),
    "Job": ("batch/v1", "batch.Job"),  # kubectl create job (--from=cronjob/x too)
    "CronJob": ("batch/v1", "batch.CronJob"),  # kubectl create cronjob
    "Scale": ("autoscaling/v1", "autoscaling.Scale"),  # */scale
    # kubectl autoscale
    "HorizontalPodAutoscaler": ("autoscaling/v2", "autoscalingv2.HorizontalPodAutoscaler"),
    "Role": ("rbac.authorization.k8s.io/v1", "rbac.Role"),  # kubectl create role
    "ClusterRole": ("rbac.authorization.k8s.io/v1", "rbac.ClusterRole"),
    "RoleBinding": ("rbac.authorization.k8s.io/v1", "rbac.RoleBinding"),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", "rbac.ClusterRoleBinding"),
    "SelfSubjectAccessReview": (  # kubectl auth can-i
        "authorization.k8s.io/v1",
        "authorization.SelfSubjectAccessReview",
    ),
    "SelfSubjectRulesReview": (  # kubectl auth can-i --list
        "authorization.k8s.io/v1",
        "authorization.SelfSubjectRulesReview",
    ),
    "SubjectAccessReview": ("authorization.k8s.io/v1", "authorization.SubjectAccessReview"),
    "LocalSubjectAccessReview": ("authorization.k8s.io/v1", "authorization.LocalSubjectAccessReview"),
    "SelfSubjectReview": (  # kubectl auth whoami
        "authentication.k8s.io/v1",
        "authentication.SelfSubjectReview",
    ),
    "TokenRequest": ("authentication.k8s.io/v1", "authentication.TokenRequest"),  # kubectl create token
    "TokenReview": ("authentication.k8s.io/v1", "authentication.TokenReview"),
    "Eviction": ("policy/v1", "policy.Eviction"),  # kubectl drain
    "PodDisruptionBudget": ("policy/v1", "policy.PodDisruptionBudget"),  # kubectl create pdb
    "Ingress": ("networking.k8s.io/v1", "networking.Ingress"),  # kubectl create ingress
    "Lease": ("coordination.k8s.io/v1", "coordination.Lease"),
    # kubectl certificate approve|deny (CertificateSigningRequests().UpdateApproval)
    "CertificateSigningRequest": ("certificates.k8s.io/v1", "certificates.CertificateSigningRequest"),
    "PriorityClass": ("scheduling.k8s.io/v1", "scheduling.PriorityClass"),  # kubectl create priorityclass
    # Registered in every group version: any apiVersion (kubectl drain --disable-eviction).
    "DeleteOptions": (None, "meta.DeleteOptions"),
}
"""The top-level kinds that can be decoded, each with the apiVersion it must come with (or, in an
envelope that names no apiVersion, is taken to have); :data:`OTHER_VERSIONS` adds further versions."""

OTHER_VERSIONS: Final[Mapping[tuple[str, str], str]] = {
    # (apiVersion, kind): message; kinds served in more than one version, the others than KINDS'.
    # kubectl autoscale's fallback when its autoscaling/v2 create fails (AlreadyExists too).
    ("autoscaling/v1", "HorizontalPodAutoscaler"): "autoscaling.HorizontalPodAutoscaler",
}
"""Further group versions of :data:`KINDS`' kinds, decoded only when the envelope names them."""
