"""CertificateApproval, CertificateSigning, CertificateSubjectRestriction: who may decide about a CSR.

RBAC on ``certificatesigningrequests/approval`` says who may *write* approvals at all; but a CSR for
``kubernetes.io/kube-apiserver-client`` makes a user of the cluster, and one for a company's own
signer means nothing to the cluster. So approving, and signing, need a second permission, on the
**signer** named in the request: the verb ``approve`` (or ``sign``) on the resource ``signers`` of
``certificates.k8s.io``, with the signer name as resource name, or ``<domain>/*`` for every signer of
a domain::

    - apiGroups: ["certificates.k8s.io"]
      resources: ["signers"]
      resourceNames: ["kubernetes.io/kube-apiserver-client"]   # or "example.com/*"
      verbs: ["approve"]

Three validating plugins, on by default upstream:

- ``CertificateApproval``: an update of ``/approval`` needs ``approve`` on the CSR's signer, else
  403 ``user not permitted to approve requests with signerName "..."``;
- ``CertificateSigning``: an update of ``/status`` that changes the certificate or the conditions
  needs ``sign`` on the signer, else 403 ``user not permitted to sign requests with signerName "..."``;
- ``CertificateSubjectRestriction``: nobody may even *ask* the ``kube-apiserver-client`` signer for a
  certificate in the group ``system:masters`` (which would be a cluster admin, whom RBAC cannot stop).

Upstream: ``plugin/pkg/admission/certificates/{approval,signing,subjectrestriction}/admission.go``
and ``plugin/pkg/admission/certificates/util.go`` (``IsAuthorizedForSignerName``).
"""

from __future__ import annotations

from typing import Final

from cryptography.x509.oid import NameOID

from controlplane.api.certificates import (
    GROUP,
    KUBE_APISERVER_CLIENT_SIGNER,
    RESOURCE,
    RequestError,
    parse_request,
    request_pem,
)
from controlplane.apiserver.admission.attributes import CREATE, UPDATE, Attributes, forbidden, section
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Scope
from controlplane.identity import SYSTEM_MASTERS, UserInfo

SIGNERS: Final = "signers"


async def authorized_for_signer(cluster: ClusterView, user: UserInfo, verb: str, signer: str) -> bool:
    """``IsAuthorizedForSignerName``: ``verb`` on the signer itself, or on ``<domain>/*``."""
    if await cluster.authorize(user, verb, GROUP, SIGNERS, "", signer):
        return True
    domain, slash, _ = signer.partition("/")
    return bool(slash) and await cluster.authorize(user, verb, GROUP, SIGNERS, "", f"{domain}/*")


def _is_csr(a: Attributes) -> bool:
    return a.group == GROUP and a.resource == RESOURCE and a.object is not None


def _signer(a: Attributes) -> str:
    return str(section(a.object, "spec", "signerName") or "")


class CertificateApproval(Plugin):
    """Approving or denying needs ``approve`` on the signer."""

    name = "CertificateApproval"
    validating = True

    def handles(self, a: Attributes) -> bool:
        return a.operation == UPDATE and a.subresource == "approval" and _is_csr(a)

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        signer = _signer(a)
        if not await authorized_for_signer(cluster, a.user, "approve", signer):
            raise forbidden(a, f'user not permitted to approve requests with signerName "{signer}"')


class CertificateSigning(Plugin):
    """Issuing (or failing) needs ``sign`` on the signer."""

    name = "CertificateSigning"
    validating = True

    def handles(self, a: Attributes) -> bool:
        return a.operation == UPDATE and a.subresource == "status" and _is_csr(a)

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        old = a.old_object or {}
        # Only a change of what the signer owns counts (upstream compares certificate and conditions).
        if section(a.object, "status", "certificate") == section(old, "status", "certificate") and (
            section(a.object, "status", "conditions") == section(old, "status", "conditions")
        ):
            return
        signer = str(section(old, "spec", "signerName") or "")
        if not await authorized_for_signer(cluster, a.user, "sign", signer):
            raise forbidden(a, f'user not permitted to sign requests with signerName "{signer}"')


class CertificateSubjectRestriction(Plugin):
    """No ``system:masters`` certificates from the ``kube-apiserver-client`` signer."""

    name = "CertificateSubjectRestriction"
    validating = True

    def handles(self, a: Attributes) -> bool:
        return a.operation == CREATE and not a.subresource and _is_csr(a)

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        if _signer(a) != KUBE_APISERVER_CLIENT_SIGNER or a.object is None:
            return
        try:
            request = parse_request(request_pem(a.object))
        except RequestError:
            return  # validation has refused it already
        organizations = [a.value for a in request.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
        if SYSTEM_MASTERS in organizations:
            raise forbidden(
                a,
                "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed",
            )


__all__ = [
    "CertificateApproval",
    "CertificateSigning",
    "CertificateSubjectRestriction",
    "authorized_for_signer",
]
