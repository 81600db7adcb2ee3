"""Health endpoints: ``/livez``, ``/readyz``, ``/healthz``, and one path per check under each.

A probe asks two different questions of an API server. ``GET /livez``: is this process alive, or
should it be restarted? ``GET /readyz``: may it be sent requests now? (``/healthz`` is their older,
deprecated predecessor and answers like ``/livez``.) Each endpoint runs a list of named **checks**
and answers ``200 ok`` when all pass; a failure is ``500`` with the list, so a load balancer takes the
server out while it starts (its caches not yet filled) or shuts down, and a kubelet restarts one
that stays dead.

What a person sees (apiserver ``pkg/server/healthz/healthz.go``, ``handleRootHealth``)::

    $ kubectl get --raw '/readyz?verbose'
    [+]ping ok
    [+]log ok
    [+]etcd ok
    [+]informer-sync ok
    [+]poststarthook/rbac/bootstrap-roles ok
    ...
    [+]shutdown ok
    readyz check passed

- Without ``verbose`` a passing answer is just ``ok``; a failing one is always verbose and ends with
  ``readyz check failed``. The reason of a failure is withheld (the root endpoints are public);
  ``/readyz/<check>`` (which needs authorization) answers ``internal server error: <reason>``.
- ``?exclude=<check>`` skips a check (``[+]etcd excluded: ok``); a name that matches none is
  reported as ``warn: some health checks cannot be excluded: no matches for "x"``.

Kubelab's checks are those of kube-apiserver that mean something here: ``ping`` and ``log`` always
pass; ``etcd`` reads a key from the cluster store (whatever its backend); the post-start hooks
are the steps of :meth:`APIServer.start`; ``/readyz`` adds ``informer-sync`` (the watch caches are
filled) and ``shutdown`` (the server is not stopping).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final

from controlplane.store import StoreError

#: How long the ``etcd`` check waits for the store (upstream's ``--etcd-healthcheck-timeout``).
STORE_TIMEOUT: Final = 2.0

#: The key the ``etcd`` check reads.
HEALTH_KEY: Final = "/registry/health"

ENDPOINTS: Final = ("healthz", "livez", "readyz")

Check = Callable[[], Awaitable[str | None]]
"""A health check: None when healthy, else why not."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: str


@dataclass(frozen=True)
class Named:
    name: str
    check: Check


async def run_all(endpoint: str, checks: Sequence[Named], *, verbose: bool, exclude: Sequence[str]) -> Answer:
    """The answer of ``/<endpoint>``: every check in order, as ``handleRootHealth`` writes it."""
    excluded = dict.fromkeys(exclude)
    lines: list[str] = []
    failed = False
    for named in checks:
        if named.name in excluded:
            del excluded[named.name]
            lines.append(f"[+]{named.name} excluded: ok\n")
            continue
        if await named.check() is None:
            lines.append(f"[+]{named.name} ok\n")
        else:
            lines.append(f"[-]{named.name} failed: reason withheld\n")
            failed = True
    if excluded:
        quoted = ",".join(f'"{name}"' for name in sorted(excluded))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}\n")
    if failed:  # always verbose on failure, written by Go's http.Error (a trailing newline)
        return Answer(500, "".join(lines) + f"{endpoint} check failed\n")
    if not verbose:
        return Answer(200, "ok")
    return Answer(200, "".join(lines) + f"{endpoint} check passed\n")


async def run_one(named: Named) -> Answer:
    """The answer of ``/<endpoint>/<check>`` (``adaptCheckToHandler``)."""
    reason = await named.check()
    if reason is None:
        return Answer(200, "ok")
    return Answer(500, f"internal server error: {reason}\n")


def store_check(get: Callable[[str], Awaitable[object]]) -> Check:
    """The ``etcd`` check: the store answers a read of ``/registry/health`` within :data:`STORE_TIMEOUT`.

    Upstream's check reads the same key (apiserver ``pkg/storage/storagebackend/factory/etcd3.go``,
    ``newETCD3Check``): whether it exists does not matter, only that the store answers.
    """

    async def check() -> str | None:
        try:
            await asyncio.wait_for(get(HEALTH_KEY), STORE_TIMEOUT)
        except TimeoutError:
            return "error getting data from etcd: context deadline exceeded"
        except (StoreError, OSError) as failure:  # closed, unreachable, its backend down
            return f"error getting data from etcd: {failure}"
        return None

    return check


def flag_check(is_set: Callable[[], bool], reason: str) -> Check:
    """A check that passes while ``is_set()`` is true."""

    async def check() -> str | None:
        return None if is_set() else reason

    return check


async def passing() -> str | None:
    return None
