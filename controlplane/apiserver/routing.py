"""Routing: which handler serves a resource request, read off its URL and its verb.

**Upstream's URL layout.** Every resource of the Kubernetes API lives at a path of one of a few
shapes. ``k8s.io/apiserver/pkg/endpoints/installer.go`` registers one route per shape and verb for
each resource it serves; ``k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`` reads any path
back into its parts (``requestinfo.parse`` here, which has already run when routing starts)::

    /api/v1/...                          the core group, "" (pods, services, namespaces, nodes...)
    /apis/{group}/{version}/...          every other group (apps/v1, rbac.authorization.k8s.io/v1...)

then, for a namespaced resource, ``namespaces/{namespace}/``, then one of::

    {resource}                           the collection: every object of the resource (in the namespace)
    {resource}/{name}                    one object
    {resource}/{name}/{subresource}      a part of it (status, scale) or an action on it (binding, log)

``/api/v1/namespaces/default/pods/web/status`` is the status of the pod ``web`` in ``default``;
``/apis/apps/v1/deployments`` every Deployment in the cluster; a Namespace is itself cluster-scoped,
``/api/v1/namespaces/{name}``. The verb is the HTTP method made precise by the shape: GET on a
collection is ``list`` (``watch`` with ``?watch=true``), on an object ``get``; DELETE on a collection is
``deletecollection``; POST is ``create``, PUT ``update``, PATCH ``patch``.

**The table.** ``ROUTES`` maps (shape, verb) to the handler that serves it. Every handler takes the
request's ``Context`` and returns a ``Reply`` (``handlers/resources.py``). A shape and verb the table
does not have is 405 Method Not Allowed, as upstream, which registers no route for it (a PUT to a
collection, a POST to a named object). Before the table, ``resolve`` answers what upstream's router
answers for a path it has no route for at all: 404 for a resource or subresource the server does not
serve, or a cluster-scoped resource under a namespace, and 405 for a verb the resource does not take.

Resources that are never stored (the reviews: SubjectAccessReview, TokenReview...) have no registry and
one verb, ``create``; ``handlers/reviews.py`` answers them all, so they are not in the table.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from controlplane.api.resources import ResourceRegistry, ResourceType
from controlplane.apiserver import errors
from controlplane.apiserver.handlers import finalize, resources, subresources, tokenrequest, watch
from controlplane.apiserver.handlers.resources import Context, Reply
from controlplane.apiserver.requestinfo import RequestInfo

#: A resource handler.
Handler = Callable[[Context], Awaitable[Reply]]

#: The shapes of a resource's paths (below ``/api/v1`` or ``/apis/{group}/{version}``, and
#: ``namespaces/{namespace}`` for a namespaced resource). A subresource's shape is ``OBJECT/<name>``.
COLLECTION = "{resource}"
OBJECT = "{resource}/{name}"

#: (shape, verb) -> the handler. Which resources have which subresource is the resource type's to say
#: (``controlplane/api/kinds.py``); a subresource's routes serve every resource that has it.
ROUTES: Mapping[tuple[str, str], Handler] = MappingProxyType(
    {
        # (shape, verb): handler                          # the resources that have it
        (COLLECTION, "list"): resources.list_,
        (COLLECTION, "watch"): watch.watch,
        (COLLECTION, "create"): resources.create,
        (COLLECTION, "deletecollection"): resources.delete_collection,
        (OBJECT, "get"): resources.get,
        (OBJECT, "watch"): watch.watch,  # /api/v1/watch/namespaces/{ns}/pods/{name}
        (OBJECT, "update"): resources.update,
        (OBJECT, "patch"): resources.patch,
        (OBJECT, "delete"): resources.delete,
        (OBJECT + "/status", "get"): resources.get,
        (OBJECT + "/status", "update"): resources.update,
        (OBJECT + "/status", "patch"): resources.patch,
        (OBJECT + "/scale", "get"): subresources.get_scale,  # deployments, replicasets
        (OBJECT + "/scale", "update"): subresources.write_scale,
        (OBJECT + "/scale", "patch"): subresources.write_scale,
        (OBJECT + "/binding", "create"): subresources.bind,  # pods
        (OBJECT + "/eviction", "create"): subresources.evict,  # pods
        (OBJECT + "/log", "get"): subresources.stream_log,  # pods
        (OBJECT + "/token", "create"): tokenrequest.create,  # serviceaccounts
        (OBJECT + "/finalize", "update"): finalize.finalize,  # namespaces
        (OBJECT + "/approval", "get"): resources.get,  # certificatesigningrequests
        (OBJECT + "/approval", "update"): resources.update,
        (OBJECT + "/approval", "patch"): resources.patch,
    }
)

#: Subresources that answer ``text/plain`` whatever the client accepts (upstream's
#: ``ProducesMIMETypes``): a pod's log is the container's output as it is.
PLAIN_TEXT = frozenset({"log"})


def shape(info: RequestInfo) -> str:
    """The shape of a resource request's path (see ``ROUTES``)."""
    if not info.name:
        return COLLECTION
    if not info.subresource:
        return OBJECT
    return f"{OBJECT}/{info.subresource}"


@dataclass(frozen=True, slots=True)
class Route:
    """Where a resource request goes."""

    rtype: ResourceType
    #: The handler; None for a resource that is never stored (a review: ``handlers/reviews.py``).
    handler: Handler | None
    #: The request's namespace ("" for a cluster-scoped resource).
    namespace: str
    #: Whether the answer is plain text, not negotiated (``PLAIN_TEXT``).
    plain_text: bool = False


def _not_found() -> errors.StatusError:
    """Upstream's 404 for a path no route serves: an unknown resource or subresource, or a
    namespaced path to a cluster-scoped resource. kube-apiserver's router answers these with
    ``NewGenericServerResponse(404, ...)`` (k8s.io/apiserver/pkg/server/handler.go,
    ``serviceErrorHandler``), whose details carry the router's message as a cause. The details must
    be there: clients read them on a 404 (``kubectl debug`` dereferences ``Details.Name`` to tell a
    cluster without ephemeral containers).
    """
    details = {"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]}
    return errors.StatusError(404, "NotFound", "the server could not find the requested resource", details)


def resolve(types: ResourceRegistry, info: RequestInfo) -> Route:
    """The route of a resource request, or the error upstream answers it with (in upstream's order)."""
    rtype = types.lookup(info.api_group, info.api_version, info.resource)
    if rtype is None:
        raise _not_found()
    sub = rtype.subresource(info.subresource) if info.subresource else None
    if info.subresource and sub is None:
        raise _not_found()
    if not rtype.namespaced and info.namespace and info.resource != "namespaces":
        raise _not_found()
    verb = info.verb
    if verb not in (sub.verbs if sub is not None else rtype.verbs):
        raise errors.method_not_supported(
            info.resource + (f"/{info.subresource}" if info.subresource else ""), rtype.group, verb
        )
    if rtype.storage_prefix is None:
        return Route(rtype, None, info.namespace)
    handler = ROUTES.get((shape(info), verb))
    if handler is None:
        resource = f"{rtype.plural}/{info.subresource}" if info.subresource else rtype.plural
        raise errors.method_not_supported(resource, rtype.group, verb)
    namespace = info.namespace if rtype.namespaced else ""
    if rtype.namespaced and not namespace and verb not in ("list", "watch"):
        if verb == "create":
            raise errors.bad_request("the namespace of the object must be set for namespaced resources")
        raise _not_found()
    return Route(rtype, handler, namespace, info.subresource in PLAIN_TEXT)


__all__ = ["COLLECTION", "OBJECT", "PLAIN_TEXT", "ROUTES", "Handler", "Route", "resolve", "shape"]
