"""The CSR approving controller: approve kubelets' client certificate requests that RBAC allows.

A new node's kubelet starts with a weak, shared credential (a bootstrap token) and asks for its own
client certificate with a CSR for ``kubernetes.io/kube-apiserver-client-kubelet``; later it renews
that certificate with another CSR, sent with the certificate it is about to replace. Nobody should
have to run ``kubectl certificate approve`` for each, so kube-controller-manager approves them itself,
but only when the requester is allowed to, which it asks RBAC with a **SubjectAccessReview** in the
name of the CSR's requester (``spec.username``, ``groups``, ``uid``, ``extra``):

- **selfnodeclient**: a renewal. The request's common name is the requester's own user name
  (``system:node:n1`` asks for ``CN=system:node:n1``); allowed if the requester may ``create``
  ``certificatesigningrequests/selfnodeclient`` (the ClusterRole
  ``system:certificates.k8s.io:certificatesigningrequests:selfnodeclient``, bound to
  ``system:nodes`` by kubeadm);
- **nodeclient**: a first certificate, asked by someone else (the bootstrap token's user, for any
  node name); allowed if the requester may ``create`` ``certificatesigningrequests/nodeclient``
  (``...:nodeclient``, bound to ``system:bootstrappers`` by kubeadm).

Either way the request must look like a kubelet's client request (``O=system:nodes``,
``CN=system:node:<name>``, no alternative names, the client usages): the same check the signer makes.
An allowed CSR gets ``Approved`` (reason ``AutoApproved``) through ``/approval``; then the signing
controller issues it. A CSR that is recognized but not allowed is looked at again later, with
back-off, as upstream's ``IgnorableError`` is (a binding may be created meanwhile); every other CSR
(another signer, a serving certificate, a user's) is left for a human.

Upstream: ``pkg/controller/certificates/approver/sarapprove.go``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from cryptography import x509
from cryptography.x509.oid import NameOID

from controlplane.api.certificates import (
    APPROVED,
    KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
    RequestError,
    approved_or_denied,
    certificate_of,
    parse_request,
    request_pem,
)
from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result, TerminalError
from controlplane.components.controllers.csrsigning import kubelet_client_problem
from controlplane.components.controllers.kinds import CERTIFICATE_SIGNING_REQUESTS

logger = logging.getLogger(__name__)

AUTO_APPROVED: Final = "AutoApproved"


def _usages(csr: Object) -> list[str]:
    return [str(u) for u in (csr.get("spec") or {}).get("usages") or []]


def is_node_client_cert(csr: Object, request: x509.CertificateSigningRequest) -> bool:
    """``isNodeClientCert``: a kubelet client certificate request to the kubelet client signer."""
    if (csr.get("spec") or {}).get("signerName") != KUBE_APISERVER_CLIENT_KUBELET_SIGNER:
        return False
    return kubelet_client_problem(request, _usages(csr)) is None


def is_self_node_client_cert(csr: Object, request: x509.CertificateSigningRequest) -> bool:
    """``isSelfNodeClientCert``: such a request for the requester's own name."""
    names = request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    common_name = str(names[0].value) if names else ""
    if (csr.get("spec") or {}).get("username") != common_name:
        return False
    return is_node_client_cert(csr, request)


@dataclass(frozen=True)
class Recognizer:
    """``csrRecognizer``: what a CSR must be, the permission that approves it, and the message."""

    recognize: Callable[[Object, x509.CertificateSigningRequest], bool]
    subresource: str
    success_message: str


RECOGNIZERS: Final = (
    Recognizer(
        is_self_node_client_cert,
        "selfnodeclient",
        "Auto approving self kubelet client certificate after SubjectAccessReview.",
    ),
    Recognizer(
        is_node_client_cert,
        "nodeclient",
        "Auto approving kubelet client certificate after SubjectAccessReview.",
    ),
)


def subject_access_review(csr: Object, subresource: str) -> dict[str, Any]:
    """The review ``authorize`` sends: may the requester create ``certificatesigningrequests/<sub>``?"""
    spec = csr.get("spec") or {}
    review_spec: dict[str, Any] = {
        "user": spec.get("username") or "",
        "resourceAttributes": {
            "group": CERTIFICATE_SIGNING_REQUESTS.group,
            "version": "*",
            "resource": CERTIFICATE_SIGNING_REQUESTS.plural,
            "subresource": subresource,
            "verb": "create",
        },
    }
    if spec.get("uid"):
        review_spec["uid"] = spec["uid"]
    if spec.get("groups"):
        review_spec["groups"] = list(spec["groups"])
    if spec.get("extra"):
        review_spec["extra"] = deep_copy(spec["extra"])
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": review_spec}


class CSRApprover:
    """The reconciler (``sarApprover.handle``): one CSR per request, by name."""

    def __init__(self, manager: Manager) -> None:
        # A client of its own, as each of kube-controller-manager's controllers has (its own token
        # bucket): a joining kubelet waits for this controller, not for the others' start-up work.
        self.client = manager.client.with_own_rate_limiter()
        self.csrs = manager.cache(CERTIFICATE_SIGNING_REQUESTS)

    async def _allowed(self, csr: Object, subresource: str) -> bool:
        reviews = self.client.resource("authorization.k8s.io", "v1", "subjectaccessreviews")
        answer = await reviews.create(subject_access_review(csr, subresource))
        return bool((answer.get("status") or {}).get("allowed"))

    async def reconcile(self, request: Request) -> Result:
        csr = self.csrs.get_by_key(request.name)
        if csr is None or certificate_of(csr) or any(approved_or_denied(csr)):
            return Result()
        try:
            x509_request = parse_request(request_pem(csr))
        except RequestError as error:
            raise TerminalError(f"unable to parse csr {request.name!r}: {error}") from error
        tried = []
        for recognizer in RECOGNIZERS:
            if not recognizer.recognize(csr, x509_request):
                continue
            tried.append(recognizer.subresource)
            if await self._allowed(csr, recognizer.subresource):
                approved = deep_copy(csr)
                approved.setdefault("status", {}).setdefault("conditions", []).append(
                    {
                        "type": APPROVED,
                        "status": "True",
                        "reason": AUTO_APPROVED,
                        "message": recognizer.success_message,
                    }
                )
                await self.client.request_json(
                    "PUT",
                    self.client.resource(
                        CERTIFICATE_SIGNING_REQUESTS.group,
                        CERTIFICATE_SIGNING_REQUESTS.version,
                        CERTIFICATE_SIGNING_REQUESTS.plural,
                    ).path(request.name, "approval"),
                    body=approved,
                )
                return Result()
        if tried:
            # IgnorableError: recognized, not allowed (yet); look again with back-off, quietly.
            logger.debug(
                "recognized csr %s as %s but subject access review was not approved", request.name, tried
            )
            return Result(requeue=True)
        return Result()


def add_to_manager(manager: Manager) -> Controller:
    """Add the CSR approving controller (for CertificateSigningRequests) to ``manager``."""
    return manager.new_controller("csrapproving", CSRApprover(manager), for_=CERTIFICATE_SIGNING_REQUESTS)


__all__ = [
    "AUTO_APPROVED",
    "RECOGNIZERS",
    "CSRApprover",
    "Recognizer",
    "add_to_manager",
    "is_node_client_cert",
    "is_self_node_client_cert",
    "subject_access_review",
]
