"""Admission: plugins that may change (mutating) or refuse (validating) a write after authorization.

Authorization answers "may this user create pods in this namespace?"; admission answers "may *this*
pod be created, and does it need anything filled in?". It runs inside the handler, once the body is
decoded (apiserver ``pkg/admission``; the plugins are kube-apiserver's ``plugin/pkg/admission``)::

    decode -> mutating admission -> object validation -> validating admission -> storage

The built-in plugins, in upstream's order (``pkg/kubeapiserver/options/plugins.go``), one module each:

- ``namespacelifecycle``: no new objects in a missing or terminating namespace; ``default``,
  ``kube-system`` and ``kube-public`` cannot be deleted;
- ``limitranger``: default requests and limits from LimitRange objects, then their min and max;
- ``serviceaccount``: every pod runs as a ServiceAccount (``default`` unless it says otherwise) and
  gets the projected ``kube-api-access-*`` token volume mounted in each container;
- ``noderestriction``: a kubelet (``system:node:<n>``) may change only its own Node and its pods;
- ``podsecurity``: the Pod Security Standards, chosen per namespace by labels;
- ``defaulttolerationseconds``: pods tolerate ``not-ready`` and ``unreachable`` nodes for 300 s;
- ``secretspolicy``: Kubelab's own, for the Secrets chapter (not an upstream plugin);
- ``mutatingwebhook`` / ``validatingwebhook``: your own plugins, as HTTPS servers
  (``MutatingWebhookConfiguration``, ``ValidatingWebhookConfiguration``);
- ``resourcequota``: what a namespace may use in all, from ResourceQuota objects (last, after the
  webhooks, so that it counts the final object).

**How the request reaches the plugins.** The registry (``registry.py``) knows *when* to admit (after
defaulting, around validation), but not *who* asks: it is called with an object, not a request. The
request handler knows who asks. So, as ``pipeline.py`` does for the trace reporter, the server puts the
request's admission attributes (user, resource, subresource, namespace, name, dry run) and the
cluster's chain in a context variable (``admitting``) around the handler; the registry calls
``await mutate(...)``, ``await validate(...)`` and ``await admit_delete(...)`` with the operation and
the objects, and these find the rest there. A write the API server makes on its own (creating the
system namespaces at start) has no request, and no admission, as upstream's internal writes to
storage have none; ``suspended`` marks the writes a handler makes *within* a request that upstream
does not admit again (the pod deleted by an eviction, which was admitted as ``pods/eviction``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from controlplane.apiserver.admission.attributes import (
    CREATE,
    DELETE,
    UPDATE,
    Attributes,
    Object,
)
from controlplane.apiserver.admission.chain import Chain, Scope


@dataclass(slots=True)
class _Current:
    chain: Chain
    base: Attributes
    scope: Scope


_current: ContextVar[_Current | None] = ContextVar("admission", default=None)


@contextlib.contextmanager
def admitting(chain: Chain, base: Attributes) -> Iterator[Scope]:
    """Admit the writes of the body as the request ``base`` describes; yields its ``Scope``."""
    scope = Scope()
    token = _current.set(_Current(chain, base, scope))
    try:
        yield scope
    finally:
        _current.reset(token)


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Writes in the body are not admitted (see the module docstring)."""
    token = _current.set(None)
    try:
        yield
    finally:
        _current.reset(token)


def current() -> Attributes | None:
    """The attributes of the request being admitted, if any."""
    state = _current.get()
    return None if state is None else state.base


async def mutate(operation: str, obj: Object, old: Object | None) -> Object:
    """The mutating phase for a CREATE or UPDATE: ``obj`` as the plugins and webhooks changed it."""
    state = _current.get()
    if state is None:
        return obj
    patched = await state.chain.mutate(state.base.with_objects(obj, old, operation), state.scope)
    return obj if patched is None else patched


async def validate(operation: str, obj: Object, old: Object | None) -> None:
    """The validating phase for a CREATE or UPDATE; raises a StatusError to refuse."""
    state = _current.get()
    if state is None:
        return
    await state.chain.validate(state.base.with_objects(obj, old, operation), state.scope)


async def admit_delete(old: Object) -> None:
    """Both phases for a DELETE of ``old`` (one item of a deletecollection names itself)."""
    state = _current.get()
    if state is None:
        return
    base = state.base
    if not base.name:
        meta = old.get("metadata") or {}
        base = dataclasses.replace(base, name=str(meta.get("name") or ""))
    a = base.with_objects(None, old, DELETE)
    await state.chain.mutate(a, state.scope)
    await state.chain.validate(a, state.scope)


__all__ = [
    "CREATE",
    "DELETE",
    "UPDATE",
    "Attributes",
    "Chain",
    "Scope",
    "admit_delete",
    "admitting",
    "current",
    "mutate",
    "suspended",
    "validate",
]
