"""Faults in a cluster's audit log: who broke the cluster on purpose, and who mended it.

kube-apiserver's audit log (``controlplane/apiserver/audit/``) answers *who did what, when* for every
API request. A fault is not an API request: in a real cluster an operator who stops a kubelet does
it on the node, and the audit log only shows what followed (the node's Lease no longer renewed,
the node lifecycle controller's taints). A lesson's record must also say who caused it, so the fault
service writes each fault's start and end to the cluster's audit log as ``audit.k8s.io/v1`` Events
of their own: verb ``create`` when a fault is applied and ``delete`` when it is cleared, on the
resource ``faults`` of the group ``kubelab.io``, which no API serves (so no request can be mistaken
for one). The user is whoever asked (an instructor, a student's chapter button, ``manage.py
fault``), or ``system:kubelab:fault-service`` when the service itself ended the fault (its time was
up, or the cluster stopped). The fault's id, kind, parameters and reason are annotations, as
upstream's admission plugins annotate events (``authorization.k8s.io/decision``).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Final

from controlplane.api.meta import Object
from controlplane.apiserver.audit.event import API_VERSION, PendingEvent, object_ref, success_status
from controlplane.faults.book import Fault

if TYPE_CHECKING:
    from controlplane.runtime import Cluster

#: The user of what the service does by itself.
SERVICE_USER: Final = "system:kubelab:fault-service"
GROUP: Final = "kubelab.io"
RESOURCE: Final = "faults"
#: The level of these events: who, what and when; a fault has no body.
LEVEL: Final = "Metadata"


def fault_event(fault: Fault, *, verb: str, actor: str, reason: str, now: float) -> Object:
    """The audit Event of ``fault`` applied (``verb`` ``create``) or cleared (``delete``) by ``actor``
    ("": the service itself) at ``now`` (seconds)."""
    params = ",".join(f"{key}={value}" for key, value in sorted(fault.spec.parameters().items()))
    annotations = {
        f"{GROUP}/fault": fault.id,
        f"{GROUP}/fault-kind": fault.kind,
        f"{GROUP}/fault-target": fault.target,
    }
    if params:
        annotations[f"{GROUP}/fault-parameters"] = params
    if reason:
        annotations[f"{GROUP}/reason"] = reason
    return {
        "kind": "Event",
        "apiVersion": API_VERSION,
        "level": LEVEL,
        "auditID": str(uuid.uuid4()),
        "stage": "ResponseComplete",
        "requestURI": f"/apis/{GROUP}/v1/{RESOURCE}/{fault.id}",
        "verb": verb,
        "user": {"username": actor or SERVICE_USER},
        "sourceIPs": [],
        "objectRef": object_ref(
            resource=RESOURCE,
            namespace="",
            name=fault.id,
            api_group=GROUP,
            api_version="v1",
            subresource="",
        ),
        "responseStatus": success_status(201 if verb == "create" else 200),
        "requestReceivedTimestamp": now,
        "stageTimestamp": now,
        "annotations": annotations,
    }


def record(cluster: Cluster, fault: Fault, *, verb: str, actor: str, reason: str) -> bool:
    """Write ``fault``'s event to ``cluster``'s audit log; whether it was written (a cluster whose
    API server does not run, or audits nothing, has no log to write to)."""
    server = cluster.apiserver
    auditor = server.auditor if server is not None else None
    if auditor is None:
        return False
    event = fault_event(fault, verb=verb, actor=actor, reason=reason, now=auditor.now())
    return auditor.log.write(PendingEvent(event))


__all__ = ["SERVICE_USER", "fault_event", "record"]
