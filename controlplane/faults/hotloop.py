"""A controller gone wrong: a client of the cluster that floods the API server, and what stops it.

Controllers are loops, and a loop with a bug sends requests far faster than it should: a reconcile
that fails and is requeued at once, by every worker at the same moment, again and again. client-go's
rate limiter (5 QPS by default) would hold it back, unless its author raised the limit, as many do;
then only the server can protect everyone else. That is API Priority and Fairness
(``controlplane/apiserver/flowcontrol``): the requests of a flow take seats of one priority level, wait
in its queues when the seats are taken, and are answered 429 with ``Retry-After`` once the queues are
full. Requests of other levels (everyone else's) never wait for them.

``HotLoop`` is such a controller inside one cluster, as the user ``hot-loop``: every ``PERIOD`` it
patches its ConfigMap ``kube-system/kubelab-hot-loop`` (a counter that changes every time, as a
controller that stamps a status on every reconcile, and is woken again by its own write) with
``WORKERS`` requests at once, with no client-side rate limit, and it does not wait for a 429's
``Retry-After``: it tries again at its next tick (that is its bug). Before it starts, the lab gives it
what a cluster operator gives a controller: its ConfigMap, a ClusterRole and binding to read and
patch ConfigMaps, and a FlowSchema that puts its requests in a priority level of their own
(``kubelab-hot-loop``: one seat and a queue of ``QUEUE_LENGTH``), so each burst overflows it: one
request runs, a few wait in the queue, the rest are answered 429. They are applied through the API
server as the lab itself (in ``system:masters``), as a sandbox's other objects are
(``courses/sandboxes/bootstrap.py``), and deleted when the loop stops: ``kubectl get flowschemas`` shows
where its requests go while it runs.

Why writes, in bursts, rather than reads one after another as fast as the server answers: a read
served from the watch cache is answered without the API server ever waiting, so in this one-process
lab two reads never hold seats at the same time and none ever queues; a loop of them would only take
all of the lab's CPU (every cluster of the lab shares one event loop), a few thousand requests a
second. A write holds its seat while the store commits it, as upstream's do while etcd does, so a
burst of them queues and overflows the level every tick, for a small part of the lab's CPU, and the
diagram can still draw it. APF limits how many requests of a flow run at once, not what they cost.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import TYPE_CHECKING, Any, Final

from controlplane.api.meta import Object
from controlplane.client.errors import APIError, NotFound, TransportError
from controlplane.client.rest import PatchType, RESTClient
from controlplane.identity import SYSTEM_MASTERS
from controlplane.tasks import cancel_and_wait

if TYPE_CHECKING:
    from controlplane.runtime import Cluster

logger = logging.getLogger(__name__)

#: Who the controller is to the API server, and how it names itself.
USER: Final = "hot-loop"
USER_AGENT: Final = "hot-loop-controller/v0.1.0 (linux/amd64) kubelab"
#: The lab's own identity for the objects it applies around the loop, and its field manager.
LAB_USER: Final = "kubelab:faults"
FIELD_MANAGER: Final = "kubelab-faults"
#: How many requests the loop sends at once, every ``PERIOD`` seconds of the cluster's clock: more
#: than its priority level's seat and queue hold.
WORKERS: Final = 12
PERIOD: Final = 0.2
#: Where its ConfigMap is; the name of that ConfigMap, its ClusterRole, binding, FlowSchema and
#: priority level.
NAMESPACE: Final = "kube-system"
NAME: Final = "kubelab-hot-loop"
#: Its FlowSchema comes before upstream's ``global-default`` (9900) and ``service-accounts`` (9000),
#: after the system's own and a sandbox student's (1000).
PRECEDENCE: Final = 1500
#: Its priority level: one share (one seat of the lab's 60), one queue of a few requests.
SHARES: Final = 1
QUEUE_LENGTH: Final = 4

RBAC: Final = "rbac.authorization.k8s.io/v1"
FLOWCONTROL: Final = "flowcontrol.apiserver.k8s.io/v1"


def objects() -> list[Object]:
    """Its ConfigMap, the ClusterRole and binding that let ``hot-loop`` read and patch ConfigMaps, and
    its FlowSchema and priority level, in the order they are applied."""
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "data": {"reconciled": "0"},
    }
    role = {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": {"name": NAME},
        "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "patch"]}
        ],
    }
    binding = {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": NAME},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": USER}],
    }
    level = {
        "apiVersion": FLOWCONTROL,
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": NAME},
        "spec": {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": SHARES,
                "lendablePercent": 0,
                "borrowingLimitPercent": 0,
                "limitResponse": {
                    "type": "Queue",
                    "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": QUEUE_LENGTH},
                },
            },
        },
    }
    schema = {
        "apiVersion": FLOWCONTROL,
        "kind": "FlowSchema",
        "metadata": {"name": NAME},
        "spec": {
            "priorityLevelConfiguration": {"name": NAME},
            "matchingPrecedence": PRECEDENCE,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [
                {
                    "subjects": [{"kind": "User", "user": {"name": USER}}],
                    "resourceRules": [
                        {
                            "verbs": ["*"],
                            "apiGroups": ["*"],
                            "resources": ["*"],
                            "namespaces": ["*"],
                            "clusterScope": True,
                        }
                    ],
                }
            ],
        },
    }
    return [configmap, role, binding, level, schema]


def _path(obj: Object) -> str:
    if obj["kind"] == "ConfigMap":
        return f"/api/v1/namespaces/{NAMESPACE}/configmaps/{obj['metadata']['name']}"
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    plural = {
        "ClusterRole": "clusterroles",
        "ClusterRoleBinding": "clusterrolebindings",
        "PriorityLevelConfiguration": "prioritylevelconfigurations",
        "FlowSchema": "flowschemas",
    }[str(obj["kind"])]
    return f"/apis/{group}/{version}/{plural}/{obj['metadata']['name']}"


class HotLoop:
    """The controller of the module's docstring, in ``cluster``; ``start`` it, ``stop`` it."""

    def __init__(self, cluster: Cluster, *, workers: int = WORKERS) -> None:
        self.cluster = cluster
        self.workers = workers
        self._tasks: list[asyncio.Task[None]] = []
        self._client: RESTClient | None = None
        #: Patches answered, and patches refused with 429, so far.
        self.written = 0
        self.throttled = 0

    def _admin(self) -> RESTClient:
        config = self.cluster.client_config(
            LAB_USER, (SYSTEM_MASTERS,), user_agent="kubelab-faults/1.0", qps=-1, burst=0
        )
        return RESTClient(config)

    async def start(self) -> None:
        """Apply its objects, then start the loop."""
        async with self._admin() as admin:
            for obj in objects():
                await admin.request(
                    "PATCH",
                    _path(obj),
                    params={"fieldManager": FIELD_MANAGER, "force": "true"},
                    body=obj,
                    content_type=PatchType.APPLY,
                )
        config = self.cluster.client_config(USER, (), user_agent=USER_AGENT, qps=-1, burst=0)
        # No retries on its own: a 429 comes back to the loop, which tries again at its next tick.
        self._client = RESTClient(dataclasses.replace(config, max_retries=0))
        self._tasks = [asyncio.create_task(self._loop(), name=f"hot-loop {self.cluster.name}")]

    async def _loop(self) -> None:
        assert self._client is not None
        configmaps = self._client.resource("", "v1", "configmaps", NAMESPACE)
        count = 0
        while True:
            patches = []
            for _ in range(self.workers):
                count += 1
                patches.append(configmaps.patch(NAME, {"data": {"reconciled": str(count)}}))
            answers = await asyncio.gather(*patches, return_exceptions=True)
            for answer in answers:
                if isinstance(answer, APIError) and answer.code == 429:
                    self.throttled += 1
                elif isinstance(answer, BaseException) and not isinstance(answer, Exception):
                    raise answer  # cancelled: the loop stops
                elif not isinstance(answer, BaseException):
                    self.written += 1
            await self.cluster.clock.sleep(PERIOD)

    async def stop(self, *, remove: bool = True) -> None:
        """Stop the workers; with ``remove``, delete its objects too (best effort)."""
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(*tasks)
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
        if not remove:
            return
        async with self._admin() as admin:
            for obj in reversed(objects()):
                try:
                    await admin.request("DELETE", _path(obj))
                except NotFound:
                    pass
                except (APIError, TransportError) as error:
                    logger.warning("cluster %r: %s was not deleted: %s", self.cluster.name, _path(obj), error)

    def stats(self) -> dict[str, Any]:
        return {"written": self.written, "throttled": self.throttled, "running": bool(self._tasks)}


__all__ = ["USER", "HotLoop", "objects"]
