"""The API server's metrics: what it served, how fast, how much is in flight, and how the store did.

kube-apiserver counts every request it answers, with the labels that dashboards and SLOs are built
on (``k8s.io/apiserver/pkg/endpoints/metrics/metrics.go``):

- ``apiserver_request_total{verb, dry_run, group, version, resource, subresource, scope, component,
  code}``: a counter. ``verb`` is the HTTP method in upper case, made precise: ``GET`` of a collection
  is ``LIST``, with ``?watch=true`` it is ``WATCH``, a server-side apply PATCH is ``APPLY``
  (``CanonicalVerb``/``CleanVerb``); ``scope`` is ``resource`` (one object, or a create),
  ``namespace``, ``cluster``, or empty for a non-resource path such as ``/healthz``, whose path is then
  the ``subresource`` (``CleanScope``); ``component`` is ``apiserver``.
- ``apiserver_request_duration_seconds``: the same labels without ``code``, as a histogram with
  upstream's buckets (5 ms to 60 s, dense around one second where the latency SLOs are).
- ``apiserver_current_inflight_requests{request_kind}``: requests being served, ``readOnly``
  (get, list) or ``mutating``; long-running ones (watches, followed logs) are not counted, as
  upstream's max-in-flight filter does not. Upstream reports the highest value of the last second;
  here it is the highest since the previous scrape.

and, where it calls etcd (``k8s.io/apiserver/pkg/storage/etcd3/metrics/metrics.go``):

- ``etcd_request_duration_seconds{operation, group, resource}`` and ``etcd_requests_total``: every
  store read and transaction (``get``, ``list``, ``create``, ``update``, ``delete``), timed;
- ``apiserver_storage_objects{resource}``: objects stored per resource (``pods``,
  ``deployments.apps``), counted in the watch caches when scraped.

Recording costs a few dictionary updates per request (``controlplane.metrics.vectors``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from prometheus_client.metrics_core import Metric

from controlplane.api.resources import ResourceType
from controlplane.apiserver.http import Request
from controlplane.apiserver.requestinfo import RequestInfo
from controlplane.apiserver.watchcache import WatchCache
from controlplane.metrics import MetricsRegistry
from controlplane.metrics.vectors import CounterVec, HistogramVec, gauge_family
from controlplane.store import Store
from controlplane.store.kv import KEY_PREFIX

#: ``component`` of every API server series.
COMPONENT = "apiserver"

#: ``apiserver_request_duration_seconds`` and ``etcd_request_duration_seconds`` buckets (upstream's).
REQUEST_DURATION_BUCKETS = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60,
)  # fmt: skip

#: Verbs reported as they are; anything else is ``other`` (upstream's ``validRequestMethods``).
VALID_VERBS = frozenset(
    {"APPLY", "CONNECT", "CREATE", "DELETE", "DELETECOLLECTION", "GET", "LIST", "PATCH", "POST", "PROXY"}
    | {"PUT", "UPDATE", "WATCH", "WATCHLIST"}
)

READ_ONLY = "readOnly"
MUTATING = "mutating"

_REQUEST_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")

#: Counts the objects of each stored resource: ``{"pods": 12, "deployments.apps": 2}``.
ObjectCounter = Callable[[], Mapping[str, int]]


def clean_scope(info: RequestInfo) -> str:
    """``resource``, ``namespace``, ``cluster`` or "" (upstream's ``CleanScope``)."""
    if info.name or info.verb == "create":
        return "resource"
    if info.namespace:
        return "namespace"
    if info.is_resource_request:
        return "cluster"
    return ""


def reported_verb(
    method: str, scope: str, query: Mapping[str, str], content_type: str, info: RequestInfo
) -> str:
    """The ``verb`` label: ``CanonicalVerb`` then ``cleanVerb`` of upstream's metrics.go."""
    verb = method.upper()
    if verb in ("GET", "HEAD"):
        verb = "LIST" if scope not in ("resource", "") else "GET"
    if info.verb == "watch" or (
        verb in ("GET", "LIST") and query.get("watch", "").lower() not in ("", "0", "false")
    ):
        return "WATCH"
    if verb == "PATCH" and content_type == "application/apply-patch+yaml":
        return "APPLY"
    return verb if verb in VALID_VERBS else "other"


def clean_dry_run(query: Mapping[str, str]) -> str:
    """The ``dry_run`` label: the request's ``dryRun`` (``All``, the one valid value), "invalid" or ""."""
    value = query.get("dryRun")
    if value is None:
        return ""
    return value if value == "All" else "invalid"


def request_kind(method: str, query: Mapping[str, str], path: str) -> str | None:
    """``readOnly`` or ``mutating`` for the in-flight gauge; None for a long-running request."""
    if method in ("GET", "HEAD"):
        if query.get("watch", "").lower() in ("true", "1") or "/watch/" in path:
            return None
        if path.endswith("/log") and query.get("follow", "").lower() in ("true", "1"):
            return None
        return READ_ONLY
    return MUTATING


class APIServerMetrics:
    """The metrics of one API server (a collector for its cluster's ``MetricsRegistry``)."""

    def __init__(self) -> None:
        self.requests = CounterVec(
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, "
            "resource, scope, component, and HTTP response code.",
            (*_REQUEST_LABELS, "code"),
        )
        self.durations = HistogramVec(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, version, "
            "resource, subresource, scope and component.",
            _REQUEST_LABELS,
            REQUEST_DURATION_BUCKETS,
        )
        self.etcd_durations = HistogramVec(
            "etcd_request_duration_seconds",
            "Etcd request latency in seconds for each operation and object type.",
            ("operation", "group", "resource"),
            REQUEST_DURATION_BUCKETS,
        )
        self.etcd_requests = CounterVec(
            "etcd_requests_total",
            "Etcd request counts for each operation and object type.",
            ("operation", "group", "resource"),
        )
        self.inflight = {READ_ONLY: 0, MUTATING: 0}
        self._inflight_high = {READ_ONLY: 0, MUTATING: 0}
        #: Counts the stored objects when scraped (the API server sets it to read its watch caches).
        self.object_counts: ObjectCounter | None = None
        #: Store key prefix (``/registry/pods``) to its (group, resource).
        self.storage_resources: dict[str, tuple[str, str]] = {}

    @classmethod
    def for_server(
        cls,
        registry: MetricsRegistry,
        store: Store,
        types: Iterable[ResourceType],
        caches: Mapping[str, WatchCache],
    ) -> APIServerMetrics:
        """The metrics of an API server over ``store``: registered, timing every store request, and
        counting the objects of its watch caches."""
        metrics = cls()
        metrics.storage_resources = {
            t.storage_prefix: (t.group, t.plural) for t in types if t.storage_prefix and t.conversion is None
        }

        def object_counts() -> dict[str, int]:
            return {
                cache.rtype.group_resource: len(cache.objects)
                for cache in caches.values()
                if cache.ready and cache.rtype.conversion is None
            }

        metrics.object_counts = object_counts
        registry.register(metrics)
        store.observer = metrics
        return metrics

    # -- requests ---------------------------------------------------------------------------------

    def started(self, request: Request) -> str | None:
        """A request arrived; its in-flight kind (pass it to ``finished``), None if long-running."""
        kind = request_kind(request.method, request.query, request.path)
        if kind is not None:
            count = self.inflight[kind] = self.inflight[kind] + 1
            if count > self._inflight_high[kind]:
                self._inflight_high[kind] = count
        return kind

    def finished(self, kind: str | None, request: Request, code: int, seconds: float) -> None:
        """A request was answered with ``code`` after ``seconds``."""
        if kind is not None:
            self.inflight[kind] -= 1
        info = request.info
        if info is None:
            info = RequestInfo(path=request.path, verb=request.method.lower(), is_resource_request=False)
        query = request.query
        scope = clean_scope(info)
        verb = reported_verb(request.method, scope, query, request.content_type, info)
        if info.is_resource_request:
            labels = (
                verb,
                clean_dry_run(query),
                info.api_group,
                info.api_version,
                info.resource,
                info.subresource,
                scope,
                COMPONENT,
            )
        else:
            labels = (verb, clean_dry_run(query), "", "", "", info.path, scope, COMPONENT)
        self.requests.inc((*labels, str(code)))
        self.durations.observe(labels, seconds)

    # -- the store --------------------------------------------------------------------------------

    def observe(self, operation: str, key: str, seconds: float) -> None:
        """One store request (the store's ``RequestObserver``)."""
        group, resource = self._resource_of(key)
        labels = (operation, group, resource)
        self.etcd_durations.observe(labels, seconds)
        self.etcd_requests.inc(labels)

    def _resource_of(self, key: str) -> tuple[str, str]:
        rest = key[len(KEY_PREFIX) :] if key.startswith(KEY_PREFIX) else key.lstrip("/")
        first, _, more = rest.partition("/")
        found = self.storage_resources.get(KEY_PREFIX + first)
        if found is None and more:  # a prefix of two segments (/registry/<group>/<resource>)
            found = self.storage_resources.get(f"{KEY_PREFIX}{first}/{more.partition('/')[0]}")
        return found if found is not None else ("", first)

    # -- scraping ---------------------------------------------------------------------------------

    def collect(self) -> Iterable[Metric]:
        yield self.requests.collect()
        yield self.durations.collect()
        high = self._inflight_high
        yield gauge_family(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per request kind "
            "in last second.",
            ("request_kind",),
            {(kind,): float(value) for kind, value in high.items()},
        )
        self._inflight_high = dict(self.inflight)
        yield self.etcd_durations.collect()
        yield self.etcd_requests.collect()
        if self.object_counts is not None:
            yield gauge_family(
                "apiserver_storage_objects",
                "Number of stored objects at the time of last check split by kind.",
                ("resource",),
                {(resource,): float(count) for resource, count in self.object_counts().items()},
            )
