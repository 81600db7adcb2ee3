"""The diagram's node ids: the names the trace gives the boxes of the topology diagram.

Every trace event happens at, or travels between, the boxes of the diagram, and names them in its
``from`` and ``to`` fields. There is one box per part of the control plane:

==========================  =====================================================================
``apiserver``               the API server, the hub: every request and every watch goes through it
``etcd``                    the store behind it (whichever store the cluster really uses)
``scheduler``               kube-scheduler
``controller-manager``      kube-controller-manager, all its controllers in one box
``kubelet:<node>``          the kubelet of one node (``kubelet:node-1``)
``kube-proxy:<node>``       the kube-proxy of one node (``kube-proxy:node-1``)
``webhook:<name>``          an admission webhook's server, by the webhook's name
``user:<name>``             anyone else who calls the API server, by user name (``user:alice``);
                            ``user:anonymous`` sent credentials that were refused
==========================  =====================================================================

The API server only learns *who* sent a request (the user name authentication found), not which
box that is, so ``for_user`` draws the components' well-known users as their boxes and everyone else
as a ``user:`` box. Every kube-proxy authenticates as the same user; Kubelab's kube-proxies name their
node in their User-Agent, which tells them apart.

Every emitter builds its ids with these functions, so the browser can rely on one spelling.
"""

from __future__ import annotations

import re
from typing import Final

APISERVER: Final = "apiserver"
ETCD: Final = "etcd"
SCHEDULER: Final = "scheduler"
CONTROLLER_MANAGER: Final = "controller-manager"
#: Where a request comes from while nobody knows who sent it (its credentials were refused).
ANONYMOUS: Final = "user:anonymous"

#: The components' user names, as upstream spells them (``controlplane.identity`` has the same ones;
#: the trace is the lowest layer and may not import it, a test keeps the two equal).
KUBE_SCHEDULER_USER: Final = "system:kube-scheduler"
KUBE_CONTROLLER_MANAGER_USER: Final = "system:kube-controller-manager"
KUBE_PROXY_USER: Final = "system:kube-proxy"
NODE_USER_PREFIX: Final = "system:node:"
#: A bootstrap token's user is ``system:bootstrap:<token id>`` (``controlplane/api/bootstraptoken.py``).
BOOTSTRAP_USER_PREFIX: Final = "system:bootstrap:"

#: The ``(node/<name>)`` comment in a Kubelab kube-proxy's User-Agent.
_PROXY_NODE = re.compile(r"\(node/([^)\s]+)\)")

_COMPONENT_USERS: Final = {KUBE_SCHEDULER_USER: SCHEDULER, KUBE_CONTROLLER_MANAGER_USER: CONTROLLER_MANAGER}


def user(name: str) -> str:
    """``user:<name>``: a client that is not a component."""
    return f"user:{name}"


def kubelet(node: str) -> str:
    """``kubelet:<node>``: the kubelet of ``node``."""
    return f"kubelet:{node}"


def kube_proxy(node: str) -> str:
    """``kube-proxy:<node>``: the kube-proxy of ``node``; plain ``kube-proxy`` when its node is not
    known (a kube-proxy that did not say which node it runs on)."""
    return f"kube-proxy:{node}" if node else "kube-proxy"


def webhook(name: str) -> str:
    """``webhook:<name>``: the server of the admission webhook ``name``."""
    return f"webhook:{name}"


def for_user(username: str, user_agent: str = "") -> str:
    """The node a request from ``username`` comes from: components by role, people as ``user:<name>``.

    ``user_agent`` only matters for kube-proxies, which share one user: the node they run on is the
    ``(node/<name>)`` comment in their User-Agent.
    """
    component = _COMPONENT_USERS.get(username)
    if component is not None:
        return component
    if username.startswith(NODE_USER_PREFIX):
        return kubelet(username[len(NODE_USER_PREFIX) :])
    if username == KUBE_PROXY_USER:
        node = _PROXY_NODE.search(user_agent)
        return kube_proxy(node.group(1) if node else "")
    if username.startswith(BOOTSTRAP_USER_PREFIX) and user_agent.startswith("kubelet/"):
        # A joining node's kubelet, with kubeadm's bootstrap token: drawn as that kubelet, since
        # every joining node shares the token's user (components/kubelet/certificate.py).
        node = _PROXY_NODE.search(user_agent)
        if node:
            return kubelet(node.group(1))
    return user(username)


__all__ = [
    "ANONYMOUS",
    "APISERVER",
    "CONTROLLER_MANAGER",
    "ETCD",
    "KUBE_CONTROLLER_MANAGER_USER",
    "KUBE_PROXY_USER",
    "KUBE_SCHEDULER_USER",
    "NODE_USER_PREFIX",
    "SCHEDULER",
    "for_user",
    "kube_proxy",
    "kubelet",
    "user",
    "webhook",
]
