"""TokenRequest: ``POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`` mints a token.

This is how a ServiceAccount token comes to exist today (``kubectl create token``, and the kubelet for
every pod's projected token volume). The request is an ``authentication.k8s.io/v1`` ``TokenRequest``:

- ``spec.audiences``: for whom the token is meant (default: the API server's own audiences);
- ``spec.expirationSeconds``: how long it lasts (default 3600; at least 600, at most 2^32, else 422);
- ``spec.boundObjectRef``: a Pod, Secret or Node (name, optional uid) the token is **bound** to. A
  bound token dies with its object: delete the pod and its token is refused, even before it expires.
  A pod must run as this ServiceAccount (400 otherwise); a uid that no longer matches is 409: the
  object was deleted and made again since the caller looked.

The answer (201) is the same object with ``status.token`` (the signed JWT, see
``controlplane.serviceaccounttokens``) and ``status.expirationTimestamp``. Nothing is stored: the API server
can check the token later from its signature and the objects it names, so there is nothing to keep.

Upstream: kubernetes ``pkg/registry/core/serviceaccount/storage/token.go`` (``TokenREST.Create``),
``pkg/apis/authentication/validation/validation.go`` (``ValidateTokenRequest``) and the v1 defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from controlplane.api.meta import Object
from controlplane.api.validation import FieldError, invalid
from controlplane.apiserver import errors
from controlplane.apiserver.handlers.resources import Context, Reply
from controlplane.apiserver.http import decode_body, dumps
from controlplane.apiserver.registry import Registry
from controlplane.serviceaccounttokens import (
    DEFAULT_EXPIRATION_SECONDS,
    MAX_EXPIRATION_SECONDS,
    MIN_EXPIRATION_SECONDS,
    new_claims,
)

API_VERSION = "authentication.k8s.io/v1"
KIND = "TokenRequest"
GROUP = "authentication.k8s.io"

#: The kinds a token may be bound to, and their resources (all in the core group).
BOUND_KINDS = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}


def _cannot_unmarshal(field: str, value: Any, go_type: str) -> errors.StatusError:
    """400 as the JSON decoder words a field of the wrong type."""
    json_type = {bool: "bool", str: "string", int: "number", float: "number", list: "array", dict: "object"}
    what = json_type.get(type(value), "value")
    return errors.bad_request(
        f'TokenRequest in version "v1" cannot be handled as a TokenRequest: json: cannot unmarshal {what} '
        f"into Go struct field {field} of type {go_type}"
    )


def _strings(spec: Mapping[str, Any], key: str) -> list[str]:
    value = spec.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _cannot_unmarshal(f"TokenRequestSpec.spec.{key}", value, "[]string")
    for item in value:
        if not isinstance(item, str):
            raise _cannot_unmarshal(f"TokenRequestSpec.spec.{key}", item, "string")
    return list(value)


def parse(body: Any, ctx: Context) -> Object:
    """The TokenRequest in ``body``, defaulted; 400 for a body of the wrong shape, 422 if invalid."""
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a TokenRequest object")
    if body.get("apiVersion") not in (None, "", API_VERSION):
        raise errors.bad_request(
            f"the API version in the data ({body.get('apiVersion')}) does not match the expected API "
            f"version ({API_VERSION})"
        )
    if body.get("kind") not in (None, "", KIND):
        raise errors.bad_request(
            f"the kind in the data ({body.get('kind')}) does not match the expected kind ({KIND})"
        )
    meta = {} if body.get("metadata") is None else body["metadata"]
    if not isinstance(meta, dict):
        raise _cannot_unmarshal("TokenRequest.metadata", meta, "v1.ObjectMeta")
    if meta.get("namespace") not in (None, "", ctx.namespace):
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if meta.get("name") not in (None, "", ctx.name):
        raise errors.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL ({ctx.name})"
        )
    spec = {} if body.get("spec") is None else body["spec"]
    if not isinstance(spec, dict):
        raise _cannot_unmarshal("TokenRequest.spec", spec, "v1.TokenRequestSpec")
    audiences = _strings(spec, "audiences")
    seconds = spec.get("expirationSeconds")
    if seconds is None:
        seconds = DEFAULT_EXPIRATION_SECONDS
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise _cannot_unmarshal("TokenRequestSpec.spec.expirationSeconds", seconds, "int64")
    ref = spec.get("boundObjectRef")
    if ref is not None:
        if not isinstance(ref, dict):
            raise _cannot_unmarshal("TokenRequestSpec.spec.boundObjectRef", ref, "v1.BoundObjectReference")
        for key in ("kind", "apiVersion", "name", "uid"):
            if not isinstance(ref.get(key, ""), str):
                raise _cannot_unmarshal(f"BoundObjectReference.spec.boundObjectRef.{key}", ref[key], "string")
    problems: list[FieldError] = []
    if seconds < MIN_EXPIRATION_SECONDS:
        problems.append(
            invalid("spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes")
        )
    if seconds > MAX_EXPIRATION_SECONDS:
        problems.append(
            invalid("spec.expirationSeconds", seconds, "may not specify a duration larger than 2^32 seconds")
        )
    if problems:
        # NewInvalid(gvk.GroupKind(), "", errs): upstream names no object here.
        raise errors.invalid(KIND, GROUP, "", problems)
    meta = dict(meta)
    meta["namespace"] = ctx.namespace
    meta.setdefault("creationTimestamp", None)
    new_spec: Object = {"audiences": audiences, "expirationSeconds": seconds}
    if ref is not None:
        new_spec["boundObjectRef"] = ref
    return {"kind": KIND, "apiVersion": API_VERSION, "metadata": meta, "spec": new_spec, "status": {}}


async def _bound_object(
    ref: Mapping[str, Any], ctx: Context, registries: Mapping[tuple[str, str, str], Registry]
) -> tuple[str, Object]:
    """The object the token is to be bound to: (kind, object); 400, 404 or 409 as upstream."""
    kind, api_version = ref.get("kind", ""), ref.get("apiVersion", "")
    group, _, version = api_version.rpartition("/")
    resource = BOUND_KINDS.get(kind) if group == "" else None
    registry = registries.get(("", "v1", resource)) if resource else None
    if registry is None:
        # gvk.String(): "<group>/<version>, Kind=<kind>"
        raise errors.bad_request(f"cannot bind token to object of type {group}/{version}, Kind={kind}")
    name = ref.get("name", "")
    if not name:
        raise errors.bad_request("Name parameter required.")  # the registry's key function
    obj, _ = await registry.read(ctx.namespace if registry.rtype.namespaced else "", name)
    if kind == "Pod" and (obj.get("spec") or {}).get("serviceAccountName", "") != ctx.name:
        raise errors.bad_request(
            f'cannot bind token for serviceaccount "{ctx.name}" to pod running with different '
            "serviceaccount name."
        )
    uid = (obj.get("metadata") or {}).get("uid", "")
    wanted = ref.get("uid", "")
    if wanted and wanted != uid:
        raise errors.conflict(
            kind,
            "",
            name,
            f"the UID in the bound object reference ({wanted}) does not match the UID in record. "
            "The object might have been deleted and then recreated",
        )
    return kind, obj


async def create(ctx: Context) -> Reply:
    """``TokenREST.Create``: check the request, read the ServiceAccount and bound object, sign."""
    issuer, registries = ctx.backends.issuer, ctx.backends.registries
    if issuer is None:  # an API server without a ServiceAccount key serves no tokens
        raise errors.StatusError(404, "NotFound", "the server could not find the requested resource")
    request = parse(decode_body(await ctx.request.read_body(), ctx.request.content_type), ctx)
    spec = request["spec"]
    service_account, _ = await ctx.registry.read(ctx.namespace, ctx.name)
    pod = secret = node = None
    if "boundObjectRef" in spec:
        kind, obj = await _bound_object(spec["boundObjectRef"], ctx, registries)
        if kind == "Pod":
            pod = obj
            # ServiceAccountTokenPodNodeInfo: a pod's token names the node it runs on, if there is one.
            node_name = (obj.get("spec") or {}).get("nodeName")
            nodes = registries.get(("", "v1", "nodes"))
            if node_name and nodes is not None:
                try:
                    node, _ = await nodes.read("", node_name)
                except errors.StatusError as error:
                    if error.code != 404:
                        raise
        elif kind == "Secret":
            secret = obj
        else:
            node = obj
    if not spec["audiences"]:
        spec["audiences"] = list(issuer.api_audiences)
    if 0 < issuer.max_expiration_seconds < spec["expirationSeconds"]:
        spec["expirationSeconds"] = issuer.max_expiration_seconds
    claims = new_claims(
        issuer=issuer.issuer,
        service_account=service_account,
        audiences=spec["audiences"],
        expiration_seconds=spec["expirationSeconds"],
        now=ctx.registry.clock.now(),
        pod=pod,
        secret=secret,
        node=node,
    )
    request["status"] = {
        "token": issuer.sign(claims),
        "expirationTimestamp": datetime.fromtimestamp(claims.expires, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return Reply(201, dumps(request))
