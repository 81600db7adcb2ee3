"""ClusterRole aggregation: ``admin``, ``edit`` and ``view`` gather their rules from labelled roles.

A ClusterRole with an ``aggregationRule`` has no rules of its own: its rules are the union of the rules
of every *other* ClusterRole matched by one of its ``clusterRoleSelectors``. ``view`` selects roles
labelled ``rbac.authorization.k8s.io/aggregate-to-view: "true"``; ``view`` itself is labelled
``aggregate-to-edit``, so ``edit`` has everything ``view`` has, and so on up to ``admin``. Label a
ClusterRole of your own ``aggregate-to-view: "true"`` and everyone bound to ``view`` gets its rules.

Upstream, kube-controller-manager's **clusterrole-aggregation controller** does this (``pkg/controller/
clusterroleaggregation``): on any ClusterRole change it recomputes every aggregated role, the matched
roles taken in name order, each rule added once, and writes the result if it differs.

**Kubelab simplification:** the API server runs that loop itself (:class:`Aggregator`, started with
the bootstrap policy), over its own ClusterRole watch cache, and writes through its registry as a
privileged loopback client would. The rules are still stored, so ``kubectl get clusterrole view -o
yaml`` shows them, and the effect is the same; it just does not need a controller manager to run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.api import selectors
from controlplane.apiserver import errors
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.requestscope import RequestScope
from controlplane.apiserver.watchcache import WatchCache
from controlplane.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

Object = Mapping[str, Any]


def _name(role: Object) -> str:
    return str((role.get("metadata") or {}).get("name") or "")


def _selectors(role: Object) -> list[selectors.LabelSelector]:
    rule = role.get("aggregationRule")
    if not isinstance(rule, Mapping):
        return []
    found = []
    for selector in rule.get("clusterRoleSelectors") or []:
        if isinstance(selector, Mapping):
            with contextlib.suppress(selectors.SelectorError):  # validation refused it already
                found.append(selectors.label_selector_from_object(selector))
    return found


def aggregated_rules(role: Object, cluster_roles: Sequence[Object]) -> list[dict[str, Any]] | None:
    """The rules ``role`` should have, or None if it aggregates nothing (no ``aggregationRule``)."""
    chosen = _selectors(role)
    if not chosen and not isinstance(role.get("aggregationRule"), Mapping):
        return None
    rules: list[dict[str, Any]] = []
    by_name = sorted(cluster_roles, key=_name)
    for selector in chosen:
        for other in by_name:
            if _name(other) == _name(role):
                continue
            if not selector.matches((other.get("metadata") or {}).get("labels") or {}):
                continue
            for rule in other.get("rules") or []:
                if isinstance(rule, Mapping) and rule not in rules:
                    rules.append(dict(rule))
    return rules


def stale_roles(cluster_roles: Sequence[Object]) -> dict[str, list[dict[str, Any]]]:
    """The aggregated roles whose stored rules differ from what they aggregate, with their new rules.

    Aggregation chains (``view`` is aggregated into ``edit``, ``edit`` into ``admin``), so the rules
    are recomputed until nothing changes: the controller would get there in several rounds of writes.
    """
    current = {_name(role): dict(role) for role in cluster_roles}
    for _ in range(len(current) + 1):
        changed = False
        for name, role in current.items():
            rules = aggregated_rules(role, list(current.values()))
            if rules is not None and rules != list(role.get("rules") or []):
                current[name] = dict(role, rules=rules)
                changed = True
        if not changed:
            break
    return {
        _name(role): list(current[_name(role)].get("rules") or [])
        for role in cluster_roles
        if current[_name(role)].get("rules") != role.get("rules")
        and list(current[_name(role)].get("rules") or []) != list(role.get("rules") or [])
    }


#: The aggregation's writes: the API server's own (upstream's controller-manager writes them through
#: its loopback client as system:masters; here the server writes in-process), not a request's.
AGGREGATION_SCOPE = RequestScope.unadmitted(reason="clusterrole-aggregation: the server fills in rules")


class Aggregator:
    """The aggregation loop over the API server's ClusterRole cache (see the module docstring)."""

    def __init__(self, cache: WatchCache, registry: Registry) -> None:
        self.cache = cache
        self.registry = registry
        self._task: asyncio.Task[None] | None = None

    async def sync(self) -> None:
        """Bring every aggregated role up to date once."""
        roles = [cached.obj for cached in self.cache.list(None, None)]
        for name, rules in stale_roles(roles).items():

            def mutate(current: dict[str, Any], rules: list[dict[str, Any]] = rules) -> dict[str, Any]:
                current["rules"] = rules
                return current

            try:
                await self.registry.update("", name, mutate, scope=AGGREGATION_SCOPE)
            except errors.StatusError as error:  # deleted meanwhile, or a conflict: the next change retries
                logger.info("aggregating ClusterRole %s: %s", name, error.message)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="clusterrole-aggregation")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def _run(self) -> None:
        watcher = self.cache.watch(None, None, self.cache.revision)
        try:
            while True:
                await self._sync_logged()
                await watcher.take()
                if watcher.closed_reason is not None:  # the cache re-listed: watch again
                    self.cache.forget(watcher)
                    watcher = self.cache.watch(None, None, self.cache.revision)
        finally:
            self.cache.forget(watcher)

    async def _sync_logged(self) -> None:
        """``sync``, surviving a failing store (the next ClusterRole change tries again)."""
        try:
            await self.sync()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("aggregating ClusterRoles failed")


__all__ = ["Aggregator", "aggregated_rules", "stale_roles"]
