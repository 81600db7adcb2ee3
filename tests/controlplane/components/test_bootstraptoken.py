"""kubeadm's bootstrap-token phase: which existing token it keeps using, and its three bindings.

Upstream: kubeadm cmd/kubeadm/app/phases/bootstraptoken/node/tlsbootstrap.go.
"""

from __future__ import annotations

from controlplane.api import bootstraptoken
from controlplane.api.bootstraptoken import BootstrapToken
from controlplane.components.bootstraptoken import MIN_REMAINING, pick_token, tls_bootstrap_bindings

NOW = 1_767_225_600.0


def test_the_bindings_let_the_tokens_group_ask_and_the_nodes_renew() -> None:
    found = {
        b["metadata"]["name"]: (b["roleRef"]["name"], [s["name"] for s in b["subjects"]])
        for b in tls_bootstrap_bindings()
    }
    group = "system:bootstrappers:kubeadm:default-node-token"
    assert found == {
        "kubeadm:kubelet-bootstrap": ("system:node-bootstrapper", [group]),
        "kubeadm:node-autoapprove-bootstrap": (
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            [group],
        ),
        "kubeadm:node-autoapprove-certificate-rotation": (
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            ["system:nodes"],
        ),
    }


def test_a_token_is_reused_only_while_it_stays_good_for_a_while() -> None:
    soon = BootstrapToken("soonxx", "0123456789abcdef")
    later = BootstrapToken("laterx", "0123456789abcdef")
    other_group = BootstrapToken("others", "0123456789abcdef")
    secrets = [
        bootstraptoken.token_secret(soon, expiration=NOW + MIN_REMAINING - 1),
        bootstraptoken.token_secret(later, expiration=NOW + 2 * MIN_REMAINING),
        bootstraptoken.token_secret(other_group, expiration=None, groups=["system:bootstrappers:other"]),
    ]
    assert pick_token(secrets, NOW) == (later, NOW + 2 * MIN_REMAINING)
    assert pick_token(secrets[:1], NOW) is None, "about to expire: a new one is made"
    assert pick_token(secrets[2:], NOW) is None, "not kubeadm's node token"
