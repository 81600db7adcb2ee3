"""The sandbox service: a student's own cluster, made on first use, woken, reset, and their kubeconfig.

Every function takes keyword arguments and returns plain values (the HackSoft styleguide's services);
the lab is reached only through ``courses.gateway``. What happens on a student's first chapter:

1. their ``Sandbox`` row is made (``sb-<account id>``; two tabs at once make one row);
2. the cluster is made in the running lab with a sandbox's profile (three nodes, classroom timing,
   the guardrails' admission plugin), or woken if it hibernates, or left alone if it runs;
3. their token is looked up or issued (``gateway.kept_token``: kept in the cluster's directory, see
   why there), and the sandbox is given its RBAC and flow-control objects (``bootstrap.py``) once per
   cluster made, by the lab's own identity through the API server.

All of that happens under one lock per sandbox, so that two requests at the same moment (two tabs, a
page and its socket) share one start and one set-up. ``SandboxAccess`` is what the rest of the web
app acts with: the cluster's name, the student's cluster user, and their token.

A reset (``reset_sandbox``) stops the cluster, deletes its data (its store and every identity: old
kubeconfigs stop working) and makes it anew, empty; progress lives in the database and is kept. The
faults in force on it end first, as when it hibernates (the lab's stop hook, docs/faults.md).
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db.models import F
from django.utils.translation import gettext

from courses import gateway
from courses.sandboxes import bootstrap, kubeconfig
from courses.sandboxes.identities import CHECKER, sandbox_name, student_user
from courses.sandboxes.models import Sandbox

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser


@dataclass(frozen=True)
class SandboxAccess:
    """How the web app acts in a student's sandbox: as them, with their token."""

    cluster: str
    #: ``student:<username>``: the cluster user the token stands for.
    user: str
    #: The student's bearer token: kept out of ``repr``, so no log line or error report shows it.
    token: str = field(repr=False)
    #: Their requests' default namespace: ``default`` in a sandbox, their own in a classroom's shared
    #: cluster (``courses.classrooms.shared``).
    namespace: str = "default"


class SandboxUnavailable(Exception):
    """The sandbox cannot be reached now; the message says why, in words for the student."""


#: One lock per sandbox (by cluster name), held while it is made, woken, reset or set up. Weak: a
#: lock nobody holds or waits for goes, so no lock outlives the event loop it was used on.
_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
#: What has been applied to which cluster made (``ClusterFacts.incarnation``), and which objects:
#: ``"checker"`` or ``"sandbox"``. A cluster made anew has another incarnation and is set up again.
_set_up: set[tuple[int, str]] = set()


def _lock(cluster: str) -> asyncio.Lock:
    lock = _locks.get(cluster)
    if lock is None:
        lock = _locks[cluster] = asyncio.Lock()
    return lock


def _unavailable(error: Exception) -> SandboxUnavailable:
    """The student's words for a gateway error."""
    if isinstance(error, gateway.NotServedHere):
        text = gettext("The lab is not running in this server process, so your cluster cannot start here.")
    elif isinstance(error, gateway.NotRunning):
        text = gettext("Your cluster could not start (it is %(state)s). Try again, or reset it.") % {
            "state": error.state
        }
    else:
        text = gettext("Your cluster could not be set up: %(error)s") % {"error": error}
    return SandboxUnavailable(text)


async def _row(user: AbstractBaseUser) -> Sandbox:
    """The user's Sandbox row, made on first use (two requests at once make one)."""
    if user.pk is None:
        raise SandboxUnavailable(gettext("Sign in to get a cluster of your own."))
    name = sandbox_name(user_id=user.pk)
    row, _ = await Sandbox.objects.aget_or_create(user=user, defaults={"cluster": name})
    return row


async def _set_up_once(facts: gateway.ClusterFacts, what: str, objects: list[dict[str, Any]]) -> None:
    if (facts.incarnation, what) in _set_up:
        return
    await gateway.apply_as_lab(cluster=facts.name, objects=objects)
    _set_up.add((facts.incarnation, what))


async def _ready(row: Sandbox, user: AbstractBaseUser, *, remake: bool = False) -> SandboxAccess:
    """Make (or remake), wake and set up the row's cluster; the student's access. Under the lock."""
    student = student_user(username=user.get_username())
    try:
        if remake:
            facts = await gateway.recreate_cluster(cluster=row.cluster)
        else:
            facts = await gateway.ensure_cluster(cluster=row.cluster)
        await _set_up_once(facts, "sandbox", bootstrap.sandbox_objects(student=student))
        token = await gateway.kept_token(cluster=row.cluster, user=student)
    except (gateway.NotServedHere, gateway.NotRunning, gateway.ApplyFailed) as error:
        raise _unavailable(error) from error
    gateway.touch(cluster=row.cluster)
    return SandboxAccess(cluster=row.cluster, user=student, token=token)


async def ensure_sandbox(*, user: AbstractBaseUser) -> SandboxAccess:
    """The student's sandbox, running and set up; made on first use, woken if it hibernates.

    Returns once its API server serves (its nodes register a moment later). Raises
    ``SandboxUnavailable`` with a message for the student.
    """
    row = await _row(user)
    async with _lock(row.cluster):
        return await _ready(row, user)


async def sandbox_access(*, user: AbstractBaseUser) -> SandboxAccess | None:
    """The student's sandbox if they have one in the lab here (woken if it hibernates); None if they
    have none yet. Never makes one."""
    if user.pk is None:
        return None
    row = await Sandbox.objects.filter(user_id=user.pk).afirst()
    if row is None:
        return None
    try:
        gateway.cluster_facts(cluster=row.cluster)
    except gateway.NotServedHere:
        return None
    async with _lock(row.cluster):
        return await _ready(row, user)


async def checker_token(*, cluster: str) -> str:
    """A token of the read-only checker (``kubelab:checker``: get, list and watch on everything) in
    the running cluster, which is woken if it hibernates; the checker's RBAC is made if missing."""
    try:
        gateway.cluster_facts(cluster=cluster)  # never makes a cluster that is not there
        async with _lock(cluster):
            facts = await gateway.ensure_cluster(cluster=cluster)
            await _set_up_once(facts, "checker", bootstrap.checker_objects())
        return await gateway.kept_token(cluster=cluster, user=CHECKER)
    except (gateway.NotServedHere, gateway.NotRunning, gateway.ApplyFailed) as error:
        raise _unavailable(error) from error


async def reset_sandbox(*, user: AbstractBaseUser) -> SandboxAccess:
    """Make the student's sandbox anew, empty: every object and every token of the old one is gone
    (a downloaded kubeconfig stops working). Their progress is kept. Raises ``SandboxUnavailable``."""
    row = await _row(user)
    async with _lock(row.cluster):
        access = await _ready(row, user, remake=True)
    await Sandbox.objects.filter(pk=row.pk).aupdate(resets=F("resets") + 1)
    return access


async def kubeconfig_for(*, user: AbstractBaseUser, server: str | None = None) -> bytes:
    """A kubeconfig with which kubectl drives the student's sandbox as them (their own token).

    ``server`` is the API port as the student's kubectl reaches it (``https://lab.example.org:6443``);
    None: where the lab here serves it (``runlab --api``), else ``KUBELAB_API_ADDRESS``, as
    ``manage.py kubeconfig`` does. Raises ``SandboxUnavailable``; ``ValueError`` for a ``server`` that
    is not an ``https://`` URL.
    """
    return await kubeconfig_of(access=await ensure_sandbox(user=user), server=server)


async def kubeconfig_of(*, access: SandboxAccess, server: str | None = None) -> bytes:
    """The kubeconfig of ``access`` (``server`` as in ``kubeconfig_for``); a namespace other than
    ``default`` is the context's namespace, so kubectl sends its requests there unless told."""
    try:
        endpoint = gateway.api_endpoint(cluster=access.cluster)
    except (gateway.NotServedHere, gateway.NotRunning) as error:
        raise _unavailable(error) from error
    if server is None:
        host, port = endpoint.address or kubeconfig.parse_address(settings.KUBELAB_API_ADDRESS)
        server = kubeconfig.https_base(host, port)
    return kubeconfig.kubeconfig_yaml(
        cluster=access.cluster,
        server=kubeconfig.server_url(server, access.cluster),
        ca_pem=endpoint.ca_pem,
        user=access.user,
        token=access.token,
        namespace=None if access.namespace == "default" else access.namespace,
    )


def touch(*, cluster: str) -> None:
    """Someone uses the sandbox now (a page, a socket): it does not hibernate for a while. Cheap."""
    gateway.touch(cluster=cluster)


__all__ = [
    "SandboxAccess",
    "SandboxUnavailable",
    "checker_token",
    "ensure_sandbox",
    "kubeconfig_for",
    "kubeconfig_of",
    "reset_sandbox",
    "sandbox_access",
    "touch",
]
