"""Patching: applying the four patch types kube-apiserver accepts to a stored object.

- JSON patch (RFC 6902): a list of operations at JSON pointers;
- JSON merge patch (RFC 7386): a partial object, ``null`` deletes;
- strategic merge patch: a merge patch that knows Kubernetes' lists (containers merge by ``name``),
  the format kubectl's client-side ``apply`` sends;
- server-side apply (``application/apply-patch+yaml``): the desired fields of one *field manager*.

The patch algorithms themselves are pure code in ``controlplane.api.patch``; this module picks one by
content type and turns its errors into Statuses (apiserver ``pkg/endpoints/handlers/patch.go``).

Server-side apply is reduced here to its simplest reading (the applied configuration merged into the
live object, created if absent); ownership of fields, conflicts between managers and removal of fields
a manager stopped applying are not modelled yet.
"""

from __future__ import annotations

import copy
from typing import Any

from controlplane.api import patch as patches
from controlplane.api.resources import ResourceType
from controlplane.apiserver import errors
from controlplane.apiserver.http import Request

Object = dict[str, Any]


def apply(kind: str, current: Object, document: Any, rtype: ResourceType, request: Request) -> Object:
    """The object after applying a patch of ``kind`` ("json", "merge", "strategic", "apply")."""
    try:
        if kind == "json":
            if not isinstance(document, list):
                raise errors.bad_request(
                    "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
                )
            result = patches.apply_json_patch(current, document)
        elif kind == "merge":
            result = patches.apply_merge_patch(current, document)
        elif kind == "strategic":
            result = patches.apply_strategic_merge_patch(
                current, document, group=rtype.group, version=rtype.version, kind=rtype.kind
            )
        else:
            if not request.query.get("fieldManager"):
                raise errors.bad_request(
                    "PATCH, application/apply-patch+yaml requests must set the fieldManager query parameter"
                )
            if not isinstance(document, dict):
                raise errors.bad_request("error decoding YAML: the applied configuration must be an object")
            base = copy.deepcopy(current) if current else {}
            result = patches.apply_strategic_merge_patch(
                base, document, group=rtype.group, version=rtype.version, kind=rtype.kind
            )
    except patches.PatchError as error:
        status = error.status()
        if error.status_code >= 500:
            # Upstream answers most strategic-merge failures as a bare 500; a malformed patch is the
            # client's fault, and the lab never answers bad input with a 500: 400 with the same text.
            raise errors.bad_request(error.detail) from None
        details = status.get("details") or {}
        if error.status_code == 422:
            # Upstream's 422 message hides the reason; keep its text and add the reason as a cause.
            details = {**details, "causes": [{"message": error.detail}]}
        raise errors.StatusError(
            error.status_code, status.get("reason", "BadRequest"), status["message"], details or None
        ) from None
    if not isinstance(result, dict):
        raise errors.bad_request("the patch did not produce an object")
    return result
