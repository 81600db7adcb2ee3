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

from controlplane.api.meta import Object
from controlplane.api.strategies.common import CoreKindStrategy
from controlplane.api.strategies.workloads import validate_meta_update
from controlplane.api.validation import FieldError


class ServiceAccountStrategy(CoreKindStrategy):
    """ServiceAccounts: metadata rules only."""

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return self.validate_meta(obj, namespaced=namespaced)

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateServiceAccountUpdate``."""
        return validate_meta_update(obj, old) + self.validate(obj, namespaced=namespaced)


__all__ = ["ServiceAccountStrategy"]
