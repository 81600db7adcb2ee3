"""Request info: what a URL and a method mean in Kubernetes' terms.

Before anything else, kube-apiserver reads the request line into a ``RequestInfo``
(``k8s.io/apiserver/pkg/endpoints/request/requestinfo.go``): is it a resource request or a
non-resource one (``/version``, ``/healthz``); which API group and version; which namespace, resource,
object name and subresource; and which **verb**. The verb is not the HTTP method: ``GET`` on a
collection is ``list``, on a collection with ``?watch=true`` it is ``watch``, on one object ``get``;
``DELETE`` on a collection is ``deletecollection``. Authorization (RBAC) and flow control decide on
these words, which is why they are computed first.

    GET /api/v1/namespaces/default/pods/web/log
        -> resource request, group "", version v1, namespace default, resource pods, name web,
           subresource log, verb get
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

#: Verbs for a resource request, by HTTP method (collection vs single object decided below).
_METHOD_VERBS = {
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "GET": "get",
    "HEAD": "get",
    "DELETE": "delete",
}


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """The parts of a request that authorization, flow control and the handlers decide on."""

    path: str
    verb: str
    is_resource_request: bool
    api_prefix: str = ""
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: tuple[str, ...] = ()

    @property
    def is_collection(self) -> bool:
        return self.is_resource_request and not self.name


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


#: Request infos remembered at most (``_parse``): one per method and path a server is sent; and the
#: longest path remembered (a longer one is parsed each time, so the cache's memory stays small).
PARSE_CACHE_SIZE = 4096
MAX_CACHED_PATH = 512


def parse(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """Upstream's ``RequestInfoFactory.NewRequestInfo`` for ``/api`` and ``/apis`` paths.

    Of the query only ``watch`` counts (it makes a collection's ``get`` a ``watch``), so the answer
    is a function of the method, the path and that one flag, remembered for each (``_parse``):
    clients send the same few requests again and again (a kubelet renews its Lease every few seconds).
    A ``RequestInfo`` is frozen, so requests may share one.
    """
    watch = _truthy(query.get("watch"))
    if len(path) > MAX_CACHED_PATH:
        return _parse.__wrapped__(method, path, watch)
    return _parse(method, path, watch)


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def _parse(method: str, path: str, watch: bool) -> RequestInfo:
    segments = [s for s in path.strip("/").split("/") if s] if path.strip("/") else []
    non_resource = RequestInfo(path=path, verb=method.lower(), is_resource_request=False)
    if not segments or segments[0] not in ("api", "apis"):
        return non_resource
    prefix, rest = segments[0], segments[1:]
    if prefix == "apis":
        if len(rest) < 2:  # /apis, /apis/<group>: discovery
            return non_resource
        group, version, rest = rest[0], rest[1], rest[2:]
    else:
        if len(rest) < 1:  # /api: discovery
            return non_resource
        group, version, rest = "", rest[0], rest[1:]
    if not rest:  # /api/v1, /apis/apps/v1: discovery
        return non_resource

    verb = _METHOD_VERBS.get(method, "delete" if method == "DELETE" else method.lower())
    # /watch/ prefixed paths are the deprecated form of ?watch=true.
    if rest[0] == "watch":
        rest = rest[1:]
        verb = "watch"
        if not rest:
            return non_resource

    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        # /namespaces/<ns>/<resource>/...: the parts become relative to the resource; but
        # /namespaces/<ns>, /namespaces/<ns>/status and /finalize are the namespace object itself.
        if len(rest) > 2 and rest[2] not in ("status", "finalize"):
            rest = rest[2:]
    parts = tuple(rest)
    resource = parts[0]
    name = parts[1] if len(parts) > 1 else ""
    subresource = parts[2] if len(parts) > 2 else ""

    if not name and verb == "get":
        verb = "watch" if watch else "list"
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestInfo(
        path=path,
        verb=verb,
        is_resource_request=True,
        api_prefix=prefix,
        api_group=group,
        api_version=version,
        namespace=namespace,
        resource=resource,
        subresource=subresource,
        name=name,
        parts=parts,
    )
