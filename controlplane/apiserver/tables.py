"""Tables: the server side of ``kubectl get``'s columns.

kubectl does not know how to print a Deployment. It asks the server for a ``Table``
(``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``) and prints whatever columns come back:
column definitions (name, type, priority; priority 1 columns appear only with ``-o wide``) and one row
of cells per object, each row carrying the object's metadata so kubectl can still name it. The
per-kind columns are upstream's printers (``controlplane.api.printers``); this module wraps them in
the Table envelope (apimachinery ``meta/v1`` Table, apiserver ``endpoints/handlers/response.go``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from controlplane.api.meta import Object
from controlplane.api.resources import ResourceType
from controlplane.apiserver.http import Accept


def partial_metadata(obj: Object, version: str = "v1") -> Object:
    """``asPartialObjectMetadata`` (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response.go):
    the object's metadata alone. A Status passes through as it is."""
    if obj.get("kind") == "Status":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": obj.get("metadata", {}),
    }


def partial_metadata_list(items: list[Object], meta: dict[str, Any], version: str = "v1") -> Object:
    """``asPartialObjectMetadataList``: a list's metadata and each item's."""
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": meta,
        "items": [partial_metadata(obj, version) for obj in items],
    }


def _embedded(obj: Object, policy: str, version: str) -> Object | None:
    if policy == "None":
        return None
    if policy == "Object":
        return obj
    return partial_metadata(obj, version)


def table(
    rtype: ResourceType,
    items: list[Object],
    accept: Accept,
    *,
    resource_version: dict[str, Any] | None,
    now: datetime,
    column_definitions: bool = True,
) -> Object:
    from controlplane.api import printers
    from controlplane.api.apiextensions.customresources import table_printer

    printer = table_printer(rtype) or printers.printer_for(rtype.group, rtype.plural)
    rows = []
    for obj in items:
        row: Object = {"cells": printer.row(obj, now)}
        embedded = _embedded(obj, accept.include_object, accept.meta_version)
        if embedded is not None:
            row["object"] = embedded
        rows.append(row)
    result: Object = {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{accept.meta_version}",
        "metadata": resource_version or {},
        "columnDefinitions": [c.to_json() for c in printer.columns] if column_definitions else None,
        "rows": rows,
    }
    return result
