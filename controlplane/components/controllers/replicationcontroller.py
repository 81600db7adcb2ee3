"""The ReplicationController controller: the ReplicaSet controller, run for ReplicationControllers.

A ReplicationController (core ``v1``) does exactly what a ReplicaSet does: keep ``spec.replicas`` pods
running from its template, claiming the pods its selector matches. Upstream does not keep two copies
of that logic: ``pkg/controller/replication/replication_controller.go`` builds the ReplicaSet
controller (``replicaset.NewBaseController``) over adapters that present each RC as a ReplicaSet
(``conversion.go``: the selector map becomes ``matchLabels``; status writes go back to the RC).

Kubelab does the same with ``ReplicaSetReconciler`` (``replicaset.py``): the reconciler is told its
kind, so pods get owner references to ``v1``/``ReplicationController``, Events name the RC and status
goes to ``replicationcontrollers/status``. Only two things differ, and this module supplies them:

- the **selector** is read from the plain label map (``{"app": "web"}`` means ``app=web``);
- the **status** has no ``terminatingReplicas`` (``ReplicationControllerStatus`` never had it) and
  always carries ``replicas``, as the RC's Go struct marshals it.

Its Events come from ``replication-controller`` (``SuccessfulCreate`` "Created pod: web-x"...), as
upstream's, and ``kubectl scale rc web --replicas=5`` works through the RC's ``scale`` subresource.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.api.selectors import LabelSelector, SelectorError, label_selector_from_object
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request
from controlplane.components.controllers.deploymentutil import spec
from controlplane.components.controllers.kinds import PODS, REPLICATION_CONTROLLERS
from controlplane.components.controllers.podcontrol import BURST_REPLICAS, ControllerExpectations
from controlplane.components.controllers.replicaset import ReplicaSetReconciler

#: The component name on its Events (upstream's ``replication-controller``).
COMPONENT: Final = "replication-controller"
#: Upstream's workqueue name.
QUEUE_NAME: Final = "replicationmanager"


def rc_selector(rc: Mapping[str, Any]) -> LabelSelector | None:
    """``labels.Set(rc.Spec.Selector).AsSelectorPreValidated()``: every pair must match."""
    selector = spec(rc).get("selector")
    if selector is not None and not isinstance(selector, Mapping):
        return None
    try:
        return label_selector_from_object({"matchLabels": dict(selector or {})})
    except SelectorError:
        return None


class ReplicationControllerReconciler(ReplicaSetReconciler):
    """``ReplicaSetReconciler`` reading an RC's map selector and writing an RC's status."""

    def selector_of(self, rs: Mapping[str, Any]) -> LabelSelector | None:
        return rc_selector(rs)

    async def update_status(self, rs: Object, new_status: Object) -> Object:
        rc_status = {k: v for k, v in new_status.items() if k != "terminatingReplicas"}
        rc_status.setdefault("replicas", 0)
        return await super().update_status(rs, rc_status)


def add_to_manager(
    manager: Manager,
    *,
    workers: int = 1,
    burst_replicas: int = BURST_REPLICAS,
    expectations: ControllerExpectations | None = None,
) -> Controller:
    """Build the ReplicationController controller on ``manager``: for RCs, woken by their pods."""
    reconciler = ReplicationControllerReconciler(
        manager.client,
        replicasets=manager.cache(REPLICATION_CONTROLLERS),
        pods=manager.cache(PODS),
        recorder=manager.event_recorder(COMPONENT),
        clock=manager.clock,
        expectations=expectations,
        burst_replicas=burst_replicas,
        kind=REPLICATION_CONTROLLERS,
    )
    controller = manager.new_controller(QUEUE_NAME, reconciler, for_=REPLICATION_CONTROLLERS, workers=workers)

    def enqueue_after(request: Request, delay: float) -> None:
        controller.queue.add_after(request, delay)

    manager.informer_for(PODS).add_event_handler(
        reconciler.pod_event_handler(controller.enqueue, enqueue_after)
    )
    return controller


__all__ = ["COMPONENT", "ReplicationControllerReconciler", "add_to_manager", "rc_selector"]
