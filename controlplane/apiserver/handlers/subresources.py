"""Subresources other than ``status``: ``scale`` of workloads and ``binding`` of pods.

- ``deployments/scale`` and ``replicasets/scale`` read and write ``spec.replicas`` through an
  ``autoscaling/v1`` ``Scale`` object; this is what ``kubectl scale`` and autoscalers use, so they need
  no knowledge of the workload's own shape (apiserver ``pkg/registry/apps/deployment/storage``).
- ``pods/binding`` is how the scheduler assigns a pod: a ``Binding`` whose target names the node.
  The API server sets ``spec.nodeName`` only if it is still empty (409 Conflict otherwise), which is
  why two schedulers can never place the same pod twice (``pkg/registry/core/pod/storage/storage.go``).
"""

from __future__ import annotations

from typing import Any

from controlplane.api.resources import ResourceType
from controlplane.apiserver import errors
from controlplane.apiserver.handlers.resources import Context, Reply
from controlplane.apiserver.http import decode_body, dumps

Object = dict[str, Any]

#: The autoscaling/v1 Scale kind, for patching the scale view (its schema drives strategic merge).
SCALE_TYPE = ResourceType("autoscaling", "v1", "Scale", "scale", "scale", True)


def _scale(obj: Object) -> Object:
    meta = obj["metadata"]
    status = obj.get("status") or {}
    selector = (obj.get("spec") or {}).get("selector") or {}
    match_labels = selector.get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
        "status": {
            "replicas": status.get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(match_labels.items())),
        },
    }


async def handle(ctx: Context, verb: str) -> Reply:
    if ctx.subresource == "scale":
        return await _handle_scale(ctx, verb)
    if ctx.subresource == "binding" and verb == "create":
        return await _bind(ctx)
    raise errors.method_not_supported(f"{ctx.rtype.plural}/{ctx.subresource}", ctx.rtype.group, verb)


async def _handle_scale(ctx: Context, verb: str) -> Reply:
    if verb == "get":
        obj, _ = await ctx.registry.read(ctx.namespace, ctx.name)
        return Reply(200, dumps(_scale(obj)))
    if verb == "patch":
        # kubectl scale sends a merge patch of the Scale: apply it to the Scale view of the object.
        from controlplane.apiserver import patching
        from controlplane.apiserver.handlers.resources import PATCH_TYPES

        kind = PATCH_TYPES.get(ctx.request.content_type)
        if kind is None or kind == "apply":
            raise errors.unsupported_media_type()
        document = decode_body(await ctx.request.read_body(), ctx.request.content_type)
        obj, _ = await ctx.registry.read(ctx.namespace, ctx.name)
        body = patching.apply(kind, _scale(obj), document, SCALE_TYPE, ctx.request)
    elif verb == "update":
        body = decode_body(await ctx.request.read_body(), ctx.request.content_type)
    else:
        raise errors.method_not_supported(f"{ctx.rtype.plural}/scale", ctx.rtype.group, verb)
    if not isinstance(body, dict) or body.get("kind") not in (None, "Scale"):
        raise errors.bad_request("the body of a scale update must be a Scale object")
    replicas = (body.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or replicas < 0:
        from controlplane.api.validation import invalid

        problem = invalid("spec.replicas", replicas, "must be greater than or equal to 0")
        raise errors.invalid("Scale", "autoscaling", ctx.name, [problem])
    sent_rv = (body.get("metadata") or {}).get("resourceVersion")

    def mutate(current: Object) -> Object:
        if sent_rv:
            current["metadata"]["resourceVersion"] = sent_rv
        current.setdefault("spec", {})["replicas"] = replicas
        return current

    from controlplane.apiserver import patching  # managedFields: the write is the manager's, via "scale"

    track = patching.tracker(ctx.rtype, ctx.request, "scale", ctx.registry.clock)
    written = await ctx.registry.update(ctx.namespace, ctx.name, mutate, dry_run=ctx.dry_run, track=track)
    return Reply(200, dumps(_scale(written.obj)))


async def _bind(ctx: Context) -> Reply:
    body = decode_body(await ctx.request.read_body(), ctx.request.content_type)
    if not isinstance(body, dict):
        raise errors.bad_request("the body of a binding must be a Binding object")
    target = body.get("target") or {}
    node = target.get("name")
    if not node:
        from controlplane.api.validation import required

        raise errors.invalid("Binding", "", ctx.name, [required("target.name")])

    def mutate(current: Object) -> Object:
        spec = current.setdefault("spec", {})
        if current["metadata"].get("deletionTimestamp"):
            raise errors.conflict("pods", "", ctx.name, "pod is being deleted, cannot be assigned to a host")
        if spec.get("nodeName"):
            raise errors.conflict(
                "pods", "", ctx.name, f'pod {ctx.name} is already assigned to node "{spec["nodeName"]}"'
            )
        spec["nodeName"] = node
        conditions = [
            c
            for c in (current.setdefault("status", {}).get("conditions") or [])
            if c.get("type") != "PodScheduled"
        ]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": current["metadata"].get("creationTimestamp"),
            }
        )
        current["status"]["conditions"] = conditions
        return current

    await ctx.registry.update(ctx.namespace, ctx.name, mutate, subresource="binding", dry_run=ctx.dry_run)
    return Reply(
        201, dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    )
