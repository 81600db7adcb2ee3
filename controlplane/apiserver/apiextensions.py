"""The API server's CustomResourceDefinition controllers: serving custom resources as definitions come and go.

Upstream's apiextensions-apiserver runs a few controllers next to its handlers
(``staging/src/k8s.io/apiextensions-apiserver/pkg/controller/``):

* the **names controller** (``status/naming_controller.go``) accepts a definition's names unless
  another definition of the group already uses them, and sets ``NamesAccepted`` and
  ``status.acceptedNames``;
* the **establishing controller** (``establish/establishing_controller.go``) sets ``Established``
  once the names are accepted, after which the resource is served;
* the **CRD handler** (``pkg/apiserver/customresource_handler.go``) serves each served version under
  ``/apis/<group>/<version>/<plural>`` from a storage made for the definition, and discovery and the
  OpenAPI documents follow (``pkg/controller/openapiv3``);
* the **finalizing controller** (``finalizer/crd_finalizer.go``) handles the deletion of a definition:
  it marks it ``Terminating``, deletes every object of the resource, then removes the finalizer
  ``customresourcecleanup.apiextensions.k8s.io`` so the definition itself goes.

Here one controller does all four. It watches the definitions' store prefix (its own informer over the
store, as upstream's server watches its own storage), and for each change installs the definition's
resource types into the server (``ResourceRegistry``, a registry and a watch cache each: the same
pipeline as every built-in resource), then writes the status. Installing comes first, so a client
that waited for ``Established`` (``kubectl wait --for condition=established``) finds the resource.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from controlplane.api.apiextensions.customresources import resource_types
from controlplane.api.meta import Object
from controlplane.api.resources import ResourceType
from controlplane.api.strategies.apiextensions import CLEANUP_FINALIZER
from controlplane.apiserver import errors
from controlplane.apiserver.handlers import finalize, openapi
from controlplane.apiserver.http import dumps
from controlplane.apiserver.registry import Registry, decode, timestamp
from controlplane.apiserver.requestscope import RequestScope
from controlplane.apiserver.watchcache import WatchCache
from controlplane.store import EventType
from controlplane.store.watch import Watch
from controlplane.tasks import cancel_and_wait

if TYPE_CHECKING:
    from controlplane.apiserver.server import APIServer

logger = logging.getLogger(__name__)

GROUP: Final = "apiextensions.k8s.io"
#: Seconds the watchers of a resource no longer served keep their streams (``tearDown``'s sleep).
TEARDOWN_GRACE: Final = 1.0
CRDS: Final = (GROUP, "v1", "customresourcedefinitions")
PREFIX: Final = "/registry/apiextensions.k8s.io/customresourcedefinitions/"

STATUS_SCOPE: Final = RequestScope.unadmitted(
    reason="apiextensions controllers: a CustomResourceDefinition's names, Established and Terminating"
)
CLEANUP_SCOPE: Final = RequestScope.unadmitted(
    reason="crd_finalizer: the objects of a deleted CustomResourceDefinition"
)


def _condition(type_: str, status: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {"type": type_, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}


def _merge_conditions(old: list[Any], new: list[dict[str, Any]]) -> list[Any]:
    """``new`` conditions over ``old``, keeping each one's transition time while its status holds."""
    merged = [c for c in old if isinstance(c, Mapping)]
    for condition in new:
        for i, have in enumerate(merged):
            if have.get("type") == condition["type"]:
                if (have.get("status"), have.get("reason"), have.get("message")) == (
                    condition["status"],
                    condition["reason"],
                    condition["message"],
                ):
                    break
                kept = have.get("lastTransitionTime") if have.get("status") == condition["status"] else None
                merged[i] = {**condition, "lastTransitionTime": kept or condition["lastTransitionTime"]}
                break
        else:
            merged.append(condition)
    return merged


class CustomResourceDefinitions:
    """Installs each definition's resource types into ``server`` and keeps its status."""

    def __init__(self, server: APIServer, *, watch_cache_window: int = 0) -> None:
        self.server = server
        self.window = watch_cache_window
        #: The resource types each definition (by name) serves now.
        self.served: dict[str, list[ResourceType]] = {}
        #: The definitions' objects, by name, as last seen.
        self.definitions: dict[str, Object] = {}
        self._task: asyncio.Task[None] | None = None
        self._cleanups: dict[str, asyncio.Task[None]] = {}
        #: Each custom group-version's OpenAPI document: (its definitions' versions, bytes, hash).
        self._documents: dict[tuple[str, str], tuple[tuple[tuple[str, str], ...], bytes, str]] = {}
        #: Watch caches of resources no longer served, each with the task that stops it soon.
        self._stopping: dict[asyncio.Task[None], WatchCache] = {}

    @property
    def registry(self) -> Registry | None:
        return self.server.registries.get(CRDS)

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Serve every stored definition, then follow the changes."""
        registry = self.registry
        if registry is None or self._task is not None:
            return
        listed = await self.server.store.range(PREFIX)
        for kv in listed.kvs:
            await self._changed(registry.decode(kv))
        watch = await self.server.store.watch(PREFIX, from_revision=listed.revision)
        self._task = asyncio.create_task(self._follow(watch, registry), name="apiextensions-controllers")

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._cleanups.values()) if t is not None]
        with contextlib.suppress(Exception):  # a controller's failure is logged where it happens
            await cancel_and_wait(*tasks)
        self._task = None
        self._cleanups.clear()
        # The custom resources' caches stay in the server's: it stops them with the others. Those
        # no longer served are stopped now, without their grace period.
        for task in self._stopping:
            task.cancel()
        caches = list(self._stopping.values())
        await asyncio.gather(*self._stopping, return_exceptions=True)
        await asyncio.gather(*(cache.stop() for cache in caches), return_exceptions=True)

    async def _follow(self, watch: Watch, registry: Registry) -> None:
        try:
            async for event in watch:
                name = event.kv.key.removeprefix(PREFIX)
                try:
                    if event.type is EventType.DELETE:
                        self.definitions.pop(name, None)
                        await self._uninstall(name)
                    else:
                        await self._changed(registry.decode(event.kv))
                except Exception:  # one bad definition must not stop the others being served
                    logger.exception("CustomResourceDefinition %s: reconcile failed", name)
        finally:
            with contextlib.suppress(Exception):
                await watch.close()

    # -- reconciling -----------------------------------------------------------------------------

    async def _changed(self, crd: Object) -> None:
        name = crd["metadata"]["name"]
        self.definitions[name] = crd
        if crd["metadata"].get("deletionTimestamp"):
            await self._terminate(crd)
            return
        accepted, conflict = self._names(crd)
        if conflict is None:
            self._install(name, {**crd, "status": {**(crd.get("status") or {}), "acceptedNames": accepted}})
        now = timestamp(self.server.clock)
        if conflict is None:
            conditions = [
                _condition("NamesAccepted", "True", "NoConflicts", "no conflicts found", now),
                _condition(
                    "Established", "True", "InitialNamesAccepted", "the initial names have been accepted", now
                ),
            ]
        else:
            conditions = [
                _condition("NamesAccepted", "False", "NameConflict", conflict, now),
                _condition("Established", "False", "NotAccepted", "not all names are accepted", now),
            ]
        await self._write_status(crd, accepted if conflict is None else None, conditions)

    def _names(self, crd: Object) -> tuple[dict[str, Any], str | None]:
        """The names to accept, or why they cannot be (``naming_controller.go``'s checks, simplified to
        the plural and the kind of the group's other definitions and built-in resources)."""
        spec = crd.get("spec") or {}
        names = dict(spec.get("names") or {})
        group = spec.get("group", "")
        mine = {(t.group, t.version, t.plural) for t in self.served.get(crd["metadata"]["name"], [])}
        for rtype in self.server.types:
            if rtype.group != group or (rtype.group, rtype.version, rtype.plural) in mine:
                continue
            if rtype.plural == names.get("plural"):
                return names, f'"{rtype.plural}" is already in use'
            if rtype.kind == names.get("kind"):
                return names, f'"{rtype.kind}" is already in use'
        return names, None

    def _install(self, name: str, crd: Object) -> None:
        """Serve the definition's versions (and stop serving versions it no longer serves)."""
        server = self.server
        wanted = resource_types(crd)
        keys = {(t.group, t.version, t.plural) for t in wanted}
        for old in self.served.get(name, []):
            if (old.group, old.version, old.plural) not in keys:
                self._remove(old)
        for rtype in wanted:
            server.types.add(rtype)
            registry = finalize.registry_for(server.store, rtype, server.clock)
            registry.transformer = server.encryption.for_resource(rtype.group, rtype.plural)
            server.registries[(rtype.group, rtype.version, rtype.plural)] = registry
            cache_key = rtype.cache_key or ""
            cache = server.caches.get(cache_key)
            if cache is None or cache.rtype.namespaced != rtype.namespaced:
                if cache is not None:
                    self._stop_cache(cache)
                cache = WatchCache(server.store, rtype, window=self.window, clock=server.clock)
                cache.transformer = registry.transformer
                server.caches[cache_key] = cache
            else:
                cache.rtype = rtype
        self.served[name] = wanted

    def _remove(self, rtype: ResourceType) -> None:
        server = self.server
        server.types.remove(rtype.group, rtype.version, rtype.plural)
        server.registries.pop((rtype.group, rtype.version, rtype.plural), None)
        cache = server.caches.pop(rtype.cache_key or "", None)
        if cache is not None:
            self._stop_cache(cache)

    def _stop_cache(self, cache: WatchCache) -> None:
        """Stop a cache nobody will read again (its watchers' streams end), after a grace period.

        Upstream's ``crdHandler.tearDown`` (``customresource_handler.go``) waits a second, and for
        the requests still running, before it destroys a storage no longer served. So the watchers
        of a deleted definition's objects hear of the deletion (through their watch of the
        definitions) before their stream ends: Kopf, for one, stops watching a resource whose
        definition is gone, but takes a watch stream that ends and a watch that then answers 404
        for a fatal error, and exits.
        """
        task = asyncio.get_running_loop().create_task(self._tear_down(cache))
        self._stopping[task] = cache
        task.add_done_callback(lambda done: self._stopping.pop(done, None))

    @staticmethod
    async def _tear_down(cache: WatchCache) -> None:
        # Real time, not the cluster clock: it is a grace period for HTTP requests.
        await asyncio.sleep(TEARDOWN_GRACE)
        await cache.stop()

    async def _uninstall(self, name: str) -> None:
        for rtype in self.served.pop(name, []):
            self._remove(rtype)

    async def _write_status(
        self, crd: Object, accepted: dict[str, Any] | None, conditions: list[dict[str, Any]]
    ) -> None:
        """Write the status if it changes (every write comes back as a watch event: no loop)."""
        status = dict(crd.get("status") or {})
        wanted = dict(status)
        if accepted is not None:
            wanted["acceptedNames"] = accepted
        wanted["conditions"] = _merge_conditions(list(status.get("conditions") or []), conditions)
        if wanted == status:
            return
        registry = self.registry
        assert registry is not None
        uid = crd["metadata"].get("uid")

        def mutate(current: Object) -> Object:
            if current["metadata"].get("uid") != uid:
                raise errors.conflict("customresourcedefinitions", GROUP, crd["metadata"]["name"], "replaced")
            desired = copy.deepcopy(current)
            have = dict(desired.get("status") or {})
            if accepted is not None:
                have["acceptedNames"] = accepted
            have["conditions"] = _merge_conditions(list(have.get("conditions") or []), conditions)
            desired["status"] = have
            desired["metadata"].pop("resourceVersion", None)
            return desired

        with contextlib.suppress(errors.StatusError):  # gone or replaced meanwhile: its event follows
            await registry.update(
                "", crd["metadata"]["name"], mutate, scope=STATUS_SCOPE, subresource="status"
            )

    # -- deletion --------------------------------------------------------------------------------

    async def _terminate(self, crd: Object) -> None:
        """``crd_finalizer.go``: Terminating, delete every object, then drop the finalizer."""
        name = crd["metadata"]["name"]
        if CLEANUP_FINALIZER not in (crd["metadata"].get("finalizers") or ()):
            return  # others' finalizers hold it; the resource is no longer served
        now = timestamp(self.server.clock)
        await self._write_status(
            crd,
            None,
            [
                _condition(
                    "Terminating",
                    "True",
                    "InstanceDeletionInProgress",
                    "CustomResource deletion is in progress",
                    now,
                )
            ],
        )
        if name not in self._cleanups or self._cleanups[name].done():
            self._cleanups[name] = asyncio.create_task(
                self._clean_up(name, crd), name=f"crd-finalizer {name}"
            )

    async def _clean_up(self, name: str, crd: Object) -> None:
        served = self.served.get(name) or resource_types(crd)
        storage = next((t for t in served if t.conversion is None), None)
        if storage is not None and storage.storage_prefix is not None:
            registry = finalize.registry_for(self.server.store, storage, self.server.clock)
            registry.transformer = self.server.encryption.for_resource(storage.group, storage.plural)
            prefix = storage.prefix()
            while True:
                listed = await self.server.store.range(prefix)
                if not listed.kvs:
                    break
                for kv in listed.kvs:
                    meta = decode(kv, registry.transformer)["metadata"]
                    with contextlib.suppress(errors.StatusError):
                        await registry.delete(meta.get("namespace", ""), meta["name"], scope=CLEANUP_SCOPE)
                remaining = await self.server.store.range(prefix)
                if not remaining.kvs:
                    break
                # Objects with finalizers of their own: wait for their controllers to let them go.
                watch = await self.server.store.watch(prefix, from_revision=remaining.revision)
                try:
                    async for _ in watch:
                        break
                finally:
                    await watch.close()
        await self._uninstall(name)
        registry_crd = self.registry
        assert registry_crd is not None
        uid = crd["metadata"].get("uid")

        def without_finalizer(current: Object) -> Object:
            if current["metadata"].get("uid") != uid:
                raise errors.conflict("customresourcedefinitions", GROUP, name, "replaced")
            desired = copy.deepcopy(current)
            finalizers = [f for f in desired["metadata"].get("finalizers") or () if f != CLEANUP_FINALIZER]
            desired["metadata"]["finalizers"] = finalizers
            desired["metadata"].pop("resourceVersion", None)
            return desired

        with contextlib.suppress(errors.StatusError):
            await registry_crd.update("", name, without_finalizer, scope=CLEANUP_SCOPE)

    # -- OpenAPI ---------------------------------------------------------------------------------

    def owns(self, group: str, version: str) -> bool:
        return any(t.group == group and t.version == version for ts in self.served.values() for t in ts)

    def openapi_document(self, group: str, version: str) -> dict[str, Any] | None:
        """The OpenAPI v3 document of a custom resource group-version (``pkg/controller/openapi/builder``)."""
        mine = [
            (crd_name, t)
            for crd_name, ts in self.served.items()
            for t in ts
            if t.group == group and t.version == version
        ]
        if not mine:
            return None
        document = openapi.group_version_document([], group, version)
        paths: dict[str, Any] = dict(document["paths"])
        roots: set[str] = {openapi.API_RESOURCE_LIST, _OBJECT_META, _LIST_META}
        own: dict[str, Any] = {}
        for crd_name, rtype in mine:
            definition = definition_name(rtype)
            openapi._resource_paths(rtype, paths, roots, definition)
            crd = self.definitions.get(crd_name) or {}
            own.update(_schemas(crd, rtype, definition))
        for item in paths.values():
            # No strategic merge patch for custom resources: kubectl reads the PATCH operation's media
            # types to choose between a strategic and a merge patch for ``apply``.
            content = item.get("patch", {}).get("requestBody", {}).get("content", {})
            content.pop("application/strategic-merge-patch+json", None)
        document["paths"] = {p: paths[p] for p in sorted(paths)}
        schemas = openapi.component_schemas(roots)
        schemas.update(own)
        document["components"]["schemas"] = {k: schemas[k] for k in sorted(schemas)}
        return document

    def openapi_reply(self, parts: list[str], accept_hash: str | None) -> openapi.Reply | None:
        """``/openapi/v3/apis/<group>/<version>`` of a custom resource, or None (not one of ours)."""
        if len(parts) != 3 or parts[0] != "apis" or not self.owns(parts[1], parts[2]):
            return None
        built = self._built(parts[1], parts[2])
        if built is None:
            return None
        body, etag = built
        headers = {"Etag": f'"{etag}"', "Vary": "Accept"}
        if accept_hash and accept_hash == etag:
            headers["Cache-Control"] = "public, immutable"
        return openapi.Reply(200, body, headers)

    def openapi_index(self, index: dict[str, Any]) -> dict[str, Any]:
        """The OpenAPI index with the custom resources' documents (and their hashes)."""
        paths = dict(index.get("paths") or {})
        for group, version in {(t.group, t.version) for ts in self.served.values() for t in ts}:
            built = self._built(group, version)
            if built is not None:
                gv = f"apis/{group}/{version}"
                paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={built[1]}"}
        return {"paths": {p: paths[p] for p in sorted(paths)}}

    def _built(self, group: str, version: str) -> tuple[bytes, str] | None:
        """A group-version's document as bytes and its hash, built again only when one of its
        definitions changed (kubectl asks for the index before every apply and explain)."""
        fingerprint = tuple(
            sorted(
                (name, str(self.definitions.get(name, {}).get("metadata", {}).get("resourceVersion")))
                for name, types in self.served.items()
                if any(t.group == group and t.version == version for t in types)
            )
        )
        hit = self._documents.get((group, version))
        if hit is not None and hit[0] == fingerprint:
            return hit[1], hit[2]
        document = self.openapi_document(group, version)
        if document is None:
            return None
        body = dumps(document)
        etag = openapi.compute_etag(body)
        self._documents[(group, version)] = (fingerprint, body, etag)
        return body, etag


_OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_LIST_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
_API_VERSION_DOC: Final = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should "
    "convert recognized schemas to the latest internal value, and may reject unrecognized values. More "
    "info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND_DOC: Final = (
    "Kind is a string value representing the REST resource this object represents. Servers may infer "
    "this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
_METADATA_DOC: Final = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


def definition_name(rtype: ResourceType) -> str:
    """Upstream's name of a custom kind's schema: the group reversed, the version, the kind
    (``com.example.stable.v1.CronTab``)."""
    return ".".join([*reversed(rtype.group.split(".")), rtype.version, rtype.kind])


def _schemas(crd: Mapping[str, Any], rtype: ResourceType, definition: str) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    for version in (crd.get("spec") or {}).get("versions") or ():
        if isinstance(version, Mapping) and version.get("name") == rtype.version:
            schema = copy.deepcopy((version.get("schema") or {}).get("openAPIV3Schema") or {})
    gvk = [{"group": rtype.group, "kind": rtype.kind, "version": rtype.version}]
    properties = dict(schema.get("properties") or {})
    properties["apiVersion"] = {"description": _API_VERSION_DOC, "type": "string"}
    properties["kind"] = {"description": _KIND_DOC, "type": "string"}
    properties["metadata"] = {
        "allOf": [{"$ref": f"#/components/schemas/{_OBJECT_META}"}],
        "description": _METADATA_DOC,
    }
    schema["properties"] = {k: properties[k] for k in sorted(properties)}
    schema.setdefault("type", "object")
    schema["x-kubernetes-group-version-kind"] = gvk
    listing = {
        "description": f"{rtype.kind}List is a list of {rtype.kind}",
        "required": ["items"],
        "type": "object",
        "properties": {
            "apiVersion": {"description": _API_VERSION_DOC, "type": "string"},
            "items": {
                "description": f"List of {rtype.plural}. More info: "
                "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
                "type": "array",
                "items": {"$ref": f"#/components/schemas/{definition}"},
            },
            "kind": {"description": _KIND_DOC, "type": "string"},
            "metadata": {
                "allOf": [{"$ref": f"#/components/schemas/{_LIST_META}"}],
                "description": _METADATA_DOC,
            },
        },
        "x-kubernetes-group-version-kind": [{**gvk[0], "kind": rtype.kind + "List"}],
    }
    return {definition: schema, definition + "List": listing}


__all__ = ["CustomResourceDefinitions", "definition_name"]
