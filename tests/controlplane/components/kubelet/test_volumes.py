"""Secret volumes: the kubelet reads a pod's Secrets as its node before the containers start; a
missing one holds the pod in ContainerCreating with FailedMount Warnings until it appears."""

from __future__ import annotations

from typing import Any

from controlplane.clock import ManualClock
from controlplane.components.kubelet.volumes import (
    SecretEnv,
    SecretVolume,
    env_problem,
    secret_env,
    secret_volumes,
)
from controlplane.timing import UPSTREAM
from tests.controlplane.components.kubelet.conftest import NODE, StartKubelet
from tests.support.inprocess import InProcessCluster, wait_for


def pod_mounting(name: str, secret: str, *, optional: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": NODE,
            "containers": [{"name": "app", "image": "nginx:1.27"}],
            "volumes": [{"name": "creds", "secret": {"secretName": secret, "optional": optional}}],
        },
    }


def test_secret_volumes_finds_secret_and_projected_sources_only() -> None:
    pod = {
        "spec": {
            "volumes": [
                {"name": "a", "secret": {"secretName": "one"}},
                {"name": "b", "configMap": {"name": "not-a-secret"}},
                {
                    "name": "c",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"path": "token"}},
                            {"secret": {"name": "two", "optional": True}},
                        ]
                    },
                },
                "not a volume",
            ]
        }
    }
    assert secret_volumes(pod) == [SecretVolume("a", "one", False), SecretVolume("c", "two", True)]
    assert secret_volumes({"spec": None}) == []


def _phase_is(name: str, phase: str) -> Any:
    return lambda items: any(
        p["metadata"]["name"] == name and p.get("status", {}).get("phase") == phase for p in items
    )


async def test_a_missing_secret_holds_the_pod_until_it_is_created(
    cluster: InProcessCluster, clock: ManualClock, start_kubelet: StartKubelet
) -> None:
    kubelet = await start_kubelet(timing=UPSTREAM)
    pods = cluster.resource("", "v1", "pods", "default")
    events = cluster.resource("", "v1", "events", "default")
    created = await pods.create(pod_mounting("web", "db"))
    warned = await wait_for(events, lambda items: any(e["reason"] == "FailedMount" for e in items))
    (event,) = [e for e in warned if e["reason"] == "FailedMount"]
    assert event["type"] == "Warning"
    assert event["message"] == 'MountVolume.SetUp failed for volume "creds" : secret "db" not found'
    worker = kubelet.workers[created["metadata"]["uid"]]
    assert worker.lifecycle.held, "no container starts while a Secret it mounts is missing"
    assert worker.mount_due == clock.now() + UPSTREAM.kubelet_pod_backoff

    secrets = cluster.resource("", "v1", "secrets", "default")
    await secrets.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}})
    await kubelet.sync_pods(clock.now(), only_due=True)
    assert worker.lifecycle.held, "the next attempt waits for the back-off, as upstream's pod worker"

    await clock.advance(UPSTREAM.kubelet_pod_backoff)
    await kubelet.sync_pods(clock.now(), only_due=True)
    assert not worker.lifecycle.held and worker.mount_due is None
    await clock.advance(60)  # the image pull and start
    await kubelet.sync_pods(clock.now(), full=True)
    await wait_for(pods, _phase_is("web", "Running"))


async def test_an_optional_secret_may_be_missing(
    cluster: InProcessCluster, clock: ManualClock, start_kubelet: StartKubelet
) -> None:
    kubelet = await start_kubelet(timing=UPSTREAM)
    pods = cluster.resource("", "v1", "pods", "default")
    created = await pods.create(pod_mounting("web", "absent", optional=True))
    await wait_for(pods, lambda items: bool(items) and "containerStatuses" in items[0].get("status", {}))
    assert not kubelet.workers[created["metadata"]["uid"]].lifecycle.held


def test_secret_env_finds_env_from_and_key_references_per_container() -> None:
    pod = {
        "spec": {
            "initContainers": [{"name": "init", "envFrom": [{"secretRef": {"name": "all"}}]}],
            "containers": [
                {
                    "name": "app",
                    "env": [
                        {"name": "A", "value": "plain"},
                        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
                        {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
                        {
                            "name": "D",
                            "valueFrom": {"secretKeyRef": {"name": "opt", "key": "k", "optional": True}},
                        },
                    ],
                },
                {"name": "plain"},
            ],
        }
    }
    assert secret_env(pod) == {
        "init": [SecretEnv("all", None, False)],
        "app": [SecretEnv("db", "password", False), SecretEnv("opt", "k", True)],
    }


def test_env_problem_words_as_the_kubelet() -> None:
    refs = [SecretEnv("db", "password", False), SecretEnv("opt", "k", True)]
    assert env_problem(refs, "default", {"db": None, "opt": None}) == 'secret "db" not found'
    assert env_problem(refs, "default", {"db": {"data": {}}, "opt": None}) == (
        "couldn't find key password in Secret default/db"
    )
    assert env_problem(refs, "default", {"db": {"data": {"password": "eA=="}}, "opt": {"data": {}}}) is None


def _container_state(pods: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (pod,) = [p for p in pods if p["metadata"]["name"] == name]
    statuses = pod.get("status", {}).get("containerStatuses") or [{}]
    state: dict[str, Any] = statuses[0].get("state") or {}
    return state


async def test_a_variable_from_a_missing_secret_stops_the_container_at_its_configuration(
    cluster: InProcessCluster, clock: ManualClock, start_kubelet: StartKubelet
) -> None:
    kubelet = await start_kubelet(timing=UPSTREAM)
    pods = cluster.resource("", "v1", "pods", "default")
    env = [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {
            "nodeName": NODE,
            "containers": [{"name": "app", "image": "nginx:1.27", "env": env}],
        },
    }
    await pods.create(pod)
    await clock.advance(60)  # past the image pull
    await kubelet.sync_pods(clock.now(), full=True)

    def waiting_for(message: str) -> Any:
        return lambda items: (
            _container_state(items, "web").get("waiting")
            == {
                "reason": "CreateContainerConfigError",
                "message": message,
            }
        )

    await wait_for(pods, waiting_for('secret "db" not found'))
    events = await wait_for(
        cluster.resource("", "v1", "events", "default"),
        lambda items: any(e["reason"] == "Failed" for e in items),
    )
    assert [e["message"] for e in events if e["reason"] == "Failed"] == ['Error: secret "db" not found']

    secrets = cluster.resource("", "v1", "secrets", "default")
    await secrets.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}})
    await clock.advance(UPSTREAM.kubelet_pod_backoff)
    await kubelet.sync_pods(clock.now(), only_due=True)
    await wait_for(pods, waiting_for("couldn't find key password in Secret default/db"))

    await secrets.patch("db", {"stringData": {"password": "s3cret"}})
    await clock.advance(UPSTREAM.kubelet_pod_backoff)
    await kubelet.sync_pods(clock.now(), only_due=True)
    await wait_for(pods, lambda items: "running" in _container_state(items, "web"))
