"""The API server keeps its own flow-control objects: bootstrap, restore, and report dangling ones.

Upstream does this in two places: the ``priority-and-fairness-config-producer`` post-start hook
(``pkg/registry/flowcontrol/ensurer``) and the APF controller's status writes (``apf_controller.go``).
At start, and whenever the objects change, the API server:

- **creates** every bootstrap object that is missing (``bootstrap.py``): mandatory or suggested;
- **restores the spec** of a mandatory object that was edited, always; of a suggested one only while
  its annotation ``apf.kubernetes.io/autoupdate-spec`` is ``"true"`` (an object without the annotation
  counts as ``"true"`` while nobody has changed it, ``generation`` 1, and gets the annotation);
- **deletes** objects marked ``autoupdate-spec: "true"`` that are no longer in the bootstrap set;
- writes each FlowSchema's ``Dangling`` status condition: ``True`` (reason NotFound) when the
  PriorityLevelConfiguration it names does not exist, else ``False`` (reason Found). ``kubectl get
  flowschemas`` shows it as MISSINGPL.

It talks to the registries directly (the API server's own storage layer, as upstream's hook uses a
loopback client), so these writes pass no authentication or flow control of their own.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Mapping
from datetime import UTC, datetime

from controlplane.api.meta import Object
from controlplane.apiserver import errors
from controlplane.apiserver.flowcontrol import bootstrap
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.requestscope import RequestScope

logger = logging.getLogger(__name__)


def should_update_spec(current: Object, mandatory: bool) -> bool:
    """Whether the API server may overwrite ``current``'s spec with the bootstrap one."""
    if mandatory:
        return True
    metadata = current.get("metadata") or {}
    value = (metadata.get("annotations") or {}).get(bootstrap.AUTO_UPDATE_ANNOTATION)
    if value is not None:
        return str(value).lower() == "true"
    return bool(metadata.get("generation", 1) == 1)


def dangling_condition(level: str, exists: bool, now: datetime) -> Object:
    """The ``Dangling`` condition of a FlowSchema naming ``level`` (apf_controller.go's wording)."""
    if exists:
        status, reason = "False", "Found"
        message = "This FlowSchema references an existing PriorityLevelConfiguration object"
    else:
        status, reason = "True", "NotFound"
        message = (
            f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" '
            "but there is no such object"
        )
    return {
        "type": "Dangling",
        "status": status,
        "lastTransitionTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "reason": reason,
        "message": message,
    }


#: The ensurer's writes: the API server's own bootstrap configuration, not a request's.
ENSURER_SCOPE = RequestScope.unadmitted(
    reason="apiserver/bootstrap-system-flowcontrol-configuration: the server's own flow-control objects"
)


class Ensurer:
    """Keeps one API server's flow-control objects as described above."""

    def __init__(self, flow_schemas: Registry, priority_levels: Registry) -> None:
        self.flow_schemas = flow_schemas
        self.priority_levels = priority_levels

    async def ensure(
        self, existing_levels: Mapping[str, Object], existing_schemas: Mapping[str, Object]
    ) -> tuple[int, int]:
        """Bring the bootstrap objects into line, given the objects that exist now (by name).

        Returns the revisions of its last write of a priority level and of a FlowSchema (0: none),
        for a caller that must see its own writes in each watch cache before reading it again.
        """
        newest: list[int] = []
        for registry, wanted, existing, mandatory_names in (
            (self.priority_levels, bootstrap.priority_levels(), existing_levels, bootstrap.MANDATORY),
            (self.flow_schemas, bootstrap.flow_schemas(), existing_schemas, bootstrap.MANDATORY),
        ):
            names = set()
            newest.append(0)
            for obj in wanted:
                name = obj["metadata"]["name"]
                names.add(name)
                written = await self._ensure_one(registry, obj, existing.get(name), name in mandatory_names)
                newest[-1] = max(newest[-1], written)
            for name, current in existing.items():
                annotations = (current.get("metadata") or {}).get("annotations") or {}
                if (
                    name not in names
                    and str(annotations.get(bootstrap.AUTO_UPDATE_ANNOTATION)).lower() == "true"
                ):
                    with contextlib.suppress(errors.StatusError):  # gone already
                        await registry.delete("", name, scope=ENSURER_SCOPE)
        return newest[0], newest[1]

    async def _ensure_one(
        self, registry: Registry, wanted: Object, current: Object | None, mandatory: bool
    ) -> int:
        """Create or restore one object; the revision written, or 0."""
        name = wanted["metadata"]["name"]
        if current is None:
            with contextlib.suppress(errors.StatusError):  # created meanwhile: next pass looks again
                return _revision(await registry.create(wanted, "", scope=ENSURER_SCOPE))
            return 0
        annotations = (current.get("metadata") or {}).get("annotations") or {}
        marked = bootstrap.AUTO_UPDATE_ANNOTATION in annotations
        if not should_update_spec(current, mandatory):
            return 0
        if current.get("spec") == wanted["spec"] and marked:
            return 0

        def mutate(obj: Object) -> Object:
            obj = copy.deepcopy(obj)
            obj["spec"] = copy.deepcopy(wanted["spec"])
            metadata = obj.setdefault("metadata", {})
            metadata.setdefault("annotations", {})[bootstrap.AUTO_UPDATE_ANNOTATION] = "true"
            return obj

        try:
            return _revision((await registry.update("", name, mutate, scope=ENSURER_SCOPE)).obj)
        except errors.StatusError as error:
            logger.info("flow control: could not restore %s %r: %s", registry.rtype.kind, name, error.message)
            return 0

    async def update_status(
        self, schemas: Mapping[str, Object], levels: set[str], now: datetime | None = None
    ) -> None:
        """Write the ``Dangling`` condition of each FlowSchema whose condition is out of date."""
        now = now or datetime.now(UTC)
        for name, fs in schemas.items():
            level = ((fs.get("spec") or {}).get("priorityLevelConfiguration") or {}).get("name")
            level = level if isinstance(level, str) else ""
            wanted = dangling_condition(level, level in levels, now)
            conditions = [c for c in (fs.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
            current = next((c for c in conditions if c.get("type") == "Dangling"), None)
            if current is not None and all(
                current.get(k) == wanted[k] for k in ("status", "reason", "message")
            ):
                continue

            def mutate(obj: Object, wanted: Object = wanted) -> Object:
                obj = copy.deepcopy(obj)
                status = obj.setdefault("status", {})
                kept = [
                    c
                    for c in status.get("conditions") or []
                    if isinstance(c, dict) and c.get("type") != "Dangling"
                ]
                status["conditions"] = [*kept, wanted]
                return obj

            try:
                await self.flow_schemas.update("", name, mutate, scope=ENSURER_SCOPE, subresource="status")
            except errors.StatusError as error:
                logger.info(
                    "flow control: could not write the status of FlowSchema %r: %s", name, error.message
                )


def _revision(obj: Object) -> int:
    """The store revision an object was written at (its resourceVersion)."""
    version = (obj.get("metadata") or {}).get("resourceVersion")
    return int(version) if isinstance(version, str) and version.isdigit() else 0
