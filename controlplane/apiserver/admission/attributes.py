"""Admission attributes: everything an admission plugin may ask about the write it is looking at.

Upstream hands every plugin an ``admission.Attributes`` (apiserver ``pkg/admission/attributes.go``):
who asks (user info), the operation (CREATE, UPDATE, DELETE, CONNECT), the resource and subresource,
the kind of the object sent, its namespace and name, whether it is a dry run, the options of the
request, and the object and old object. ``Attributes`` is the same, frozen: a mutating plugin does not
change it, it returns a JSON patch and the chain makes the next ``Attributes`` with the patched object.

This module also holds the two helpers every plugin uses to say no, as upstream's plugins do:
``forbidden`` (``admission.NewForbidden``: ``pods "web" is forbidden: <why>``, 403) and the JSON
pointer ``escape`` for the paths of the patches plugins return.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controlplane.api.meta import Object
from controlplane.apiserver import errors
from controlplane.identity import UserInfo

#: One RFC 6902 operation (``{"op": "add", "path": "/spec/serviceAccountName", "value": "default"}``).
PatchOp = dict[str, Any]

CREATE = "CREATE"
UPDATE = "UPDATE"
DELETE = "DELETE"
CONNECT = "CONNECT"


@dataclass(frozen=True, slots=True)
class Attributes:
    """One request as admission sees it (upstream's ``admission.Attributes``)."""

    user: UserInfo
    operation: str
    #: The resource of the URL (``pods``) and its group and version; ``subresource`` (``status``) or "".
    group: str
    version: str
    resource: str
    subresource: str
    #: The kind of ``object`` (``Pod``; ``Binding`` for pods/binding, ``Eviction`` for pods/eviction).
    kind: str
    kind_group: str
    kind_version: str
    namespace: str
    name: str
    namespaced: bool
    dry_run: bool = False
    #: The object being written (None for DELETE) and the one it replaces (None for CREATE).
    object: Object | None = None
    old_object: Object | None = None
    #: The request's options as upstream's AdmissionReview carries them (``CreateOptions`` ...).
    options: Object = field(default_factory=dict)

    @property
    def group_resource(self) -> str:
        """``pods`` or ``deployments.apps``: how upstream's messages name a resource."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    def object_name(self) -> str:
        """The name upstream's ``NewForbidden`` reports: the URL's, else the object's (a create)."""
        if self.name:
            return self.name
        for obj in (self.object, self.old_object):
            meta = (obj or {}).get("metadata")
            if isinstance(meta, dict) and isinstance(meta.get("name"), str):
                return str(meta["name"])
        return ""

    def with_objects(
        self, obj: Object | None, old: Object | None, operation: str | None = None
    ) -> Attributes:
        # Built directly: ``dataclasses.replace`` looks up the fields on every call, and admission
        # makes one of these for every step of every write.
        return Attributes(
            self.user,
            operation or self.operation,
            self.group,
            self.version,
            self.resource,
            self.subresource,
            self.kind,
            self.kind_group,
            self.kind_version,
            self.namespace,
            self.name,
            self.namespaced,
            self.dry_run,
            obj,
            old,
            self.options,
        )

    def is_pod(self) -> bool:
        return self.group == "" and self.resource == "pods"


def forbidden(a: Attributes, why: str) -> errors.StatusError:
    """``admission.NewForbidden``: 403 ``<resource> "<name>" is forbidden: <why>``."""
    return errors.forbidden(a.resource, a.group, a.object_name(), why)


def escape(token: str) -> str:
    """One JSON pointer token (RFC 6901): ``~`` is ``~0`` and ``/`` is ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


def labels_of(obj: Object | None) -> dict[str, str]:
    """An object's labels (``{}`` when it has none, or when they are not a map)."""
    meta = (obj or {}).get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def section(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]...``, or None where a step is missing or not a map."""
    for step in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(step)
    return obj


__all__ = [
    "CONNECT",
    "CREATE",
    "DELETE",
    "UPDATE",
    "Attributes",
    "Object",
    "PatchOp",
    "escape",
    "forbidden",
    "labels_of",
    "section",
]
