"""Quota usage: which resource each quota name counts, and what an object adds to it."""

from __future__ import annotations

from controlplane.api.quota import counted_resource, usage_of


def test_each_quota_name_counts_the_resource_upstreams_evaluators_do() -> None:
    assert counted_resource("pods") == ("", "pods")
    assert counted_resource("requests.memory") == ("", "pods")
    assert counted_resource("cpu") == ("", "pods")
    assert counted_resource("services.nodeports") == ("", "services")
    assert counted_resource("requests.storage") == ("", "persistentvolumeclaims")
    assert counted_resource("gold.storageclass.storage.k8s.io/requests.storage") == (
        "",
        "persistentvolumeclaims",
    )
    assert counted_resource("count/deployments.apps") == ("apps", "deployments")
    assert counted_resource("count/secrets") == ("", "secrets")
    assert counted_resource("example.com/gpus") is None
    assert counted_resource("count/") is None


def test_a_claim_counts_its_storage_in_all_and_in_its_class() -> None:
    claim = {"spec": {"storageClassName": "gold", "resources": {"requests": {"storage": "2Gi"}}}}
    usage = {name: str(amount) for name, amount in usage_of("", "persistentvolumeclaims", claim).items()}
    assert usage == {
        "count/persistentvolumeclaims": "1",
        "persistentvolumeclaims": "1",
        "requests.storage": "2Gi",
        "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
        "gold.storageclass.storage.k8s.io/requests.storage": "2Gi",
    }
