"""SecretsPolicy (Kubelab's own): pods mount only readable Secrets; Secrets carry an owner label."""

from __future__ import annotations

from typing import Any

from controlplane.apiserver.admission.clusterview import CachedCluster
from controlplane.apiserver.admission.secretspolicy import SecretsPolicyConfig
from controlplane.apiserver.admission.setup import AdmissionOptions
from controlplane.identity import UserInfo
from tests.controlplane.apiserver.admission.conftest import Factory, pod

OPTIONS = AdmissionOptions(plugins=()).with_secrets_policy(SecretsPolicyConfig())


async def only_public_secrets(
    user: UserInfo, verb: str, group: str, resource: str, namespace: str, name: str
) -> bool:
    return name.startswith("public-")


async def test_a_secret_without_an_owner_label_is_refused(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        secret: dict[str, Any] = {"metadata": {"name": "s"}, "stringData": {"k": "v"}}
        answer = await api.create("/api/v1/namespaces/default/secrets", secret)
        assert answer.status_code == 403
        assert answer.json()["message"] == (
            'secrets "s" is forbidden: every Secret must carry the label "owner" '
            "naming its owner (SecretsPolicy)"
        )
        secret["metadata"]["labels"] = {"owner": "alice"}
        assert (await api.create("/api/v1/namespaces/default/secrets", secret)).status_code == 201


async def test_a_pod_may_mount_only_secrets_its_service_account_may_get(admission_api: Factory) -> None:
    async with admission_api(OPTIONS) as api:
        # The placeholder authorizer allows everything: ask a stricter one.
        api.server.admission.cluster = CachedCluster(
            api.server.registries, api.server.caches, only_public_secrets
        )
        mounting = pod(volumes=[{"name": "v", "secret": {"secretName": "db-password"}}])
        answer = await api.create("/api/v1/namespaces/default/pods", mounting)
        assert answer.status_code == 403, answer.text
        assert answer.json()["message"] == (
            'pods "web" is forbidden: service account "default" may not get secret "db-password", '
            "so the pod may not reference it (SecretsPolicy)"
        )
        fine = pod("ok", volumes=[{"name": "v", "secret": {"secretName": "public-cert"}}])
        assert (await api.create("/api/v1/namespaces/default/pods", fine)).status_code == 201


async def test_without_configuration_the_plugin_is_not_in_the_chain(admission_api: Factory) -> None:
    async with admission_api(AdmissionOptions()) as api:
        assert "SecretsPolicy" not in api.server.admission.names
