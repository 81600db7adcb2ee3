"""ServiceAccounts: identities for processes in pods, as users are identities for people.

Every namespace has a ``default`` ServiceAccount (the service-account controller creates it), and a
pod that names none runs as ``default``; that is the ServiceAccount *admission plugin*'s doing, not
defaulting, which is why the pod strategy leaves ``spec.serviceAccountName`` alone. A pod's token for
its ServiceAccount is issued through ``serviceaccounts/<name>/token`` (a TokenRequest) and mounted as
a projected volume; the API server authenticates it as ``system:serviceaccount:<ns>:<name>``, which
RBAC bindings then grant permissions to.

There is little to validate: the name must be a DNS subdomain (it appears in user names and pod
specs), and the usual metadata rules apply. Upstream: ``ValidateServiceAccount`` in
``pkg/apis/core/validation/validation.go``, ``pkg/registry/core/serviceaccount/strategy.go``.
"""

from __future__ import annotations

from typing import Final

from controlplane.api.meta import Object
from controlplane.api.strategies.common import CoreKindStrategy
from controlplane.api.strategies.workloads import validate_meta_update
from controlplane.api.validation import FieldError

#: The annotation that limits an account's pods to the Secrets it lists (the ServiceAccount
#: admission plugin enforces it), deprecated since 1.32.
ENFORCE_MOUNTABLE_SECRETS: Final = "kubernetes.io/enforce-mountable-secrets"


def _warnings(obj: Object) -> list[str]:
    """``warningsForServiceAccount`` (pkg/registry/core/serviceaccount/strategy.go)."""
    annotations = (obj.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict) and ENFORCE_MOUNTABLE_SECRETS in annotations:
        return [
            f"metadata.annotations[{ENFORCE_MOUNTABLE_SECRETS}]: deprecated in v1.32+; "
            "prefer separate namespaces to isolate access to mounted secrets"
        ]
    return []


class ServiceAccountStrategy(CoreKindStrategy):
    """ServiceAccounts: metadata rules only, and a warning for a deprecated annotation."""

    def warnings_on_create(self, obj: Object) -> list[str]:
        return _warnings(obj)

    def warnings_on_update(self, obj: Object, old: Object) -> list[str]:
        return _warnings(obj)

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return self.validate_meta(obj, namespaced=namespaced)

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateServiceAccountUpdate``."""
        return validate_meta_update(obj, old) + self.validate(obj, namespaced=namespaced)


__all__ = ["ENFORCE_MOUNTABLE_SECRETS", "ServiceAccountStrategy"]
