"""The admission chain: the plugins in upstream's order, run in two phases, each step on the trace.

A write passes the **mutating** phase first: each mutating plugin may return a JSON patch (RFC 6902)
that the chain applies before the next plugin looks; then the object's own validation runs (in the
registry); then the **validating** phase, where plugins may only say yes or no. The first no stops the
request (upstream's ``chainAdmissionHandler`` in apiserver ``pkg/admission/chain.go``).

Built-in plugins here return patches, exactly like mutating webhooks do, so the trace can show what
each one changed: ``admission.step`` carries ``plugin``, ``phase``, ``outcome`` and ``patch``. A
plugin that does not care about a request (``handles`` is False: DefaultTolerationSeconds and an
Event) is skipped before it does any work and leaves nothing on the trace; that keeps admission cheap
for the thousands of Events a busy cluster creates.

**Reinvocation** (``pkg/admission/reinvocation.go``): a mutating webhook with ``reinvocationPolicy:
IfNeeded`` is called once more if something after it changed the object. The chain then runs the
built-in mutating plugins again (upstream reinvokes all of them) and those webhooks, once.

Plugins read the cluster through ``ClusterView`` (the API server's watch caches, the store as a last
resort, and the authorizer); the adapter over the real API server is ``clusterview.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from controlplane.api.patch.errors import PatchError
from controlplane.api.patch.jsonpatch import apply_json_patch
from controlplane.apiserver import errors
from controlplane.apiserver.admission.attributes import Attributes, Object, PatchOp
from controlplane.apiserver.pipeline import NO_REPORT, Reporter
from controlplane.identity import UserInfo
from controlplane.trace import TraceSink, nodes


class ClusterView(Protocol):
    """What plugins may read of the cluster (upstream gives them informers' listers and a client)."""

    def cached(self, group: str, resource: str, namespace: str, name: str) -> Object | None:
        """An object from the watch cache (None if the cache does not have it)."""
        ...

    def cached_list(self, group: str, resource: str, namespace: str | None) -> list[Object]:
        """Every cached object of a resource (in one namespace, or all with None)."""
        ...

    async def get(self, group: str, resource: str, namespace: str, name: str) -> Object | None:
        """The cache, and if it does not have the object, the store (a "live lookup")."""
        ...

    async def authorize(
        self, user: UserInfo, verb: str, group: str, resource: str, namespace: str, name: str
    ) -> bool:
        """Whether ``user`` may ``verb`` the object (the server's authorizer)."""
        ...


class Plugin:
    """One built-in admission plugin. Subclasses set ``name`` and override what they do."""

    name: ClassVar[str] = ""
    #: Whether the plugin has a mutating (``admit``) and/or a validating (``validate``) half.
    mutating: ClassVar[bool] = False
    validating: ClassVar[bool] = False

    def handles(self, a: Attributes) -> bool:
        """Cheap first look: False means "not my business", and the plugin is skipped silently."""
        return True

    async def admit(self, a: Attributes, cluster: ClusterView, scope: Scope) -> list[PatchOp]:
        """The patch this plugin makes to ``a.object`` ([] for none); raise a StatusError to refuse."""
        return []

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        """Raise a StatusError to refuse the request."""


@dataclass
class Scope:
    """The state of one request's admission: warnings for the client, reinvocation bookkeeping, and
    where its steps are reported (the request's Audit-ID, its pipeline reporter)."""

    #: The Audit-ID of the request, which its ``admission.step`` events name ("" for none).
    audit_id: str = ""
    #: Where the ``mutating-admission`` and ``validating-admission`` stages are reported.
    report: Reporter = NO_REPORT
    warnings: list[str] = field(default_factory=list)
    #: Set while the chain reinvokes (a plugin may want to know, as upstream's ``IsReinvoke``).
    reinvoking: bool = False
    #: Mutating webhooks (IfNeeded) by name, with the object they last saw.
    seen_by_reinvocable: dict[str, Object | None] = field(default_factory=dict)
    #: Names of the steps that ran, per phase (the pipeline stage's detail).
    ran: list[str] = field(default_factory=list)
    #: Audit annotations for the request's audit event (upstream's ``Attributes.AddAnnotation``).
    annotations: dict[str, str] = field(default_factory=dict)

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)


class WebhookPhase(Protocol):
    """The webhook half of one phase (``mutatingwebhook.py`` / ``validatingwebhook.py``)."""

    async def admit(
        self, a: Attributes, cluster: ClusterView, scope: Scope, *, reinvocation: bool
    ) -> Object | None: ...

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None: ...


class Tracer:
    """Emits ``admission.step`` events for one cluster (nothing when nobody watches)."""

    def __init__(self, trace: TraceSink, cluster: str) -> None:
        self.trace = trace
        self.cluster = cluster

    @property
    def enabled(self) -> bool:
        return self.trace.enabled

    def step(
        self,
        scope: Scope,
        plugin: str,
        phase: str,
        outcome: str,
        *,
        patch: list[PatchOp] | None = None,
        detail: str = "",
        to: str = nodes.APISERVER,
    ) -> None:
        """One ``admission.step`` of the request whose admission ``scope`` is."""
        if not self.trace.enabled:
            return
        fields: dict[str, Any] = {
            "cluster": self.cluster,
            "id": scope.audit_id,
            "from": nodes.APISERVER,
            "to": to,
            "plugin": plugin,
            "phase": phase,
            "outcome": outcome,
        }
        if patch:
            fields["patch"] = patch
        if detail:
            fields["detail"] = detail
        self.trace.emit("admission.step", **fields)


def apply_patch(obj: Object, patch: list[PatchOp], who: str, *, in_place: bool = False) -> Object:
    """``obj`` with ``patch`` applied; a plugin's broken patch is a server bug: 500, naming it.

    ``in_place`` patches ``obj`` itself rather than a copy (see ``Chain._mutating_pass``).
    """
    try:
        patched = apply_json_patch(obj, patch, copy=not in_place)
    except PatchError as error:
        raise errors.internal_error(
            f"admission plugin {who} made a patch that does not apply: {error}"
        ) from None
    if not isinstance(patched, dict):
        raise errors.internal_error(f"admission plugin {who} replaced the object with a non-object")
    return patched


class Chain:
    """The plugins of one API server, in upstream's order, and the webhooks between them."""

    def __init__(
        self,
        plugins: Sequence[Plugin],
        *,
        cluster: ClusterView,
        tracer: Tracer,
        mutating_webhooks: WebhookPhase | None = None,
        validating_webhooks: WebhookPhase | None = None,
        after_webhooks: Sequence[Plugin] = (),
    ) -> None:
        #: Plugins that run before the webhooks (all but ResourceQuota), and after them.
        self.plugins = list(plugins)
        self.after_webhooks = list(after_webhooks)
        self.cluster = cluster
        self.tracer = tracer
        self.mutating_webhooks = mutating_webhooks
        self.validating_webhooks = validating_webhooks
        self._mutators = [p for p in self.plugins if p.mutating]
        self._validators = [p for p in self.plugins if p.validating]
        self._late_validators = [p for p in self.after_webhooks if p.validating]

    @property
    def names(self) -> list[str]:
        return [p.name for p in (*self.plugins, *self.after_webhooks)]

    # -- mutating --------------------------------------------------------------------------------

    async def mutate(self, a: Attributes, scope: Scope) -> Object | None:
        """Run the mutating phase; the (possibly patched) object."""
        ran: list[str] = []
        try:
            a = await self._mutating_pass(a, scope, ran, reinvocation=False)
            if self._needs_reinvocation(a, scope):
                scope.reinvoking = True
                a = await self._mutating_pass(a, scope, ran, reinvocation=True)
        except errors.StatusError as error:
            scope.report("mutating-admission", "deny", error.message)
            raise
        self._report(scope, "mutating-admission", ran + scope.ran)
        scope.ran.clear()
        return a.object

    async def _mutating_pass(
        self, a: Attributes, scope: Scope, ran: list[str], *, reinvocation: bool
    ) -> Attributes:
        # The object is the registry's own (decoded from the body or the store for this write), and
        # upstream's built-in plugins change it in place: the patches are applied to it, not to a
        # copy each. Unless a webhook kept the object it saw, to reinvoke itself if it changes.
        in_place = not scope.seen_by_reinvocable
        for plugin in self._mutators:
            if not plugin.handles(a):
                continue
            try:
                patch = await plugin.admit(a, self.cluster, scope)
            except errors.StatusError as error:
                self.tracer.step(scope, plugin.name, "mutating", "deny", detail=error.message)
                raise
            ran.append(plugin.name)
            if patch and a.object is not None:
                a = a.with_objects(apply_patch(a.object, patch, plugin.name, in_place=in_place), a.old_object)
            self.tracer.step(scope, plugin.name, "mutating", "pass", patch=patch)
        if self.mutating_webhooks is not None:
            patched = await self.mutating_webhooks.admit(a, self.cluster, scope, reinvocation=reinvocation)
            if patched is not None:
                a = a.with_objects(patched, a.old_object)
        return a

    @staticmethod
    def _needs_reinvocation(a: Attributes, scope: Scope) -> bool:
        """Whether an IfNeeded webhook saw an object that something after it changed."""
        return any(seen != a.object for seen in scope.seen_by_reinvocable.values())

    # -- validating ------------------------------------------------------------------------------

    async def validate(self, a: Attributes, scope: Scope) -> None:
        ran: list[str] = []
        try:
            await self._validate_with(self._validators, a, scope, ran)
            if self.validating_webhooks is not None:
                await self.validating_webhooks.validate(a, self.cluster, scope)
            await self._validate_with(self._late_validators, a, scope, ran)
        except errors.StatusError as error:
            scope.report("validating-admission", "deny", error.message)
            raise
        self._report(scope, "validating-admission", ran + scope.ran)
        scope.ran.clear()

    async def _validate_with(
        self, plugins: Sequence[Plugin], a: Attributes, scope: Scope, ran: list[str]
    ) -> None:
        for plugin in plugins:
            if not plugin.handles(a):
                continue
            try:
                await plugin.validate(a, self.cluster, scope)
            except errors.StatusError as error:
                self.tracer.step(scope, plugin.name, "validating", "deny", detail=error.message)
                raise
            ran.append(plugin.name)
            self.tracer.step(scope, plugin.name, "validating", "pass")

    @staticmethod
    def _report(scope: Scope, stage: str, ran: list[str]) -> None:
        detail = ", ".join(dict.fromkeys(ran)) if ran else "no plugin applies"
        scope.report(stage, "pass", detail)


__all__ = ["Chain", "ClusterView", "Plugin", "Scope", "Tracer", "WebhookPhase", "apply_patch"]
