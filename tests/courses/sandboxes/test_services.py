"""The sandbox service against a real lab: a student's cluster, their identity in it, the checker's,
the guardrails they meet, their kubeconfig, and a reset that empties the cluster and keeps progress."""

from __future__ import annotations

import asyncio
import base64
import io
from typing import Any

import httpx
import pytest
import yaml
from django.contrib.auth.models import User
from django.core.management import call_command

from courses import gateway
from courses.progress.models import StepProgress
from courses.sandboxes import bootstrap, services
from courses.sandboxes.identities import CHECKER, sandbox_name
from courses.sandboxes.models import Sandbox
from tests.courses.sandboxes.conftest import LabFactory

pytestmark = pytest.mark.django_db(transaction=True)

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


async def whoami(cluster: str, token: str) -> httpx.Response:
    """What ``kubectl auth whoami`` asks: a SelfSubjectReview."""
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    async with gateway.api_client(cluster=cluster, token=token) as client:
        return await client.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", json=review)


async def create(cluster: str, token: str, obj: dict[str, Any], path: str = CONFIGMAPS) -> httpx.Response:
    async with gateway.api_client(cluster=cluster, token=token) as client:
        return await client.post(path, json=obj)


async def test_a_students_sandbox_is_their_own_cluster(sandbox_lab: LabFactory) -> None:
    alice = await User.objects.acreate_user("alice", password="pw-alice-1")
    bob = await User.objects.acreate_user("bob", password="pw-bob-1")
    async with sandbox_lab() as lab:
        assert await services.sandbox_access(user=alice) is None  # nothing made by asking

        # Two tabs open the first chapter at once: one cluster, one row, one token.
        first, second = await asyncio.gather(
            services.ensure_sandbox(user=alice), services.ensure_sandbox(user=alice)
        )
        assert first == second
        assert first.cluster == sandbox_name(user_id=alice.pk) == f"sb-{alice.pk}"
        assert first.user == "student:alice"
        assert lab.names() == [first.cluster]
        assert await Sandbox.objects.filter(user=alice).acount() == 1
        facts = gateway.cluster_facts(cluster=first.cluster)
        assert (facts.state, facts.timing, facts.nodes) == ("running", "classroom", 3)
        assert await services.sandbox_access(user=alice) == first
        cluster = first.cluster

        # kubectl auth whoami says student:alice, and she may create what she likes: RBAC names the
        # binding that allows it.
        me = await whoami(cluster, first.token)
        assert me.json()["status"]["userInfo"]["username"] == "student:alice"
        with gateway.subscribe_trace(cluster=cluster) as trace:
            created = await create(cluster, first.token, configmap("hello"))
            events = trace.drain().events
        assert created.status_code == 201, created.text
        decisions = [e for e in events if e["type"] == "rbac.decision" and e.get("resource") == "configmaps"]
        assert [(d["user"], d["allowed"], d["binding"]) for d in decisions] == [
            ("student:alice", True, 'ClusterRoleBinding "kubelab:sandbox-owner"')
        ]

        # The checker reads everything and writes nothing.
        checker = await services.checker_token(cluster=cluster)
        assert checker == await services.checker_token(cluster=cluster)  # kept, not issued anew
        assert (await whoami(cluster, checker)).json()["status"]["userInfo"]["username"] == CHECKER
        async with gateway.api_client(cluster=cluster, token=checker) as client:
            listed = await client.get(CONFIGMAPS)
            assert [i["metadata"]["name"] for i in listed.json()["items"]] == ["hello"]
            assert (await client.get("/api/v1/secrets")).status_code == 200
            refused = await client.post(CONFIGMAPS, json=configmap("by-checker"))
        assert refused.status_code == 403
        assert 'User "kubelab:checker" cannot create resource "configmaps"' in refused.json()["message"]

        # Bob's own token means nothing in Alice's cluster, and even an identity student:bob made
        # in it has no rights there.
        bobs = await services.ensure_sandbox(user=bob)
        assert bobs.cluster != cluster and bobs.token != first.token
        assert (await create(cluster, bobs.token, configmap("by-bob"))).status_code == 401
        bob_in_alices = await gateway.kept_token(cluster=cluster, user="student:bob")
        assert (await create(cluster, bob_in_alices, configmap("by-bob"))).status_code == 403

        # Her requests go to her own FlowSchema (and so her own priority level).
        async with gateway.api_client(cluster=cluster, token=checker) as client:
            schema = (
                await client.get(
                    f"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/{bootstrap.STUDENT_FLOW}"
                )
            ).json()
        async with gateway.api_client(cluster=cluster, token=first.token) as client:
            answered = await client.get(CONFIGMAPS)
        assert answered.headers["X-Kubernetes-PF-FlowSchema-UID"] == schema["metadata"]["uid"]

        # She is admin, but the guardrails' objects and the nodes are not hers to change.
        async with gateway.api_client(cluster=cluster, token=first.token) as client:
            unbound = await client.delete(
                f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{bootstrap.OWNER_BINDING}"
            )
            node = await client.post(
                "/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "extra"}}
            )
            huge = await client.post(
                CONFIGMAPS,
                content=b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"huge"},"data":{"k":"'
                + b"x" * (3 * 1024 * 1024)
                + b'"}}',
                headers={"Content-Type": "application/json"},
            )
        assert unbound.status_code == 403
        assert "keeps this sandbox's guardrails" in unbound.json()["message"]
        assert node.status_code == 403
        assert node.json()["message"] == (
            'nodes "extra" is forbidden: the nodes of a sandbox are fixed: only a node registers its own '
            "Node (SandboxGuardrails)"
        )
        assert huge.status_code == 413  # upstream's 3 MiB limit on a request body
        assert huge.json()["reason"] == "RequestEntityTooLarge"


async def test_the_object_limit_says_why_it_refuses(sandbox_lab: LabFactory) -> None:
    carol = await User.objects.acreate_user("carol", password="pw-carol-1")
    async with sandbox_lab(max_objects=260) as lab:
        access = await services.ensure_sandbox(user=carol)
        server = lab.cluster(access.cluster).apiserver
        assert server is not None
        held = sum(len(c.objects) for c in server.caches.values() if c.rtype.conversion is None)
        assert held < 260, "a fresh sandbox must leave room under the test's limit"
        refused: httpx.Response | None = None
        async with gateway.api_client(cluster=access.cluster, token=access.token) as client:
            for i in range(300):
                answer = await client.post(CONFIGMAPS, json=configmap(f"cm-{i}"))
                if answer.status_code != 201:
                    refused = answer
                    break
                # The count is read from the watch caches: let them see this write before the next.
                revision = int(answer.json()["metadata"]["resourceVersion"])
                await server.caches["/registry/configmaps"].wait_for(revision, 5.0)
        assert refused is not None and refused.status_code == 403, "the limit was never reached"
        assert refused.json()["message"] == (
            f'configmaps "cm-{i}" is forbidden: this sandbox already holds 260 objects, its limit is 260 '
            "(KUBELAB_SANDBOX_MAX_OBJECTS): delete some, or reset the sandbox, before creating more"
        )
        assert i == 260 - held  # every object counted, of every kind


async def test_a_runaway_loop_is_throttled_with_retry_after(sandbox_lab: LabFactory) -> None:
    dave = await User.objects.acreate_user("dave", password="pw-dave-1")
    async with sandbox_lab():
        access = await services.ensure_sandbox(user=dave)
        # Writes wait for the store's commit, so these are in flight together, as a loop of
        # ``kubectl create &`` would be.
        async with gateway.api_client(cluster=access.cluster, token=access.token) as client:
            answers = await asyncio.gather(
                *(client.post(CONFIGMAPS, json=configmap(f"loop-{i}")) for i in range(80))
            )
        codes = [a.status_code for a in answers]
        assert set(codes) <= {201, 429}
        throttled = [a for a in answers if a.status_code == 429]
        assert throttled, f"80 requests at once in 3 seats and a queue of 20 were all served: {codes}"
        assert all(a.headers.get("Retry-After") for a in throttled)


async def test_a_kubeconfig_carries_the_students_own_token(sandbox_lab: LabFactory) -> None:
    erin = await User.objects.acreate_user("erin", password="pw-erin-1")
    async with sandbox_lab() as lab:
        access = await services.ensure_sandbox(user=erin)
        document = yaml.safe_load(await services.kubeconfig_for(user=erin))
        cluster = document["clusters"][0]
        assert cluster["name"] == access.cluster
        assert cluster["cluster"]["server"] == f"https://127.0.0.1:6443/clusters/{access.cluster}"
        ca = base64.b64decode(cluster["cluster"]["certificate-authority-data"])
        assert ca == lab.cluster(access.cluster).root_ca
        assert document["users"][0]["user"] == {"token": access.token}
        assert document["current-context"] == f"student:erin@{access.cluster}"
        elsewhere = yaml.safe_load(
            await services.kubeconfig_for(user=erin, server="https://lab.example.org:7443")
        )
        assert elsewhere["clusters"][0]["cluster"]["server"] == (
            f"https://lab.example.org:7443/clusters/{access.cluster}"
        )
        with pytest.raises(ValueError, match="https"):
            await services.kubeconfig_for(user=erin, server="http://lab.example.org")

        # Staff make one with manage.py kubeconfig, as for any cluster, for the student or an admin.
        out = io.StringIO()
        call_command(
            "kubeconfig",
            "--cluster",
            access.cluster,
            "--user",
            access.user,
            "--data-dir",
            str(lab.data_dir),
            stdout=out,
        )
        staffs = yaml.safe_load(out.getvalue())["users"][0]["user"]["token"]
        assert (await whoami(access.cluster, staffs)).json()["status"]["userInfo"][
            "username"
        ] == "student:erin"


async def test_a_reset_empties_the_sandbox_and_keeps_progress(sandbox_lab: LabFactory) -> None:
    frank = await User.objects.acreate_user("frank", password="pw-frank-1")
    async with sandbox_lab() as lab:
        before = await services.ensure_sandbox(user=frank)
        assert (await create(before.cluster, before.token, configmap("mine"))).status_code == 201
        await StepProgress.objects.acreate(user=frank, course="k8s", chapter="hub", step="one")
        old_ca = lab.cluster(before.cluster).pki.ca.certificate_pem

        after = await services.reset_sandbox(user=frank)

        assert after.cluster == before.cluster and after.user == before.user
        assert after.token != before.token
        assert lab.cluster(after.cluster).pki.ca.certificate_pem != old_ca  # identities made anew
        assert (await create(after.cluster, before.token, configmap("again"))).status_code == 401
        async with gateway.api_client(cluster=after.cluster, token=after.token) as client:
            assert (await client.get(f"{CONFIGMAPS}/mine")).status_code == 404
        # Set up again: the new cluster knows her as its admin, and its checker.
        assert (await whoami(after.cluster, after.token)).json()["status"]["userInfo"]["username"] == (
            "student:frank"
        )
        assert (await create(after.cluster, after.token, configmap("again"))).status_code == 201
        checker = await services.checker_token(cluster=after.cluster)
        async with gateway.api_client(cluster=after.cluster, token=checker) as client:
            assert (await client.get(CONFIGMAPS)).status_code == 200
        assert await StepProgress.objects.filter(user=frank).acount() == 1
        assert (await Sandbox.objects.aget(user=frank)).resets == 1


async def test_without_a_lab_here_the_student_is_told_so(settings: Any) -> None:
    from controlplane.runtime import activate

    activate(None)
    grace = await User.objects.acreate_user("grace", password="pw-grace-1")
    with pytest.raises(services.SandboxUnavailable, match="not running in this server process"):
        await services.ensure_sandbox(user=grace)
    assert await services.sandbox_access(user=grace) is None
