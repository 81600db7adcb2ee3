"""MutatingAdmissionWebhook: the mutating webhooks, called one after the other, each seeing the last's work.

For each ``MutatingWebhookConfiguration`` webhook whose rules and selectors match the request (in
order of configuration name, then of the webhooks in it), the API server POSTs an ``AdmissionReview``
and waits for the answer. A webhook may refuse (``allowed: false``, and its ``status`` becomes the
client's error: ``admission webhook "x" denied the request: ...``), or allow with a **JSON patch**
(``patchType: JSONPatch``, ``patch``: the base64 of an RFC 6902 list), which is applied at once, so
the next webhook sees the patched object.

Calls run in sequence because each depends on the previous one's result. A webhook that cannot be
reached, times out (``timeoutSeconds``, 10 by default) or answers nonsense is a *call failure*:
``failurePolicy: Fail`` refuses the request (upstream's ``Internal error occurred: failed calling
webhook "x": ...``), ``Ignore`` carries on as if it had not been configured, leaving the audit
annotation ``failed-open.mutation.webhook.admission.k8s.io/round_<r>_index_<i>: <name>`` (``r``: 1 when
reinvoked; ``i``: its place among the webhooks that may match the request; upstream counts every
mutating webhook of the cluster).

**Reinvocation.** A webhook that adds a sidecar container may run before another that adds a
container too, and would never see the second one. With ``reinvocationPolicy: IfNeeded`` it is
called a second time when a later step changed the object after it (at most once more): see
``chain.py``. A webhook whose ``sideEffects`` are not ``None``/``NoneOnDryRun`` cannot take part in
a dry run: the request is refused with 400 rather than the webhook called.

Each call is an ``admission.step`` on the trace from ``apiserver`` to ``webhook:<name>``, with the
patch the webhook made. Upstream: apiserver ``pkg/admission/plugin/webhook/mutating/dispatcher.go``.
"""

from __future__ import annotations

from controlplane.api import gotypes, strict
from controlplane.api import schema as schemas
from controlplane.api.fieldmanager import typed
from controlplane.api.patch.errors import PatchError
from controlplane.api.patch.jsonpatch import apply_json_patch
from controlplane.apiserver import errors
from controlplane.apiserver.admission.attributes import Attributes, Object, labels_of
from controlplane.apiserver.admission.chain import ClusterView, Scope, Tracer
from controlplane.apiserver.admission.webhook import (
    DRY_RUN_SAFE,
    IF_NEEDED,
    CallFailed,
    denied,
    dry_run_unsupported,
    failing_closed,
    matches,
)
from controlplane.apiserver.admission.webhookclient import Configurations, WebhookClient, call
from controlplane.uids import new_uid

PLUGIN = "MutatingAdmissionWebhook"
#: The audit annotation key of a webhook that failed open (``MutationAuditAnnotationFailedOpenKeyPrefix``).
FAILED_OPEN_PREFIX = "failed-open.mutation.webhook.admission.k8s.io/"


class MutatingWebhooks:
    """The webhook half of the mutating phase (a ``chain.WebhookPhase``)."""

    def __init__(self, configurations: Configurations, client: WebhookClient, tracer: Tracer) -> None:
        self.configurations = configurations
        self.client = client
        self.tracer = tracer

    async def admit(
        self, a: Attributes, cluster: ClusterView, scope: Scope, *, reinvocation: bool
    ) -> Object | None:
        hooks = self.configurations.candidates(a.group, a.resource)
        if not hooks:
            return None
        namespace = (
            cluster.cached("", "namespaces", "", a.namespace) if a.namespaced and a.namespace else None
        )
        namespace_labels = labels_of(namespace)
        obj = a.object
        for index, hook in enumerate(hooks):
            if reinvocation and (
                hook.reinvocation_policy != IF_NEEDED
                or hook.name not in scope.seen_by_reinvocable
                or scope.seen_by_reinvocable[hook.name] == obj
            ):
                continue
            current = a.with_objects(obj, a.old_object)
            if not matches(hook, current, namespace_labels):
                continue
            if a.dry_run and hook.side_effects not in DRY_RUN_SAFE:
                error = dry_run_unsupported(hook.name)
                self.tracer.step(scope, hook.name, "mutating", "deny", detail=error.message, to=hook.node)
                raise error
            try:
                verdict = await call(self.client, hook, current, new_uid())
            except CallFailed as failure:
                outcome = "pass" if hook.fails_open else "deny"
                policy = "failurePolicy Ignore" if hook.fails_open else "failurePolicy Fail"
                self.tracer.step(
                    scope, hook.name, "mutating", outcome, detail=f"{failure} ({policy})", to=hook.node
                )
                if hook.fails_open:
                    key = f"{FAILED_OPEN_PREFIX}round_{1 if reinvocation else 0}_index_{index}"
                    scope.annotations[key] = hook.name
                    continue
                raise failing_closed(failure) from None
            for warning in verdict.warnings:
                scope.warn(warning)
            if not verdict.allowed:
                error = denied(hook.name, verdict.result)
                self.tracer.step(scope, hook.name, "mutating", "deny", detail=error.message, to=hook.node)
                raise error
            if verdict.patch and obj is not None:
                try:
                    patched = apply_json_patch(obj, verdict.patch)
                except PatchError as problem:
                    self.tracer.step(scope, hook.name, "mutating", "deny", detail=str(problem), to=hook.node)
                    raise errors.internal_error(problem) from None
                if not isinstance(patched, dict):
                    raise errors.internal_error(
                        f'mutating webhook "{hook.name}" replaced the object with a non-object'
                    )
                obj = _decoded(patched, a)
            self.tracer.step(scope, hook.name, "mutating", "pass", patch=verdict.patch, to=hook.node)
            scope.ran.append(hook.node)
            if hook.reinvocation_policy == IF_NEEDED:
                scope.seen_by_reinvocable[hook.name] = obj
        return obj

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        return None


def _decoded(patched: Object, a: Attributes) -> Object:
    """The patched object as upstream's dispatcher decodes it back into the kind's Go struct.

    (admission ``plugin/webhook/mutating/dispatcher.go``: a non-strict JSON decode.) Unknown fields
    are dropped without a word, and a value of the wrong type is an InternalError: a webhook's patch
    cannot store what a client's request could not. Kinds without a schema here pass as they are.
    """
    node = typed.root_for_kind(a.kind_group, a.kind_version, a.kind)
    if node is None:
        return patched
    pruned = strict.prune_unknown(patched, node)
    kept = pruned if isinstance(pruned, dict) else patched
    definition = schemas.definition_for_kind(a.kind_group, a.kind_version, a.kind)
    problem = None if definition is None else gotypes.type_error(kept, definition)
    if problem is not None:
        raise errors.internal_error(problem)
    return kept


__all__ = ["FAILED_OPEN_PREFIX", "PLUGIN", "MutatingWebhooks"]
