"""ValidatingAdmissionWebhook: the validating webhooks, called all at once, any of which may say no.

Once the object is final (every mutation done, the object's own validation passed), each matching
``ValidatingWebhookConfiguration`` webhook gets the ``AdmissionReview``. They cannot change anything,
so the API server calls them **in parallel** and waits for all: the request is refused if any refuses
(``admission webhook "x" denied the request: ...``) or if any with ``failurePolicy: Fail`` could not be
called (``Internal error occurred: failed calling webhook "x": ...``). With several refusals, the one
of the first webhook in configuration order is reported. A webhook with ``failurePolicy: Ignore`` that
could not be called leaves an audit annotation, ``failed-open.validating.webhook.admission.k8s.io/
round_0_index_<i>: <name>`` (``i``: its place among the webhooks called), and nothing for the client.

Upstream: apiserver ``pkg/admission/plugin/webhook/validating/dispatcher.go``.
"""

from __future__ import annotations

import asyncio

from controlplane.apiserver import errors
from controlplane.apiserver.admission.attributes import Attributes, Object, labels_of
from controlplane.apiserver.admission.chain import ClusterView, Scope, Tracer
from controlplane.apiserver.admission.webhook import (
    DRY_RUN_SAFE,
    CallFailed,
    Webhook,
    denied,
    dry_run_unsupported,
    failing_closed,
    matches,
)
from controlplane.apiserver.admission.webhookclient import Configurations, WebhookClient, call
from controlplane.uids import new_uid

PLUGIN = "ValidatingAdmissionWebhook"
#: The audit annotation key of a webhook that failed open (``ValidatingAuditAnnotationFailedOpenKeyPrefix``).
FAILED_OPEN_PREFIX = "failed-open.validating.webhook.admission.k8s.io/"


class ValidatingWebhooks:
    """The webhook half of the validating phase (a ``chain.WebhookPhase``)."""

    def __init__(self, configurations: Configurations, client: WebhookClient, tracer: Tracer) -> None:
        self.configurations = configurations
        self.client = client
        self.tracer = tracer

    async def admit(
        self, a: Attributes, cluster: ClusterView, scope: Scope, *, reinvocation: bool
    ) -> Object | None:
        return None

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        hooks = self.configurations.candidates(a.group, a.resource)
        if not hooks:
            return
        namespace = (
            cluster.cached("", "namespaces", "", a.namespace) if a.namespaced and a.namespace else None
        )
        namespace_labels = labels_of(namespace)
        chosen = [hook for hook in hooks if matches(hook, a, namespace_labels)]
        for hook in chosen:
            if a.dry_run and hook.side_effects not in DRY_RUN_SAFE:
                error = dry_run_unsupported(hook.name)
                self.tracer.step(scope, hook.name, "validating", "deny", detail=error.message, to=hook.node)
                raise error
        outcomes = await asyncio.gather(*(self._one(hook, i, a, scope) for i, hook in enumerate(chosen)))
        for outcome in outcomes:
            if outcome is not None:
                raise outcome

    async def _one(self, hook: Webhook, index: int, a: Attributes, scope: Scope) -> errors.StatusError | None:
        try:
            verdict = await call(self.client, hook, a, new_uid())
        except CallFailed as failure:
            outcome = "pass" if hook.fails_open else "deny"
            policy = "failurePolicy Ignore" if hook.fails_open else "failurePolicy Fail"
            self.tracer.step(
                scope, hook.name, "validating", outcome, detail=f"{failure} ({policy})", to=hook.node
            )
            if not hook.fails_open:
                return failing_closed(failure)
            scope.annotations[f"{FAILED_OPEN_PREFIX}round_0_index_{index}"] = hook.name
            return None
        for warning in verdict.warnings:
            scope.warn(warning)
        if not verdict.allowed:
            error = denied(hook.name, verdict.result)
            self.tracer.step(scope, hook.name, "validating", "deny", detail=error.message, to=hook.node)
            return error
        self.tracer.step(scope, hook.name, "validating", "pass", to=hook.node)
        scope.ran.append(hook.node)
        return None


__all__ = ["FAILED_OPEN_PREFIX", "PLUGIN", "ValidatingWebhooks"]
