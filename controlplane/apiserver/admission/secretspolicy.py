"""SecretsPolicy: Kubelab's own admission plugin for the Secrets chapter (not an upstream plugin).

In Kubernetes, a pod may mount any Secret of its namespace, whatever its ServiceAccount may read
through the API: the kubelet fetches the Secret with *its own* credentials. So a user who may create
pods but not read Secrets can still read every Secret of the namespace, by starting a pod that mounts
it and printing it. RBAC cannot close that gap, because the pod's author never reads the Secret
themselves. Admission can, and that is what this plugin shows. Two rules, each switched on per
cluster (``SecretsPolicyConfig``):

- **mount only what you may read**: a pod may reference a Secret (volume, projected volume,
  ``env``/``envFrom``, image pull secret) only if its ServiceAccount may ``get`` that Secret, as the
  server's authorizer says. (Upstream has a weaker cousin: the ServiceAccount admission plugin's
  ``kubernetes.io/enforce-mountable-secrets`` annotation, which lists allowed names on the account.)
- **every Secret has an owner**: a Secret must carry an owner label (``owner`` by default), so that
  whoever finds it knows whom to ask before rotating or deleting it.

The plugin is validating: it changes nothing, it refuses with 403 like upstream plugins do
(``pods "web" is forbidden: ...``). Real clusters get the same effect with a validating webhook or a
ValidatingAdmissionPolicy; the course builds the webhook version in the webhooks chapter.
"""

from __future__ import annotations

from dataclasses import dataclass

from controlplane.apiserver.admission.attributes import (
    CREATE,
    UPDATE,
    Attributes,
    forbidden,
    labels_of,
    section,
)
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Scope
from controlplane.apiserver.admission.serviceaccount import DEFAULT_SERVICE_ACCOUNT, secret_names
from controlplane.identity import SERVICE_ACCOUNTS, UserInfo, service_account_user


@dataclass(frozen=True, slots=True)
class SecretsPolicyConfig:
    """Which rules a cluster enforces; both off means the plugin is not in the chain."""

    #: Pods may reference only Secrets their ServiceAccount may ``get``.
    mount_only_readable: bool = True
    #: The label every Secret must carry (None: no such rule).
    owner_label: str | None = "owner"

    @property
    def enabled(self) -> bool:
        return self.mount_only_readable or self.owner_label is not None


def service_account_info(namespace: str, name: str) -> UserInfo:
    """The user a pod's ServiceAccount authenticates as (what its token would say)."""
    return UserInfo.create(
        service_account_user(namespace, name),
        groups=[SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}", "system:authenticated"],
    )


class SecretsPolicy(Plugin):
    name = "SecretsPolicy"
    validating = True

    def __init__(self, config: SecretsPolicyConfig) -> None:
        self.config = config

    def handles(self, a: Attributes) -> bool:
        if a.subresource or a.object is None or a.group != "":
            return False
        if a.resource == "pods":
            return self.config.mount_only_readable and a.operation == CREATE
        if a.resource == "secrets":
            return self.config.owner_label is not None and a.operation in (CREATE, UPDATE)
        return False

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        assert a.object is not None
        if a.resource == "secrets":
            label = self.config.owner_label
            if label is not None and not labels_of(a.object).get(label):
                raise forbidden(
                    a, f'every Secret must carry the label "{label}" naming its owner (SecretsPolicy)'
                )
            return
        account = section(a.object, "spec", "serviceAccountName") or DEFAULT_SERVICE_ACCOUNT
        user = service_account_info(a.namespace, str(account))
        for secret in secret_names(a.object):
            if not await cluster.authorize(user, "get", "", "secrets", a.namespace, secret):
                raise forbidden(
                    a,
                    f'service account "{account}" may not get secret "{secret}", so the pod may not '
                    "reference it (SecretsPolicy)",
                )


__all__ = ["SecretsPolicy", "SecretsPolicyConfig", "service_account_info"]
