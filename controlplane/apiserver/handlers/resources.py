"""Resource handlers: get, list, create, update, patch, delete and deletecollection.

Each handler is upstream's (apiserver ``pkg/endpoints/handlers/{get,create,update,patch,delete}.go``)
in small: decode the body, check it against the URL (kind, apiVersion, namespace, name), apply the
change through the generic registry, and encode the answer. Reads go to the **watch cache** when it is
fresh enough for the request's resourceVersion, and to the store otherwise, exactly the choice
kube-apiserver makes.

Every handler takes one ``Context`` (which ``routing.py`` chose it for) and returns a ``Reply``. A write
passes ``ctx.scope``, the request's ``RequestScope``, to the registry: that is how the registry admits
the object as this request, and reports the request's stages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from controlplane.api import gotypes, selectors
from controlplane.api.apiextensions.customresources import CustomResourceStrategy, fields_of
from controlplane.api.meta import Object
from controlplane.api.resources import ResourceType
from controlplane.api.validation import not_supported
from controlplane.apiserver import errors, pagination, patching, tables
from controlplane.apiserver.http import Accept, Request, Send, decode_body, dumps
from controlplane.apiserver.kubeletclient import KubeletConnections
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.requestscope import RequestScope
from controlplane.apiserver.watchcache import WatchCache
from controlplane.serviceaccounttokens import TokenIssuer
from controlplane.store import Compacted, FutureRevision, Store
from controlplane.trace import TraceSink

#: How long a read waits for the watch cache to catch up before going to the store.
CACHE_WAIT = 3.0


@dataclass
class Reply:
    """A handler's answer: status code and body bytes (the server sends them).

    A handler that streams its answer (a watch, a pod's log) has sent it already: its reply is
    ``Reply.streamed(status)``, and the server only records the status.
    """

    status: int
    body: bytes
    headers: dict[str, str] | None = None
    #: The handler sent the response itself.
    sent: bool = False

    @classmethod
    def streamed(cls, status: int) -> Reply:
        return cls(status, b"", sent=True)


@dataclass(frozen=True, slots=True)
class Backends:
    """What a handler may reach beyond its own resource: the server's other parts."""

    #: Every stored resource's registry, by (group, version, plural).
    registries: Mapping[tuple[str, str, str], Registry]
    #: How ``pods/log`` reaches the kubelets.
    kubelets: KubeletConnections
    #: Signs TokenRequests (None: this server issues no ServiceAccount tokens).
    issuer: TokenIssuer | None
    #: The cluster's trace (a watch reports the events it sends).
    trace: TraceSink


@dataclass(slots=True)
class Context:
    """What a resource handler needs: the resource, its registry and cache, the request, and for whom
    it writes. Made by the server for one request; handlers read it."""

    rtype: ResourceType
    registry: Registry
    cache: WatchCache | None
    store: Store
    request: Request
    namespace: str
    name: str
    subresource: str
    accept: Accept
    #: Who the request acts as, its admission, its trace and the revisions it writes: every registry
    #: write takes it.
    scope: RequestScope
    #: Where the response goes (a handler that streams sends through it).
    send: Send
    #: The requester's node on the topology diagram (a watch's events go to it).
    source: str
    backends: Backends

    @property
    def dry_run(self) -> bool:
        if "dryRun" not in self.request.query:
            return False
        values = self.request.query_values("dryRun")
        if any(value != "All" for value in values):
            raise unsupported_dry_run(self.request.info.verb, values)
        return bool(values)


#: The options kind whose ``dryRun`` a verb's query carries (``metav1.CreateOptions`` ...).
_OPTIONS_KINDS: Final = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
    "deletecollection": "DeleteOptions",
}


def unsupported_dry_run(verb: str, values: list[str]) -> errors.StatusError:
    """422 for a ``dryRun`` other than ``All``: ``ValidateDryRun`` (staging/src/k8s.io/apimachinery/pkg/
    apis/meta/v1/validation/validation.go), raised as handlers/create.go raises it, on the options:
    ``CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]: ...``."""
    kind = _OPTIONS_KINDS.get(verb, "CreateOptions")
    return errors.invalid(kind, "meta.k8s.io", "", [not_supported("dryRun", values, ["All"])])


# -- selectors ---------------------------------------------------------------------------------------


def build_filter(ctx: Context) -> Callable[[Object], bool] | None:
    """The label and field selectors of a list or watch, as one predicate (None: match everything).

    A path that names an object (``/api/v1/watch/namespaces/default/configmaps/app-config``, the
    deprecated watch of one object) selects that object: ``_name_selector``.
    """
    query = ctx.request.query
    label_text = query.get("labelSelector", "")
    field_text = query.get("fieldSelector", "")
    if not label_text and not field_text and not ctx.name:
        return None
    resource_key = f"{ctx.rtype.group}/{ctx.rtype.plural}"
    try:
        labels = selectors.parse_label_selector(label_text) if label_text else None
        fields = selectors.parse_field_selector(field_text) if field_text else None
        if fields is not None and isinstance(ctx.rtype.strategy, CustomResourceStrategy):
            fields = ctx.rtype.strategy.check_field_selector(fields, namespaced=ctx.rtype.namespaced)
        elif fields is not None:
            # In the internal names the field sets use (``regarding.name`` -> ``involvedObject.name``).
            fields = selectors.check_field_selector(resource_key, fields)
    except selectors.SelectorError as error:
        raise errors.bad_request(str(error)) from None
    if ctx.name:
        fields = _name_selector(fields, ctx.name)
    return SelectorFilter(resource_key, labels, fields, fields_of(ctx.rtype))


def _name_selector(fields: selectors.FieldSelector | None, name: str) -> selectors.FieldSelector:
    """The field selector of a list or watch whose path names the object ``name``.

    Upstream's ``ListResource`` (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/get.go) treats
    the name as ``metadata.name=<name>``: with no field selector that is the selector; a field
    selector must already ask for exactly that name (``RequiresExactMatch("metadata.name")``), and is
    kept as it is (its other terms too); any other is refused with 400 BadRequest.
    """
    if fields is None or not fields.terms:
        return selectors.FieldSelector([selectors.FieldRequirement("metadata.name", selectors.EQUALS, name)])
    if fields.exact_match("metadata.name") != name:
        raise errors.bad_request("fieldSelector metadata.name doesn't match requested name")
    return fields


@dataclass(frozen=True, slots=True)
class SelectorFilter:
    """A request's label and field selectors: called on an object, or (``attributes``) on the labels
    and selectable fields the watch cache keeps for it (``watchcache.ATTRIBUTES_ONLY``)."""

    resource_key: str
    labels: selectors.LabelSelector | None
    fields: selectors.FieldSelector | None
    #: The object's selectable fields (``customresources.fields_of``).
    fields_of: Callable[[Object], Mapping[str, str]]

    def __call__(self, obj: Object) -> bool:
        if self.labels is not None and not self.labels.matches(obj.get("metadata", {}).get("labels") or {}):
            return False
        return self.fields is None or self.fields.matches(self.fields_of(obj))

    def attributes(self, labels: Mapping[str, str], fields: Mapping[str, str]) -> bool:
        if self.labels is not None and not self.labels.matches(labels):
            return False
        return self.fields is None or self.fields.matches(fields)


# -- reading ----------------------------------------------------------------------------------------


def _render_one(ctx: Context, obj: Object) -> bytes:
    accept = ctx.accept
    if accept.table:
        return dumps(tables.table(ctx.rtype, [obj], accept, resource_version=None, now=_now(ctx)))
    if accept.partial == "PartialObjectMetadataList":
        raise errors.not_acceptable(
            "you requested PartialObjectMetadataList, but the requested object is not a list "
            f"({_go_type(ctx.rtype)})"
        )
    if accept.partial:
        return dumps(tables.partial_metadata(obj, accept.meta_version))
    return dumps(obj)


def _go_type(rtype: ResourceType, *, list_: bool = False) -> str:
    """What Go's ``%T`` prints of the object the handler holds (the internal type's package)."""
    if isinstance(rtype.strategy, CustomResourceStrategy):
        return "*unstructured.UnstructuredList" if list_ else "*unstructured.Unstructured"
    package = rtype.group.split(".")[0] if rtype.group else "core"
    return f"*{package}.{rtype.kind}{'List' if list_ else ''}"


def _now(ctx: Context) -> datetime:
    return datetime.fromtimestamp(ctx.registry.clock.now(), UTC)


async def get(ctx: Context) -> Reply:
    rv = pagination.parse_resource_version(ctx.request.query.get("resourceVersion"))
    key = ctx.registry.key(ctx.namespace, ctx.name)
    if ctx.cache is not None:
        wanted = await ctx.store.current_revision() if rv is None else rv
        fresh = rv == 0 or await ctx.cache.wait_for(wanted, CACHE_WAIT if rv else 0.05)
        if not fresh and rv is not None and rv > await ctx.store.current_revision():
            # a revision the cluster has not reached: upstream's cacher gives up with 504
            raise errors.too_large_resource_version(rv, ctx.cache.revision)
        if fresh:
            cached = ctx.cache.get(key)
            if cached is None:
                raise ctx.registry.not_found(ctx.name)
            # JSON is the cached bytes as they are: a pod kept as bytes is decoded only for a Table.
            return Reply(200, cached.raw if not ctx.accept.transforms else _render_one(ctx, cached.obj))
    obj, _ = await ctx.registry.read(ctx.namespace, ctx.name)
    return Reply(200, _render_one(ctx, obj))


async def list_(ctx: Context) -> Reply:
    query = ctx.request.query
    pagination.validate_list_options(
        resource_version=query.get("resourceVersion"),
        match=query.get("resourceVersionMatch"),
        continue_=query.get("continue"),
        watch=False,
        send_initial_events=query.get("sendInitialEvents"),
    )
    matches = build_filter(ctx)
    rv = pagination.parse_resource_version(query.get("resourceVersion"))
    match = query.get("resourceVersionMatch", "")
    limit = _limit(query.get("limit"))
    token = query.get("continue")
    namespace = ctx.namespace if ctx.rtype.namespaced else None

    served_from_cache = ctx.cache is not None and not token and not limit and match != "Exact"
    if served_from_cache and ctx.cache is not None:
        wanted = await ctx.store.current_revision() if rv is None else rv
        fresh = rv == 0 or await ctx.cache.wait_for(wanted, CACHE_WAIT if rv else 0.05)
        if not fresh and rv is not None:
            raise errors.too_large_resource_version(rv, ctx.cache.revision)
        if fresh:
            items = ctx.cache.list(namespace, matches)
            revision = ctx.cache.revision
            # Tables need the objects; JSON is the cached bytes alone (decoding nothing).
            objects = [c.obj for c in items] if ctx.accept.transforms else []
            return _list_reply(ctx, objects, [c.raw for c in items], revision, None, None)
    return await _list_from_store(ctx, namespace, matches, rv, limit, token)


def _limit(value: str | None) -> int:
    if not value:
        return 0
    try:
        limit = int(value)
    except ValueError:
        raise errors.bad_request(f'invalid limit "{value}"') from None
    return max(limit, 0)


async def _list_from_store(
    ctx: Context,
    namespace: str | None,
    matches: Callable[[Object], bool] | None,
    rv: int | None,
    limit: int,
    token: str | None,
) -> Reply:
    prefix = ctx.rtype.prefix(namespace)
    root = ctx.rtype.prefix()
    start: str | None = None
    revision: int | None = rv if rv else None
    if token:
        decoded = pagination.decode_continue(token)
        if rv:  # storage.ValidateListOptions: "0" (any version) is the only one allowed beside a token
            raise errors.bad_request("specifying resource version is not allowed when using continue")
        revision = decoded.revision
        start = root + decoded.start
    items: list[Object] = []
    next_start: str | None = None
    remaining: int | None = None
    try:
        while True:
            want = limit - len(items) if limit else 0
            page = await ctx.store.range(prefix, start=start, revision=revision, limit=want)
            revision = page.revision
            for kv in page.kvs:
                obj = ctx.registry.decode(kv)
                if matches is None or matches(obj):
                    items.append(obj)
            if not page.more:
                next_start = None
                break
            start = page.kvs[-1].key + "\0"
            if limit and len(items) >= limit:
                next_start = start
                if matches is None:
                    remaining = page.count - len(page.kvs)
                break
    except Compacted:
        if token:
            raise errors.resource_expired(pagination.EXPIRED_CONTINUE) from None
        raise errors.resource_expired(
            f"The resourceVersion for the provided list is too old. (requested {rv})"
        ) from None
    except FutureRevision:  # the resourceVersion asked for, or a continue token's
        wanted = decoded.revision if token else rv
        raise errors.too_large_resource_version(wanted or 0, await ctx.store.current_revision()) from None
    assert revision is not None
    continue_token = None
    if next_start is not None:
        continue_token = pagination.encode_continue(revision, next_start[len(root) :])
    return _list_reply(ctx, items, None, revision, continue_token, remaining)


def _list_reply(
    ctx: Context,
    items: list[Object],
    raws: list[bytes] | None,
    revision: int,
    continue_token: str | None,
    remaining: int | None,
) -> Reply:
    meta: dict[str, Any] = {"resourceVersion": str(revision)}
    if continue_token:
        meta["continue"] = continue_token
        if remaining is not None and remaining > 0:
            meta["remainingItemCount"] = remaining
    accept = ctx.accept
    if accept.table:
        return Reply(200, dumps(tables.table(ctx.rtype, items, accept, resource_version=meta, now=_now(ctx))))
    if accept.partial == "PartialObjectMetadata":
        raise errors.not_acceptable(
            "you requested PartialObjectMetadata, but the requested object is a list "
            f"({_go_type(ctx.rtype, list_=True)})"
        )
    if accept.partial:
        return Reply(200, dumps(tables.partial_metadata_list(items, meta, accept.meta_version)))
    head = dumps({"kind": ctx.rtype.list_kind, "apiVersion": ctx.rtype.api_version, "metadata": meta})
    body = b",".join(raws) if raws is not None else b",".join(dumps(o) for o in items)
    return Reply(200, head[:-1] + b',"items":[' + body + b"]}")


# -- writing ----------------------------------------------------------------------------------------


def check_body_object(ctx: Context, obj: Any, *, kind: str | None = None) -> Object:
    """The checks upstream makes on a decoded body before anything else (400 on a mismatch)."""
    if not isinstance(obj, dict):
        raise errors.bad_request(f"the body of the request must be a JSON object, got {type(obj).__name__}")
    expected_kind = kind or ctx.rtype.kind
    api_version = obj.get("apiVersion")
    if api_version is not None and api_version != ctx.rtype.api_version:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({ctx.rtype.api_version})"
        )
    if obj.get("kind") not in (None, "", expected_kind):
        raise errors.bad_request(
            f"the kind in the data ({obj.get('kind')}) does not match the expected kind ({expected_kind})"
        )
    obj["apiVersion"] = ctx.rtype.api_version
    obj["kind"] = expected_kind
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    if ctx.rtype.namespaced:
        ns = meta.get("namespace")
        if ns and ctx.namespace and ns != ctx.namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
    return obj


async def create(ctx: Context) -> Reply:
    raw = await ctx.request.read_body()
    body, unique = patching.decode_body_once(raw, ctx.request.content_type)
    obj = check_body_object(ctx, body)
    obj, warnings = patching.decode_strictly(
        ctx.rtype, obj, None if unique else raw, ctx.request, patching.CREATE_OPTIONS
    )
    track = patching.tracker(
        ctx.rtype, ctx.request, ctx.subresource, ctx.registry.clock, options=patching.CREATE_OPTIONS
    )
    created = await ctx.registry.create(obj, ctx.namespace, scope=ctx.scope, dry_run=ctx.dry_run, track=track)
    return Reply(201, _render_one(ctx, created), patching.warning_headers(warnings))


def _update_body(ctx: Context, raw: bytes) -> tuple[Object, list[str]]:
    """The object a PUT's body asks for, as upstream's decoder keeps it, and the warnings to send."""
    body, unique = patching.decode_body_once(raw, ctx.request.content_type)
    obj = check_body_object(ctx, body)
    obj, warnings = patching.decode_strictly(
        ctx.rtype, obj, None if unique else raw, ctx.request, patching.UPDATE_OPTIONS
    )
    name_in_body = obj["metadata"].get("name")
    if name_in_body and name_in_body != ctx.name:
        raise errors.bad_request(
            f"the name of the object ({name_in_body}) does not match the name on the URL ({ctx.name})"
        )
    obj["metadata"]["name"] = ctx.name
    return obj, warnings


async def update(ctx: Context) -> Reply:
    raw = await ctx.request.read_body()
    obj, warnings = _update_body(ctx, raw)
    # The registry changes the object it stores (defaults, managed fields, admission). Its first
    # attempt takes the decoded body itself, uncopied: nothing reads ``obj`` afterwards. Only a retry
    # after a concurrent write needs the body as sent again, and decodes it afresh (decoding is
    # deterministic, and it succeeded once): rarer and no dearer than copying on every request.
    unused = [obj]

    def replacement(current: Object) -> Object:
        return unused.pop() if unused else _update_body(ctx, raw)[0]

    written = await ctx.registry.update(
        ctx.namespace,
        ctx.name,
        replacement,
        scope=ctx.scope,
        subresource=ctx.subresource,
        dry_run=ctx.dry_run,
        track=patching.tracker(ctx.rtype, ctx.request, ctx.subresource, ctx.registry.clock),
        replaces=True,
    )
    return Reply(
        201 if written.created else 200, _render_one(ctx, written.obj), patching.warning_headers(warnings)
    )


PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}


async def patch(ctx: Context) -> Reply:
    content_type = ctx.request.content_type
    kind = PATCH_TYPES.get(content_type)
    # A custom resource has no Go struct with patch strategies: no strategic merge patch
    # (apiextensions-apiserver customresource_handler.go lists the other three).
    custom = isinstance(ctx.rtype.strategy, CustomResourceStrategy)
    if kind is None or (custom and kind == "strategic"):
        accepted = [t for t, k in PATCH_TYPES.items() if not (custom and k == "strategic")]
        raise errors.unsupported_media_type(
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{', '.join(accepted)}"
        )
    raw = await ctx.request.read_body()
    document, unique = patching.decode_body_once(raw, content_type)
    patcher = patching.Patcher(
        kind,
        document,
        raw,
        ctx.rtype,
        ctx.request,
        subresource=ctx.subresource,
        namespace=ctx.namespace,
        clock=ctx.registry.clock,
        unique_members=unique,
    )

    def mutate(current: Object) -> Object:
        return check_body_object(ctx, patcher.mutate(current))

    written = await ctx.registry.update(
        ctx.namespace,
        ctx.name,
        mutate,
        scope=ctx.scope,
        subresource=ctx.subresource,
        dry_run=ctx.dry_run,
        create_if_missing=kind == "apply",
        track=patcher.track,
    )
    return Reply(201 if written.created else 200, _render_one(ctx, written.obj), patcher.headers())


DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"


def delete_options(ctx: Context, body: bytes) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if body.strip():
        decoded = decode_body(body, ctx.request.content_type or "application/json")
        if not isinstance(decoded, dict):
            raise errors.bad_request("DeleteOptions must be a JSON object")
        # Upstream decodes the body into metav1.DeleteOptions: a value of the wrong type stops it.
        problem = gotypes.type_error(decoded, DELETE_OPTIONS)
        if problem is not None:
            raise errors.bad_request(
                f'DeleteOptions in version "v1" cannot be handled as a DeleteOptions: {problem}'
            )
        options = decoded
    query = ctx.request.query
    if "gracePeriodSeconds" in query:
        try:
            options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
        except ValueError:
            raise errors.bad_request(f'invalid gracePeriodSeconds "{query["gracePeriodSeconds"]}"') from None
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    if "orphanDependents" in query:
        options["orphanDependents"] = query["orphanDependents"].lower() == "true"
    policy = options.get("propagationPolicy")
    if policy not in (None, "Foreground", "Background", "Orphan"):
        raise errors.invalid(
            "DeleteOptions",
            "meta.k8s.io",
            "",
            [not_supported("propagationPolicy", policy, ["Foreground", "Background", "Orphan"])],
        )
    sent_dry_run = options.get("dryRun") or []
    if any(value != "All" for value in sent_dry_run):
        raise unsupported_dry_run("delete", sent_dry_run)
    return options


async def delete(ctx: Context) -> Reply:
    refusal = ctx.rtype.strategy.delete_refusal(ctx.name)
    if refusal is not None:
        raise errors.forbidden(ctx.rtype.plural, ctx.rtype.group, ctx.name, refusal)
    options = delete_options(ctx, await ctx.request.read_body())
    policy = options.get("propagationPolicy")
    obj, gone = await ctx.registry.delete(
        ctx.namespace,
        ctx.name,
        scope=ctx.scope,
        preconditions=options.get("preconditions"),
        grace_period=options.get("gracePeriodSeconds"),
        dry_run=ctx.dry_run or options.get("dryRun") == ["All"],
        orphan=policy == "Orphan" or options.get("orphanDependents") is True,
        foreground=policy == "Foreground",
    )
    # Upstream's handlers/delete.go answers 200 even when the object is only marked (a grace period,
    # finalizers): 202 Accepted only for a deletion not yet done that asked orphanDependents=false,
    # since "doing this always ... will break existing clients".
    code = 202 if not gone and options.get("orphanDependents") is False else 200
    if gone and (ctx.rtype.group, ctx.rtype.plural) not in RETURNS_DELETED_OBJECT:
        return Reply(code, dumps(deleted_status(ctx.rtype, obj)))  # never turned into a Table
    if ctx.accept.transforms:
        return Reply(code, _render_one(ctx, obj))
    return Reply(code, dumps(obj))


#: The resources whose delete answers the deleted object (``ReturnDeletedObject: true`` in their
#: storage, pkg/registry/*/*/storage/storage.go). Every other resource, custom resources included,
#: answers a deletion done at once with a Status; one only marked (a grace period, finalizers) answers
#: the marked object either way.
RETURNS_DELETED_OBJECT: Final = frozenset(
    {
        ("", "pods"),
        ("", "namespaces"),
        ("", "persistentvolumes"),
        ("", "persistentvolumeclaims"),
        ("", "podtemplates"),
        ("", "resourcequotas"),
        ("", "services"),
        ("", "serviceaccounts"),
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "volumeattachments"),
        ("storage.k8s.io", "volumeattributesclasses"),
        ("resource.k8s.io", "deviceclasses"),
        ("resource.k8s.io", "resourceclaims"),
        ("resource.k8s.io", "resourceclaimtemplates"),
        ("resource.k8s.io", "resourceslices"),
    }
)


def deleted_status(rtype: ResourceType, obj: Object) -> Object:
    """``Store.finalizeDelete`` (staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go):
    "information about the deleted object, which enables clients to verify that the object was
    actually deleted and not waiting for finalizers". Its ``kind`` is the resource ("Yes we set Kind
    field to resource"), and it has no ``code``."""
    meta = obj.get("metadata") or {}
    details: Object = {"name": meta.get("name", "")}
    if rtype.group:
        details["group"] = rtype.group
    details["kind"] = rtype.plural
    if meta.get("uid"):
        details["uid"] = meta["uid"]
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


async def delete_collection(ctx: Context) -> Reply:
    options = delete_options(ctx, await ctx.request.read_body())
    matches = build_filter(ctx)
    namespace = ctx.namespace if ctx.rtype.namespaced else None
    result = await ctx.store.range(ctx.rtype.prefix(namespace))
    deleted: list[Object] = []
    for kv in result.kvs:
        obj = ctx.registry.decode(kv)
        if matches is not None and not matches(obj):
            continue
        meta = obj["metadata"]
        try:
            gone_obj, _ = await ctx.registry.delete(
                meta.get("namespace", ""),
                meta["name"],
                scope=ctx.scope,
                grace_period=options.get("gracePeriodSeconds"),
                dry_run=ctx.dry_run,
                orphan=options.get("propagationPolicy") == "Orphan",
                foreground=options.get("propagationPolicy") == "Foreground",
            )
        except errors.StatusError as error:
            if error.code == 404:
                continue
            raise
        deleted.append(gone_obj)
    return _list_reply(ctx, deleted, None, await ctx.store.current_revision(), None, None)


__all__ = [
    "Backends",
    "Context",
    "Reply",
    "create",
    "delete",
    "delete_collection",
    "get",
    "list_",
    "patch",
    "update",
]
