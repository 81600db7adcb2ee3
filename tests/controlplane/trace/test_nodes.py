"""The diagram's node ids: one spelling for every emitter, and the API server's users drawn as boxes."""

from __future__ import annotations

from controlplane import identity
from controlplane.components.identities import component_identity
from controlplane.trace import nodes


def test_the_boxes_are_spelled_as_the_diagram_knows_them() -> None:
    assert (nodes.APISERVER, nodes.ETCD) == ("apiserver", "etcd")
    assert (nodes.SCHEDULER, nodes.CONTROLLER_MANAGER) == ("scheduler", "controller-manager")
    assert nodes.user("alice") == "user:alice"
    assert nodes.ANONYMOUS == "user:anonymous"
    assert nodes.kubelet("node-1") == "kubelet:node-1"
    assert nodes.kube_proxy("node-1") == "kube-proxy:node-1"
    assert nodes.kube_proxy("") == "kube-proxy"
    assert nodes.webhook("label.kubelab.example") == "webhook:label.kubelab.example"


def test_components_are_drawn_by_role_and_everyone_else_as_a_user() -> None:
    assert nodes.for_user("system:kube-scheduler") == nodes.SCHEDULER
    assert nodes.for_user("system:kube-controller-manager") == nodes.CONTROLLER_MANAGER
    assert nodes.for_user("system:node:worker-1") == "kubelet:worker-1"
    assert nodes.for_user("alice") == "user:alice"
    assert nodes.for_user("system:serviceaccount:default:app") == "user:system:serviceaccount:default:app"


def test_kube_proxies_share_a_user_and_are_told_apart_by_their_user_agent() -> None:
    agent = component_identity("kube-proxy", "worker-2").user_agent
    assert nodes.for_user("system:kube-proxy", agent) == "kube-proxy:worker-2"
    assert nodes.for_user("system:kube-proxy", "curl/8.0") == "kube-proxy"


def test_a_joining_kubelet_with_the_bootstrap_token_is_drawn_as_that_kubelet() -> None:
    agent = component_identity("kubelet", "worker-2").user_agent
    assert nodes.for_user("system:bootstrap:abcdef", agent) == "kubelet:worker-2"
    # Anyone else with a bootstrap token (kubectl --token) is a user.
    assert nodes.for_user("system:bootstrap:abcdef", "kubectl/v1.37.0") == "user:system:bootstrap:abcdef"


def test_the_user_names_are_the_identity_modules() -> None:
    # The trace may not import controlplane.identity (it is the lowest layer), so it spells them too.
    assert nodes.KUBE_SCHEDULER_USER == identity.KUBE_SCHEDULER
    assert nodes.KUBE_CONTROLLER_MANAGER_USER == identity.KUBE_CONTROLLER_MANAGER
    assert nodes.KUBE_PROXY_USER == identity.KUBE_PROXY
    assert nodes.NODE_USER_PREFIX == identity.NODE_USER_PREFIX


def test_every_component_is_traced_as_the_node_its_requests_come_from() -> None:
    for kind, node in (
        ("scheduler", ""),
        ("controller-manager", ""),
        ("kubelet", "n1"),
        ("kube-proxy", "n1"),
    ):
        component = component_identity(kind, node)
        assert nodes.for_user(component.user, component.user_agent) == component.trace_id
