"""Subresources other than ``status``: ``scale`` of workloads; ``binding``, ``log`` and ``eviction`` of pods.

- ``deployments/scale`` and ``replicasets/scale`` read and write ``spec.replicas`` through an
  ``autoscaling/v1`` ``Scale`` object; this is what ``kubectl scale`` and autoscalers use, so they need
  no knowledge of the workload's own shape (apiserver ``pkg/registry/apps/deployment/storage``).
- ``pods/binding`` is how the scheduler assigns a pod: a ``Binding`` whose target names the node.
  The API server sets ``spec.nodeName`` only if it is still empty (409 Conflict otherwise), which is
  why two schedulers can never place the same pod twice (``pkg/registry/core/pod/storage/storage.go``).
- ``pods/log`` is ``kubectl logs``. The logs are on the node, so the API server checks the request,
  picks the container, and relays the answer of the node's kubelet (``GET /containerLogs/...``, see
  ``kubeletclient.py``) as ``text/plain``, streaming it with ``follow=true`` until the container stops
  or the reader goes away (``pkg/registry/core/pod/rest/log.go``, ``LogLocation`` in
  ``pkg/registry/core/pod/strategy.go``).
- ``pods/eviction`` is how ``kubectl drain`` removes pods: a ``policy/v1`` ``Eviction`` is a delete
  that a PodDisruptionBudget may refuse (429, see :mod:`.eviction` for the budgets' part). An allowed
  eviction deletes the pod with the Eviction's ``deleteOptions`` and answers ``Status Success``, 201
  (``pkg/registry/core/pod/storage/eviction.go``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controlplane.api import gotypes
from controlplane.api.apiextensions.customresources import CustomResourceStrategy
from controlplane.api.meta import Object, parse_time
from controlplane.api.resources import ResourceType
from controlplane.api.scale import scale_object
from controlplane.api.selectors import SelectorError, label_selector_from_object
from controlplane.api.validation import forbidden, invalid, not_supported, required
from controlplane.apiserver import admission, errors, patching
from controlplane.apiserver.handlers import eviction
from controlplane.apiserver.handlers.resources import PATCH_TYPES, Context, Reply, unsupported_dry_run
from controlplane.apiserver.http import Receive, Send, decode_body, dumps
from controlplane.apiserver.kubeletclient import KubeletUnavailable, container_logs_path
from controlplane.apiserver.requestscope import RequestScope

#: The autoscaling/v1 Scale kind, for patching the scale view (its schema drives strategic merge).
SCALE_TYPE = ResourceType("autoscaling", "v1", "Scale", "scale", "scale", True)
_SCALE_DEFINITION = "io.k8s.api.autoscaling.v1.Scale"


def _typed_body(body: Any, definition: str, kind: str, version: str) -> Object:
    """A subresource's body as upstream's decoder takes it: an object whose every value fits its Go field.

    400 BadRequest otherwise, as for any other body (``gotypes``): ``Scale in version "v1" cannot be
    handled as a Scale: json: cannot unmarshal number into Go struct field Scale.spec of type
    v1.ScaleSpec``.
    """
    problem = gotypes.type_error(body, definition)
    if problem is not None:
        raise errors.bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {problem}')
    return body if isinstance(body, dict) else {}  # null decodes to the zero value


def _scale(obj: Object) -> Object:
    """``scaleFromDeployment`` and its siblings (pkg/registry/apps/deployment/storage/storage.go)."""
    status = obj.get("status") or {}
    replicas = (obj.get("spec") or {}).get("replicas", 1)
    return scale_object(obj["metadata"], replicas, status.get("replicas", 0), _selector_string(obj))


def _selector_string(obj: Object) -> str:
    """``status.selector``: ``LabelSelectorAsSelector(spec.selector).String()``, or, for a
    ReplicationController, whose selector is a plain label map, ``SelectorFromSet`` (``scaleFromRC``
    in pkg/registry/core/replicationcontroller/storage/storage.go)."""
    selector = (obj.get("spec") or {}).get("selector")
    if obj.get("kind") == "ReplicationController":
        labels = selector if isinstance(selector, dict) else {}
        return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    try:
        return str(label_selector_from_object(selector if isinstance(selector, dict) else None))
    except SelectorError:  # validation keeps such a selector out of the store
        return ""


def _scale_of(rtype: ResourceType, obj: Object) -> Object:
    """The Scale view of ``obj``: a custom resource's at its definition's paths, else ``_scale``."""
    strategy = rtype.strategy
    if isinstance(strategy, CustomResourceStrategy) and strategy.scale is not None:
        return strategy.scale.view(obj)
    return _scale(obj)


async def get_scale(ctx: Context) -> Reply:
    """``GET .../scale``: the object seen as a Scale."""
    obj, _ = await ctx.registry.read(ctx.namespace, ctx.name)
    return Reply(200, dumps(_scale_of(ctx.rtype, obj)))


async def write_scale(ctx: Context) -> Reply:
    """``PUT`` or ``PATCH .../scale``: ``spec.replicas`` set through the Scale view."""
    verb = ctx.request.info.verb
    if verb == "patch":
        # kubectl scale sends a merge patch of the Scale: apply it to the Scale view of the object,
        # inside the read-modify-write, so that a race with another writer (the deployment
        # controller writing status) re-applies the patch to a fresh read instead of answering 409.
        # Upstream's patcher does the same: its patch is applied in GuaranteedUpdate's tryUpdate
        # (apiserver pkg/endpoints/handlers/patch.go, pkg/registry/apps/deployment/storage
        # scaleUpdatedObjectInfo), so only a resourceVersion the patch itself sets is a precondition.
        kind = PATCH_TYPES.get(ctx.request.content_type)
        if kind is None or kind == "apply":
            raise errors.unsupported_media_type()
        document = decode_body(await ctx.request.read_body(), ctx.request.content_type)

        def scale_of(current: Object) -> Object:
            patched = patching.apply(kind, _scale_of(ctx.rtype, current), document, SCALE_TYPE, ctx.request)
            problem = gotypes.type_error(patched, _SCALE_DEFINITION)
            if problem is not None:  # upstream handlers/patch.go: the patched Scale does not decode
                raise errors.invalid("", "", "", [invalid("patch", json.dumps(patched), problem)])
            return _checked_scale(ctx, patched)

    elif verb == "update":
        body = decode_body(await ctx.request.read_body(), ctx.request.content_type)
        sent = _checked_scale(ctx, _typed_body(body, _SCALE_DEFINITION, "Scale", "v1"))

        def scale_of(current: Object) -> Object:
            return sent

    else:
        raise errors.method_not_supported(f"{ctx.rtype.plural}/scale", ctx.rtype.group, verb)

    def mutate(current: Object) -> Object:
        wanted = scale_of(current)
        sent_rv = (wanted.get("metadata") or {}).get("resourceVersion")
        if sent_rv:
            current["metadata"]["resourceVersion"] = sent_rv
        strategy = ctx.rtype.strategy
        if isinstance(strategy, CustomResourceStrategy) and strategy.scale is not None:
            strategy.scale.set_replicas(current, wanted["spec"]["replicas"])
        else:
            current.setdefault("spec", {})["replicas"] = wanted["spec"]["replicas"]
        return current

    # managedFields: the write is the manager's, via "scale"
    track = patching.tracker(ctx.rtype, ctx.request, "scale", ctx.registry.clock)
    written = await ctx.registry.update(
        ctx.namespace, ctx.name, mutate, scope=ctx.scope, dry_run=ctx.dry_run, track=track
    )
    return Reply(200, dumps(_scale_of(ctx.rtype, written.obj)))


def _checked_scale(ctx: Context, body: Any) -> Object:
    """The Scale a client sent (or a patch made): a Scale object with a non-negative spec.replicas."""
    if not isinstance(body, dict) or body.get("kind") not in (None, "Scale"):
        raise errors.bad_request("the body of a scale update must be a Scale object")
    # ScaleSpec.replicas is omitempty (staging/src/k8s.io/api/autoscaling/v1/types.go): a Scale
    # without it asks for 0, as client-go's UpdateScale to 0 sends it.
    spec = body.get("spec") or {}
    replicas = spec.get("replicas", 0) if isinstance(spec, dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        problem = invalid("spec.replicas", replicas, "must be greater than or equal to 0")
        raise errors.invalid("Scale", "autoscaling", ctx.name, [problem])
    return {**body, "spec": {**spec, "replicas": replicas}}


async def bind(ctx: Context) -> Reply:
    """``POST pods/<name>/binding``: the scheduler assigns the pod to a node (see the module docstring)."""
    body = _typed_body(
        decode_body(await ctx.request.read_body(), ctx.request.content_type),
        "io.k8s.api.core.v1.Binding",
        "Binding",
        "v1",
    )
    target = body.get("target") or {}
    node = target.get("name")
    if not node:
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
        scheduled: dict[str, Any] = {"type": "PodScheduled"}
        generation = current["metadata"].get("generation")
        if isinstance(generation, int) and generation:  # PodObservedGenerationTracking (storage.go)
            scheduled["observedGeneration"] = generation
        scheduled |= {
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": current["metadata"].get("creationTimestamp"),
        }
        conditions.append(scheduled)
        current["status"]["conditions"] = conditions
        return current

    # Admission sees the Binding (pods/binding, CREATE), as upstream's BindingREST is a create; the
    # pod update it makes is the binding's storage, not another request to admit.
    body = await ctx.scope.mutate(admission.CREATE, body, None)
    await ctx.scope.validate(admission.CREATE, body, None)
    await ctx.registry.update(
        ctx.namespace,
        ctx.name,
        mutate,
        scope=ctx.scope.already_admitted("the pod update is the pods/binding create, admitted as such"),
        subresource="binding",
        dry_run=ctx.dry_run,
    )
    return Reply(
        201, dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    )


# -- pods/log ---------------------------------------------------------------------------------------

#: The annotation kubectl reads to choose a pod's container when none is named.
DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"


@dataclass(frozen=True)
class PodLogOptions:
    """The query of ``pods/<name>/log`` (core/v1 ``PodLogOptions``)."""

    container: str = ""
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    since_seconds: int | None = None
    since_time: str | None = None
    tail_lines: int | None = None
    limit_bytes: int | None = None

    def kubelet_query(self) -> dict[str, str]:
        """The kubelet's query, as ``LogLocation`` builds it."""
        query: dict[str, str] = {}
        if self.follow:
            query["follow"] = "true"
        if self.previous:
            query["previous"] = "true"
        if self.timestamps:
            query["timestamps"] = "true"
        if self.since_seconds is not None:
            query["sinceSeconds"] = str(self.since_seconds)
        if self.since_time is not None:
            query["sinceTime"] = self.since_time
        if self.tail_lines is not None:
            query["tailLines"] = str(self.tail_lines)
        if self.limit_bytes is not None:
            query["limitBytes"] = str(self.limit_bytes)
        return query


def parse_log_options(query: Mapping[str, str], name: str) -> PodLogOptions:
    """Decode and validate the query (400 if a value does not parse, 422 ``ValidatePodLogOptions``)."""

    def flag(key: str) -> bool:
        text = query.get(key, "")
        value = gotypes.go_parse_bool(text) if text else False  # an empty parameter is not set
        if value is None:
            raise errors.bad_request(f'strconv.ParseBool: parsing "{text}": invalid syntax')
        return value

    def number(key: str) -> int | None:
        text = query.get(key)
        if text is None or text == "":
            return None
        try:
            return int(text)
        except ValueError:
            raise errors.bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None

    since_time = query.get("sinceTime") or None
    if since_time is not None and parse_time(since_time) is None:
        raise errors.bad_request(f'parsing time "{since_time}" as "2006-01-02T15:04:05Z07:00": cannot parse')
    options = PodLogOptions(
        container=query.get("container", ""),
        follow=flag("follow"),
        previous=flag("previous"),
        timestamps=flag("timestamps"),
        since_seconds=number("sinceSeconds"),
        since_time=since_time,
        tail_lines=number("tailLines"),
        limit_bytes=number("limitBytes"),
    )
    problems = []
    if options.tail_lines is not None and options.tail_lines < 0:
        problems.append(invalid("tailLines", options.tail_lines, "must be greater than or equal to 0"))
    if options.limit_bytes is not None and options.limit_bytes < 1:
        problems.append(invalid("limitBytes", options.limit_bytes, "must be greater than 0"))
    if options.since_seconds is not None and options.since_time is not None:
        problems.append(forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif options.since_seconds is not None and options.since_seconds < 1:
        problems.append(invalid("sinceSeconds", options.since_seconds, "must be greater than 0"))
    if problems:
        raise errors.invalid("PodLogOptions", "", name, problems)
    return options


def log_container(pod: Mapping[str, Any], requested: str) -> str:
    """``validateContainer``: the named container, else the only one, else kubectl's default annotation.

    (Upstream's server takes only the sole container; kubectl reads the annotation on its side. Kubelab
    honours it here too, so that every client gets the same answer.)
    """
    spec: Mapping[str, Any] = pod.get("spec") or {}
    name = str((pod.get("metadata") or {}).get("name", ""))
    regular = [str(c.get("name")) for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    every = [
        str(c.get("name"))
        for key in ("initContainers", "containers", "ephemeralContainers")
        for c in spec.get(key) or []
        if isinstance(c, Mapping)
    ]
    if requested:
        if requested not in every:
            raise errors.bad_request(f"container {requested} is not valid for pod {name}")
        return requested
    if len(regular) == 1:
        return regular[0]
    if not regular:
        raise errors.bad_request(f"a container name must be specified for pod {name}")
    default = ((pod.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CONTAINER_ANNOTATION)
    if default in every:
        return str(default)
    raise errors.bad_request(
        f"a container name must be specified for pod {name}, choose one of: [{' '.join(every)}]"
    )


def _kubelet_error(code: int, body: bytes, name: str) -> errors.StatusError:
    """``GenericHttpResponseChecker``: a kubelet's error answer as the API server's Status."""
    text = body[:50_000].decode("utf-8", "replace")
    if code == 500:
        return errors.internal_error(text)
    if code == 400:
        return errors.bad_request(text)
    reason = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 503: "ServiceUnavailable"}.get(code, "")
    message = {
        404: "the server could not find the requested resource",
        503: "the server is currently unable to handle the request",
    }.get(code, f"the server responded with the status code {code} but did not return more information")
    return errors.StatusError(
        code,
        reason or "Unknown",
        f"{message} ( pods/log {name})",
        {
            "name": name,
            "kind": "pods/log",
            "causes": [{"reason": "UnexpectedServerResponse", "message": text}],
        },
    )


async def stream_log(ctx: Context) -> Reply:
    """GET ``pods/<name>/log``: relay the kubelet's answer as it comes."""
    send, kubelets = ctx.send, ctx.backends.kubelets
    nodes = ctx.backends.registries.get(("", "v1", "nodes"))
    options = parse_log_options(ctx.request.query, ctx.name)
    pod, _ = await ctx.registry.read(ctx.namespace, ctx.name)
    container = log_container(pod, options.container)
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    headers = [(b"content-type", b"text/plain"), (b"audit-id", ctx.request.audit_id.encode())]
    if not node:
        # LogLocation: a pod not yet assigned a host has no log location; the answer is empty.
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return Reply.streamed(200)
    node_object = None
    if nodes is not None and node not in kubelets:
        node_object, _ = await nodes.read("", node)  # GetConnectionInfo: 404 'nodes "x" not found'
    path = container_logs_path(ctx.namespace, ctx.name, container)
    try:
        response = await kubelets.get(node, node_object, path, options.kubelet_query())
    except KubeletUnavailable as error:
        raise errors.internal_error(error) from None
    try:
        if not 200 <= response.status <= 206:
            raise _kubelet_error(response.status, await response.read(), ctx.name)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await _relay(response.chunks(), send, ctx.request.receive)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        await response.aclose()
    return Reply.streamed(200)


async def _relay(chunks: Any, send: Send, receive: Receive) -> None:
    """Copy the kubelet's body to the client until it ends or the client disconnects."""

    async def pump() -> None:
        async for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    tasks = [asyncio.create_task(pump()), asyncio.create_task(disconnected())]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is tasks[0]:
                task.result()  # a broken send (client gone) surfaces here
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# -- pods/eviction ----------------------------------------------------------------------------------

_EVICTION_VERSIONS = ("policy/v1", "policy/v1beta1")
#: ``EvictionsRetry``: how often an eviction re-reads the pod after a conflict it did not ask for.
EVICTION_RETRIES = 20


async def evict(ctx: Context) -> Reply:
    """``EvictionREST.Create``: a delete, once the pod's disruption budget (if any) allows it."""
    body = decode_body(await ctx.request.read_body(), ctx.request.content_type)
    if not isinstance(body, dict):
        raise errors.bad_request("the body of an eviction must be an Eviction object")
    if body.get("apiVersion") in (None, "", "policy/v1"):  # policy/v1beta1 is the same shape, unserved
        _typed_body(body, "io.k8s.api.policy.v1.Eviction", "Eviction", "v1")
    if body.get("kind") not in (None, "", "Eviction") or body.get("apiVersion") not in (
        None,
        "",
        *_EVICTION_VERSIONS,
    ):
        raise errors.bad_request(
            f"not a Eviction object: {body.get('apiVersion') or ''}, Kind={body.get('kind') or ''}"
        )
    meta = body.get("metadata") or {}
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    if meta.get("namespace") not in (None, "", ctx.namespace):
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if meta.get("name") != ctx.name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = body.get("deleteOptions") or {}
    if not isinstance(options, dict):
        raise errors.bad_request("deleteOptions must be an object")
    query_dry_run = ["All"] if ctx.dry_run else []
    body_dry_run = options.get("dryRun") or []
    if query_dry_run and body_dry_run and body_dry_run != query_dry_run:
        raise errors.bad_request(
            f"Non-matching dry-run options in request and content: {query_dry_run} and {body_dry_run}"
        )
    dry_run = bool(query_dry_run or body_dry_run)
    if body_dry_run and body_dry_run != ["All"]:
        raise unsupported_dry_run("delete", body_dry_run)
    grace = options.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
        raise errors.bad_request("deleteOptions.gracePeriodSeconds must be an integer")
    policy = options.get("propagationPolicy")
    if policy not in (None, "Foreground", "Background", "Orphan"):
        raise errors.invalid(
            "DeleteOptions",
            "meta.k8s.io",
            "",
            [not_supported("propagationPolicy", policy, ["Foreground", "Background", "Orphan"])],
        )
    preconditions = options.get("preconditions") or {}
    if not isinstance(preconditions, dict):
        raise errors.bad_request("deleteOptions.preconditions must be an object")
    user_pinned_version = bool(preconditions.get("resourceVersion"))
    # Admission sees the Eviction (pods/eviction, CREATE); the delete it causes is not admitted again.
    body = await ctx.scope.mutate(admission.CREATE, body, None)
    await ctx.scope.validate(admission.CREATE, body, None)
    delete_scope = ctx.scope.already_admitted(
        "the pod's delete is the pods/eviction create, admitted as such"
    )
    success = Reply(
        201, dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    )
    for _ in range(1 if user_pinned_version else EVICTION_RETRIES):
        pod, revision = await ctx.registry.read(ctx.namespace, ctx.name)
        if not eviction.can_ignore_pdb(pod):
            break  # a running pod: its disruption budgets decide (below)
        wanted = dict(preconditions)
        # shouldEnforceResourceVersion: a Pending pod is deleted only as it was read.
        if eviction.should_enforce_resource_version(pod) and not user_pinned_version:
            wanted["resourceVersion"] = str(revision)
        try:
            await _delete_evicted(ctx, delete_scope, wanted, grace, dry_run, policy, options)
        except errors.StatusError as error:
            changed = isinstance(error, eviction.ResourceVersionChanged) or (
                isinstance(error, errors.PreconditionFailed) and error.field == "resourceVersion"
            )
            if not user_pinned_version and changed:
                continue  # the Pending pod changed since we read it: read it again
            raise
        return success
    else:
        raise errors.conflict("pods", "", ctx.name, errors.OBJECT_MODIFIED)
    decision = await eviction.consult_budgets(ctx, pod, dry_run=dry_run)
    if decision.reply is not None:
        return decision.reply
    wanted = dict(preconditions)
    if decision.delete_as_read:  # an unready pod let go without spending the budget, if still unready
        wanted["resourceVersion"] = str(revision)
    try:
        await _delete_evicted(ctx, delete_scope, wanted, grace, dry_run, policy, options)
    except errors.StatusError as error:
        if error.code == 409 and decision.delete_as_read and not user_pinned_version:
            raise eviction.still_being_processed(decision.pdb_name) from None
        raise
    return success


async def _delete_evicted(
    ctx: Context,
    scope: RequestScope,
    wanted: dict[str, Any],
    grace: Any,
    dry_run: bool,
    policy: Any,
    options: dict[str, Any],
) -> None:
    """``addConditionAndDeletePod``: mark the pod ``DisruptionTarget`` (not on a dry run), delete it."""
    if not dry_run:
        wanted = await eviction.mark_disruption_target(ctx, scope, wanted)
    await ctx.registry.delete(
        ctx.namespace,
        ctx.name,
        scope=scope,
        preconditions=wanted or None,
        grace_period=grace,
        dry_run=dry_run,
        orphan=policy == "Orphan" or options.get("orphanDependents") is True,
        foreground=policy == "Foreground",
    )
