"""The ``kubernetes`` Service: how a pod finds the API server, kept in place by the API server itself.

Every cluster has it, and a student's first ``kubectl get svc`` shows it::

    $ kubectl get svc
    NAME         TYPE        CLUSTER-IP   EXTERNAL-IP   PORT(S)   AGE
    kubernetes   ClusterIP   10.96.0.1    <none>        443/TCP   3m
    $ kubectl get endpoints kubernetes
    NAME         ENDPOINTS         AGE
    kubernetes   172.18.0.1:6443   3m

A pod that talks to the API (a controller, ``kubectl`` in a pod, the official client's
``load_incluster_config``) reads ``KUBERNETES_SERVICE_HOST=10.96.0.1`` and ``..._PORT=443`` and connects
there; kube-proxy sends the packets on to the API server's real address. No controller of
kube-controller-manager writes any of this: the Service has **no selector**, so the endpoints and
EndpointSlice controllers leave it alone, and kube-apiserver maintains three things itself, from a
post-start hook named ``bootstrap-controller``:

- the **Service** ``default/kubernetes``: ``clusterIP`` the *first* address of the service CIDR
  (10.96.0.1 of 10.96.0.0/12), port ``https`` 443/TCP with ``targetPort`` the API server's secure
  port, labels ``component: apiserver`` and ``provider: kubernetes``, ``sessionAffinity: None``,
  ``ipFamilyPolicy: SingleStack``. Created when missing (delete it and it is back within one
  interval); its ports and type are corrected only when the API server starts.
- a **master lease** per API server: the key ``/registry/masterleases/<ip>`` (a bare Endpoints
  holding that IP) attached to an etcd lease of 15 s that the API server renews every 10 s. An API
  server that dies stops renewing; its key expires, and the next API server to reconcile drops its
  address. That is how a highly available control plane keeps the list right with no one in charge.
- the **Endpoints** ``default/kubernetes`` (labelled ``endpointslice.kubernetes.io/skip-mirror:
  "true"``, so no mirroring controller copies it) and the **EndpointSlice** ``default/kubernetes``
  (``addressType: IPv4``, labelled ``kubernetes.io/service-name: kubernetes``, each address ready),
  both listing the addresses of the live leases with port ``https`` = the secure port. Written only
  when they differ; a slice of another name claiming the Service is deleted.

On a graceful stop the API server removes its lease and reconciles once more, so its address leaves
the list at once rather than when the lease runs out; the last one leaves the objects as they are (an
Endpoints subset without addresses is invalid), so a restarted cluster finds them unchanged.

**The advertised address.** Upstream advertises ``--advertise-address``, which defaults to
``--bind-address`` unless that is unspecified or loopback, in which case the host's default interface
is used (``ResolveBindAddress``): loopback is refused by Endpoints validation ("may not be in the
loopback range"). Kubelab advertises the ``--api`` host of ``manage.py runlab`` when it is such a
usable IPv4 address; otherwise (the default ``127.0.0.1``, a wildcard, a host name, and in tests and
benchmarks, which have no socket) the address of the lab's host on the simulated nodes' network,
``172.18.0.1``: the simulated nodes are kind's containers at 172.18.0.2, .3 ... and the machine
running them is their network's gateway. The port is the ``--api`` port (default 6443).

**Kubelab's deviations**, each for a reason:

- The first reconciliation runs *inside* :meth:`APIServer.start`, before the server is ready, rather
  than once ``/readyz`` passes: so no client can take 10.96.0.1 first, and a cluster's first
  ``kubectl get svc`` always shows the Service. It also corrects the ports of the Endpoints and the
  EndpointSlice (upstream now does so only while removing an address), so a lab restarted on another
  ``--api`` port points at the new one.
- Like the RBAC bootstrap and APF's configuration, the objects are written through the registries
  (the same create and guaranteed-update paths, strategies and validation), not through a loopback
  client as ``system:apiserver``; they are read from the watch caches, as upstream's informer does.
- Upstream renews its master lease by rewriting the key with a fresh etcd lease every interval.
  Kubelab writes the key once and keeps its one lease alive (``lease_keepalive``), as an etcd client
  keeps a session: the same expiry, without a store revision every interval.
- A restart's stale lease is not removed first (upstream's ``Start``): with one API server per cluster
  it is the same key, renewed at once.

Upstream: ``pkg/controlplane/controller/kubernetesservice/controller.go`` (the Service, the loop),
``pkg/controlplane/reconcilers/lease.go`` (master leases, ``leaseEndpointReconciler``),
``pkg/controlplane/reconcilers/endpointsadapter.go`` (the Endpoints and the EndpointSlice),
``pkg/controlplane/instance.go`` (``DefaultEndpointReconcilerInterval`` 10 s, ``...TTL`` 15 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object
from controlplane.api.strategies.services import SERVICE_CIDR
from controlplane.apiserver import errors
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.requestscope import RequestScope
from controlplane.apiserver.watchcache import WatchCache
from controlplane.clock import Clock
from controlplane.store import KeyNotFound, LeaseNotFound, Put, Store, StoreError, Txn
from controlplane.tasks import cancel_and_wait

logger = logging.getLogger(__name__)


#: ``KubernetesServiceName`` and ``KubernetesServiceNamespace`` (``metav1.NamespaceDefault``).
NAME: Final = "kubernetes"
NAMESPACE: Final = "default"
#: The Service's port (``--kubernetes-service-node-port`` unset: a ClusterIP Service) and its name.
SERVICE_PORT: Final = 443
PORT_NAME: Final = "https"
#: kube-apiserver's default ``--secure-port``.
DEFAULT_SECURE_PORT: Final = 6443
#: The lab's host as the simulated nodes see it (kind's docker network gateway): see the docstring.
HOST_ADDRESS: Final = "172.18.0.1"
#: Where the master leases live (upstream's ``/masterleases/`` under the etcd prefix).
MASTER_LEASES: Final = "/registry/masterleases/"
#: ``DefaultEndpointReconcilerInterval`` and ``DefaultEndpointReconcilerTTL``.
DEFAULT_INTERVAL: Final = 10.0
DEFAULT_LEASE_TTL: Final = 15.0

SERVICE_LABELS: Final = {"component": "apiserver", "provider": "kubernetes"}
#: ``discovery.LabelSkipMirror``: the EndpointSliceMirroring controller leaves these Endpoints alone.
LABEL_SKIP_MIRROR: Final = "endpointslice.kubernetes.io/skip-mirror"
#: ``discovery.LabelServiceName``.
LABEL_SERVICE_NAME: Final = "kubernetes.io/service-name"


def first_service_ip(cidr: str = SERVICE_CIDR) -> str:
    """The first address of the service CIDR, the ``kubernetes`` Service's (10.96.0.1 of 10.96.0.0/12)."""
    return str(ipaddress.ip_network(cidr).network_address + 1)


def advertise_address(bind_host: str | None) -> str:
    """The IP the API server advertises for ``bind_host`` (None: not served on a socket).

    Upstream uses the bind address unless it is unspecified or loopback, and then the host's default
    interface (``utilnet.ResolveBindAddress``); Kubelab's "host interface" is :data:`HOST_ADDRESS`.
    Only an IPv4 address can be advertised: the cluster's Services and EndpointSlices are IPv4.
    """
    try:
        address = ipaddress.ip_address(bind_host or "")
    except ValueError:  # none, or a host name
        return HOST_ADDRESS
    if (
        not isinstance(address, ipaddress.IPv4Address)
        or address.is_unspecified
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
    ):
        return HOST_ADDRESS
    return str(address)


@dataclass(frozen=True, slots=True)
class KubernetesServiceOptions:
    """What the bootstrap controller keeps: upstream's ``kubernetesservice.Config``."""

    #: The advertised address (``PublicIP``) and the secure port the Endpoints list (``PublicServicePort``).
    public_ip: str = HOST_ADDRESS
    secure_port: int = DEFAULT_SECURE_PORT
    #: The Service's cluster IP (``ServiceIP``) and port (``ServicePort``).
    service_ip: str = first_service_ip()
    service_port: int = SERVICE_PORT
    #: How often it reconciles (``EndpointInterval``), and how long a master lease lives.
    interval: float = DEFAULT_INTERVAL
    lease_ttl: float = DEFAULT_LEASE_TTL

    @classmethod
    def serving(
        cls,
        host: str | None,
        port: int | None,
        *,
        interval: float = DEFAULT_INTERVAL,
        lease_ttl: float = DEFAULT_LEASE_TTL,
    ) -> KubernetesServiceOptions:
        """The options of an API server served on ``host:port`` (None: on no socket)."""
        return cls(
            public_ip=advertise_address(host),
            secure_port=port or DEFAULT_SECURE_PORT,
            interval=interval,
            lease_ttl=lease_ttl,
        )


# -- the objects (pure) ----------------------------------------------------------------------------


def service_ports(options: KubernetesServiceOptions) -> list[Object]:
    """``createPortAndServiceSpec``: port ``https`` 443/TCP to the secure port."""
    return [
        {
            "name": PORT_NAME,
            "protocol": "TCP",
            "port": options.service_port,
            "targetPort": options.secure_port,
        }
    ]


def endpoint_ports(options: KubernetesServiceOptions) -> list[Object]:
    """``createEndpointPortSpec``: port ``https`` = the secure port, TCP."""
    return [{"name": PORT_NAME, "port": options.secure_port, "protocol": "TCP"}]


def service(options: KubernetesServiceOptions) -> Object:
    """The Service as ``CreateOrUpdateMasterServiceIfNeeded`` creates it (the server defaults the rest)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": dict(SERVICE_LABELS)},
        "spec": {
            "ports": service_ports(options),
            # maintained by this code, not by the pod selector
            "clusterIP": options.service_ip,
            "ipFamilyPolicy": "SingleStack",
            "sessionAffinity": "None",
            "type": "ClusterIP",
        },
    }


def _port_view(port: Mapping[str, Any]) -> tuple[Any, ...]:
    """A ServicePort as Go compares it (``port != s.Spec.Ports[i]``), absent fields as zero values."""
    return tuple(
        port.get(f) or None for f in ("name", "protocol", "appProtocol", "port", "targetPort", "nodePort")
    )


def service_reset(current: Object, options: KubernetesServiceOptions) -> Object | None:
    """``getMasterServiceUpdateIfNeeded``: the Service with its ports and type put right, or None."""
    spec = current.get("spec") or {}
    wanted = service_ports(options)
    ports = [p for p in spec.get("ports") or [] if isinstance(p, Mapping)]
    if spec.get("type") == "ClusterIP" and [_port_view(p) for p in ports] == [_port_view(p) for p in wanted]:
        return None
    reset = deep_copy(current)
    reset.setdefault("spec", {})["ports"] = wanted
    reset["spec"]["type"] = "ClusterIP"
    return reset


def ipv4_addresses(ips: Sequence[str]) -> list[str]:
    """The IPv4 addresses among ``ips``, sorted and unique (``Sync``'s ``sortedIPs[0]``)."""
    found = set()
    for ip in ips:
        with contextlib.suppress(ValueError):
            if isinstance(ipaddress.ip_address(ip), ipaddress.IPv4Address):
                found.add(ip)
    return sorted(found)


def endpoints(
    current: Object | None, ips: Sequence[str], ports: list[Object], *, reconcile_ports: bool
) -> Object:
    """``EndpointsAdapter.updateEndpoints``: ``current`` (or a new object) listing ``ips``."""
    obj: Object = (
        deep_copy(current)
        if current is not None
        else {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": NAME, "namespace": NAMESPACE}}
    )
    obj.setdefault("metadata", {})["labels"] = {LABEL_SKIP_MIRROR: "true"}
    subsets: Any = obj.get("subsets")
    if not isinstance(subsets, list) or len(subsets) != 1 or not isinstance(subsets[0], dict):
        subsets = [{}]
    subset: Object = subsets[0]
    subset["addresses"] = [{"ip": ip} for ip in ips]
    if not subset.get("ports") or reconcile_ports:
        subset["ports"] = deep_copy(ports)
    obj["subsets"] = subsets
    return obj


def endpoint_slice(
    current: Object | None, ips: Sequence[str], ports: list[Object], *, reconcile_ports: bool
) -> Object:
    """``EndpointsAdapter.updateEndpointSlice``: ``current`` (or a new slice) listing ``ips``, ready."""
    obj: Object = (
        deep_copy(current)
        if current is not None
        else {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
        }
    )
    obj.setdefault("metadata", {})["labels"] = {LABEL_SERVICE_NAME: NAME}
    obj["addressType"] = "IPv4"
    obj["endpoints"] = [{"addresses": [ip], "conditions": {"ready": True}} for ip in ips]
    if not obj.get("ports") or reconcile_ports:
        obj["ports"] = deep_copy(ports)
    return obj


def _differs(current: Mapping[str, Any], desired: Mapping[str, Any], fields: Sequence[str]) -> bool:
    """Whether ``Semantic.DeepEqual`` would tell the fields (and the labels) apart."""
    labels = (current.get("metadata") or {}).get("labels") or {}
    if labels != (desired.get("metadata") or {}).get("labels"):
        return True
    return any((current.get(f) or None) != (desired.get(f) or None) for f in fields)


# -- master leases ---------------------------------------------------------------------------------


class MasterLeases:
    """The live API servers' addresses: one key per server under :data:`MASTER_LEASES` (``storageLeases``).

    Each key holds a bare Endpoints with the server's IP, attached to an etcd lease of ``ttl`` seconds
    that this server keeps alive; a server that stops renewing drops out when its lease expires.
    """

    def __init__(self, store: Store, ttl: float) -> None:
        self.store = store
        self.ttl = max(1, math.ceil(ttl))
        self._lease: int | None = None

    @staticmethod
    def key(ip: str) -> str:
        return MASTER_LEASES + ip

    async def list(self) -> list[str]:
        """``ListLeases``: the first address of every lease key."""
        found: list[str] = []
        for kv in (await self.store.range(MASTER_LEASES)).kvs:
            with contextlib.suppress(ValueError, AttributeError, IndexError, KeyError, TypeError):
                ip = json.loads(kv.value)["subsets"][0]["addresses"][0]["ip"]
                if isinstance(ip, str) and ip:
                    found.append(ip)
        return found

    async def update(self, ip: str) -> None:
        """``UpdateLease``: renew this server's lease; (re)write its key if it has none or it expired."""
        if self._lease is not None:
            try:
                await self.store.lease_keepalive(self._lease)
                return
            except LeaseNotFound:  # expired with its key (the server stalled past the TTL): start over
                self._lease = None
        self._lease = (await self.store.lease_grant(self.ttl)).id
        value = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": ip, "generation": 1},
            "subsets": [{"addresses": [{"ip": ip}]}],
        }
        encoded = json.dumps(value, separators=(",", ":")).encode()
        # Straight to the store, not through a registry: a master lease is no API resource (no
        # strategy, no admission, nothing serves it), only the servers' own bookkeeping.
        await self.store.txn(Txn(success=(Put(self.key(ip), encoded, self._lease),)))

    async def remove(self, ip: str) -> None:
        """``RemoveLease``: this server's key goes now, with its lease."""
        lease, self._lease = self._lease, None
        if lease is not None:
            with contextlib.suppress(LeaseNotFound):  # expired already, and the key with it
                await self.store.lease_revoke(lease)
                return
        with contextlib.suppress(KeyNotFound):
            await self.store.delete(self.key(ip))


# -- the controller --------------------------------------------------------------------------------

CacheFor = Callable[[Registry], WatchCache | None]

#: The controller's writes: the API server's own, straight to storage as upstream's are, not admitted.
BOOTSTRAP_SCOPE = RequestScope.unadmitted(
    reason="bootstrap-controller: the kubernetes Service and its endpoints"
)


class KubernetesServiceController:
    """The ``bootstrap-controller`` post-start hook's loop (``kubernetesservice.Controller``)."""

    def __init__(
        self,
        *,
        services: Registry,
        endpoints: Registry,
        endpoint_slices: Registry | None,
        store: Store,
        clock: Clock,
        options: KubernetesServiceOptions,
        cache_for: CacheFor,
    ) -> None:
        self.services = services
        self.endpoints = endpoints
        self.endpoint_slices = endpoint_slices
        self.options = options
        self.clock = clock
        self.cache_for = cache_for
        self.leases = MasterLeases(store, options.lease_ttl)
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    async def start(self) -> None:
        """The first reconciliation (ports and type corrected), then one every ``interval``."""
        self._stopped = False
        started = self.clock.now()
        try:
            await self.update(reconcile=True)
        except (errors.StatusError, StoreError) as error:
            # Upstream logs it and serves on: the loop tries again (e.g. 10.96.0.1 was taken by a
            # Service someone made while ``kubernetes`` was deleted; it comes back once that goes).
            logger.warning("Unable to perform initial Kubernetes service initialization: %s", error)
        except Exception:  # a bug: logged, and the server starts all the same (upstream's HandleError)
            logger.exception("Unable to perform initial Kubernetes service initialization")
        self._task = asyncio.create_task(self._run(started), name="kube-apiserver-bootstrap-controller")

    async def _run(self, started: float) -> None:
        """``wait.NonSlidingUntil``: one reconciliation every ``interval`` from the start of the last."""
        while True:
            await self.clock.sleep(started + self.options.interval - self.clock.now())
            started = self.clock.now()
            try:
                # Service definition is not reconciled after the first run (upstream's comment).
                await self.update(reconcile=False)
            except (errors.StatusError, StoreError) as error:
                logger.warning("unable to sync kubernetes service: %s", error)
            except Exception:  # a bug: logged, and the loop goes on (upstream's HandleError)
                logger.exception("unable to sync kubernetes service")

    async def stop(self) -> None:
        """Stop reconciling, then take this server's address out (``Controller.Stop``).

        Bounded by two intervals, as upstream's: a store that no longer answers must not hold the
        shutdown up.
        """
        self._stopped = True
        task, self._task = self._task, None
        if task is None:
            return
        await cancel_and_wait(task)
        try:
            await asyncio.wait_for(self._remove_endpoints(), 2 * self.options.interval)
        except TimeoutError:
            logger.warning("RemoveEndpoints() timed out")
        except (errors.StatusError, StoreError) as error:
            logger.warning("unable to remove endpoints from kubernetes service: %s", error)

    async def _remove_endpoints(self) -> None:
        """``RemoveEndpoints``: the lease goes, and the objects list whoever is left (maybe no one)."""
        await self.leases.remove(self.options.public_ip)
        await self._reconcile_endpoints(reconcile_ports=True)

    async def update(self, *, reconcile: bool) -> None:
        """``UpdateKubernetesService``: the Service if missing, this server's lease, the endpoints."""
        await self._ensure_service(reconcile=reconcile)
        await self.leases.update(self.options.public_ip)
        await self._reconcile_endpoints(reconcile_ports=reconcile)

    # -- the Service -----------------------------------------------------------------------------

    async def _ensure_service(self, *, reconcile: bool) -> None:
        """``CreateOrUpdateMasterServiceIfNeeded``."""
        current = await self._current(self.services, NAME)
        if current is None:
            try:
                await self.services.create(service(self.options), NAMESPACE, scope=BOOTSTRAP_SCOPE)
                return
            except errors.StatusError as error:
                if error.code != 409:  # AlreadyExists: the cache had not seen it yet
                    raise
            current = await self._stored(self.services, NAME)
        if current is None or not reconcile or service_reset(current, self.options) is None:
            return
        logger.warning("Resetting master service %r", NAME)

        def reset(obj: Object) -> Object:
            return service_reset(obj, self.options) or obj

        await self.services.update(NAMESPACE, NAME, reset, scope=BOOTSTRAP_SCOPE)

    # -- the Endpoints and the EndpointSlice -----------------------------------------------------

    async def _reconcile_endpoints(self, *, reconcile_ports: bool) -> None:
        """``leaseEndpointReconciler.doReconcile`` then ``EndpointsAdapter.Sync``."""
        ips = await self.leases.list()
        if not ips and not self._stopped:
            # We just renewed our own lease: none at all means the store is not what we think.
            raise errors.internal_error(
                "no API server IP addresses were listed in storage, "
                "refusing to erase all endpoints for the kubernetes Service"
            )
        addresses = ipv4_addresses(ips)
        if not addresses:
            # The last API server leaving. Upstream writes an Endpoints subset without addresses,
            # which its own validation refuses ("must specify `addresses` or `notReadyAddresses`"):
            # the objects keep the last address until a server comes back. Kubelab skips the write.
            return
        ports = endpoint_ports(self.options)
        await self._sync(
            self.endpoints,
            lambda current: endpoints(current, addresses, ports, reconcile_ports=reconcile_ports),
            ("subsets",),
        )
        if self.endpoint_slices is not None:
            await self._delete_other_slices()
            await self._sync(
                self.endpoint_slices,
                lambda current: endpoint_slice(current, addresses, ports, reconcile_ports=reconcile_ports),
                ("endpoints", "ports", "addressType"),
            )

    async def _sync(
        self, registry: Registry, desired: Callable[[Object | None], Object], fields: Sequence[str]
    ) -> None:
        """Create the object, or update it if ``fields`` or its labels differ from ``desired``."""
        current = await self._current(registry, NAME)
        if current is None:
            try:
                await registry.create(desired(None), NAMESPACE, scope=BOOTSTRAP_SCOPE)
                return
            except errors.StatusError as error:
                if error.code != 409:
                    raise
            current = await self._stored(registry, NAME)
            if current is None:
                return  # deleted again meanwhile: the next interval creates it
        if not _differs(current, desired(current), fields):
            return
        logger.warning("Resetting endpoints for master service %r", NAME)
        # The update reads the stored object again and applies the same change to it.
        await registry.update(NAMESPACE, NAME, desired, scope=BOOTSTRAP_SCOPE)

    async def _delete_other_slices(self) -> None:
        """Slices that claim the Service under another name (or address type) are not ours to keep."""
        assert self.endpoint_slices is not None
        cache = self.cache_for(self.endpoint_slices)
        if cache is None or not cache.ready:
            return
        for cached in cache.list(NAMESPACE, None):
            obj = cached.obj
            meta = obj.get("metadata") or {}
            if (meta.get("labels") or {}).get(LABEL_SERVICE_NAME) != NAME:
                continue
            if meta.get("name") == NAME and obj.get("addressType") == "IPv4":
                continue
            with contextlib.suppress(errors.StatusError):  # already gone
                await self.endpoint_slices.delete(NAMESPACE, str(meta.get("name")), scope=BOOTSTRAP_SCOPE)

    async def _current(self, registry: Registry, name: str) -> Object | None:
        """The object as the watch cache has it (upstream reads through its informer), else stored."""
        cache = self.cache_for(registry)
        if cache is None or not cache.ready:
            return await self._stored(registry, name)
        cached = cache.get(registry.key(NAMESPACE, name))
        return None if cached is None else cached.obj

    @staticmethod
    async def _stored(registry: Registry, name: str) -> Object | None:
        try:
            return (await registry.read(NAMESPACE, name))[0]
        except errors.StatusError as error:
            if error.code == 404:
                return None
            raise


__all__ = [
    "DEFAULT_SECURE_PORT",
    "HOST_ADDRESS",
    "MASTER_LEASES",
    "KubernetesServiceController",
    "KubernetesServiceOptions",
    "MasterLeases",
    "advertise_address",
    "endpoint_slice",
    "endpoints",
    "first_service_ip",
    "service",
    "service_reset",
]
