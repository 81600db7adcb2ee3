"""ComponentStatus: the API server's own health check of the control plane, deprecated but still served.

``kubectl get componentstatuses`` (``cs``) asks the API server how the scheduler, the controller
manager and etcd are. Nothing stores these objects: each request probes the components there and then
(upstream ``pkg/registry/core/componentstatus/rest.go`` and ``validator.go``):

- ``scheduler``: ``GET https://127.0.0.1:10259/healthz``, kube-scheduler's secure port on the
  control-plane node; ``controller-manager``: the same on 10257; an answer ``ok`` is Healthy, and a
  refused connection is a failed probe whose message is the error
  (``Get "https://127.0.0.1:10259/healthz": dial tcp 127.0.0.1:10259: connect: connection refused``);
- ``etcd-0``: a health check of the storage backend (here: the cluster's store answers a read).

Each object is ``{"kind": "ComponentStatus", "metadata": {"name": ...}, "conditions": [{"type":
"Healthy", "status": "True"|"False", "message": ..., "error": ...}]}``. The resource is read-only and
cluster-scoped (``get`` and ``list``); a name that is not one of the three is upstream's plain Go error
"Component not found: <name>", a 500. It is deprecated since v1.19 (it assumes the components share the
API server's host, which is not true of most clusters): every answer carries the warning
``v1 ComponentStatus is deprecated in v1.19+`` that kubectl prints.

In Kubelab the scheduler and the controller manager run in the lab's process; the lab tells the API
server whether each runs (``APIServer.components_healthy``), so a ``stop-scheduler`` fault makes
``scheduler`` Unhealthy exactly as a stopped kube-scheduler fails the real probe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from controlplane.api.resources import ResourceType
from controlplane.apiserver import deprecation, errors, tables
from controlplane.apiserver.handlers.resources import Reply
from controlplane.apiserver.http import Request, dumps, negotiate

if TYPE_CHECKING:
    from controlplane.apiserver.server import APIServer

#: The warning every answer carries (upstream's deprecated-API warning, ``endpoints/deprecation``).
DEPRECATION_WARNING: Final = deprecation.warning("", "v1", "ComponentStatus") or ""

#: Whether the component ``scheduler`` or ``controller-manager`` runs (its healthz answers).
ComponentsHealthy = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class Server:
    """A component's health endpoint (upstream ``componentstatus.Server``)."""

    name: str
    port: int
    path: str = "/healthz"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}{self.path}"

    def refused(self) -> str:
        """What Go's HTTP client says when nothing listens on the port."""
        return f'Get "{self.url}": dial tcp 127.0.0.1:{self.port}: connect: connection refused'


#: kube-apiserver's servers to validate besides etcd (``rest.go`` ``GetServersToValidate``), sorted.
SERVERS: Final = (Server("controller-manager", 10257), Server("scheduler", 10259))
ETCD: Final = "etcd-0"


def component_status(name: str, healthy: bool, message: str, error: str = "") -> dict[str, Any]:
    """One ComponentStatus with its ``Healthy`` condition (``ToConditionStatus``)."""
    condition: dict[str, Any] = {
        "type": "Healthy",
        "status": "True" if healthy else "False",
        "message": message,
    }
    if error:
        condition["error"] = error
    return {
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "conditions": [condition],
    }


async def probe_all(server: APIServer) -> list[dict[str, Any]]:
    """Probe every component now: the two servers, then etcd."""
    running = server.components_healthy
    statuses = []
    for component in SERVERS:
        if running is not None and running(component.name):
            statuses.append(component_status(component.name, True, "ok"))
        else:
            statuses.append(component_status(component.name, False, component.refused()))
    try:
        await server.store.current_revision()
    except Exception as failure:  # any failure of the backend is an unhealthy etcd
        statuses.append(component_status(ETCD, False, str(failure) or type(failure).__name__))
    else:
        statuses.append(component_status(ETCD, True, "ok"))
    return sorted(statuses, key=lambda s: str(s["metadata"]["name"]))


async def handle(server: APIServer, request: Request, rtype: ResourceType) -> Reply:
    """Answer ``get`` or ``list`` of ``componentstatuses`` (JSON, or a Table for kubectl)."""
    accept = negotiate(request)
    statuses = await probe_all(server)
    now = datetime.fromtimestamp(server.clock.now(), UTC)
    name = request.info.name
    headers = {"Warning": f'299 - "{DEPRECATION_WARNING}"'}
    if name:
        found = [s for s in statuses if s["metadata"]["name"] == name]
        if not found:
            error = errors.internal_error(f"Component not found: {name}")
            error.headers = headers
            raise error
        if accept.table:
            body = tables.table(rtype, found, accept, resource_version=None, now=now)
            return Reply(200, dumps(body), headers=headers)
        return Reply(200, dumps(found[0]), headers=headers)
    if accept.table:
        return Reply(
            200, dumps(tables.table(rtype, statuses, accept, resource_version={}, now=now)), headers=headers
        )
    return Reply(
        200,
        dumps({"kind": rtype.list_kind, "apiVersion": "v1", "metadata": {}, "items": statuses}),
        headers=headers,
    )


__all__ = ["DEPRECATION_WARNING", "SERVERS", "ComponentsHealthy", "component_status", "handle", "probe_all"]
