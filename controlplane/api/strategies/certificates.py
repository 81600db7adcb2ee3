"""CertificateSigningRequests: who asked is recorded by the server, and each door changes one thing.

A CSR (``controlplane/api/certificates.py`` tells the whole story) is written through three doors,
each allowed to change one part of it, so that asking, deciding and signing stay separate jobs:

- the object itself (create, and updates of labels and annotations): ``spec`` is fixed at creation.
  On create the API server **overwrites** ``spec.username``, ``uid``, ``groups`` and ``extra`` with
  the user who sent the request: a CSR says who asked, and nobody can ask in someone else's name.
  A new CSR starts with an empty status (nobody creates a pre-approved request);
- ``/approval``: only ``status.conditions`` (Approved or Denied, ``kubectl certificate approve``);
- ``/status``: the conditions other than Approved and Denied (Failed) and ``status.certificate``
  (the signer's door). Once issued, a certificate never changes.

Validation: ``spec.request`` must be a PEM ``CERTIFICATE REQUEST`` whose signature checks out (the
requester holds the key); ``signerName`` is required and a qualified name (``example.com/name``);
``usages`` are required, known and distinct; ``expirationSeconds`` at least 600. Approved and Denied
are mutually exclusive, Approved/Denied/Failed may only be True and are never removed, and no type
appears twice. Upstream tolerates, on update, problems the stored object already has (objects written
by older versions); Kubelab's objects never had them, and these rules are checked as on create.

Upstream: ``pkg/registry/certificates/certificates/strategy.go`` (the three strategies),
``pkg/apis/certificates/validation/validation.go``, ``pkg/apis/certificates/v1/defaults.go``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from controlplane.api.certificates import (
    APPROVED,
    DENIED,
    FAILED,
    LEGACY_UNKNOWN_SIGNER,
    MIN_EXPIRATION_SECONDS,
    VALID_USAGES,
    RequestError,
    parse_request,
)
from controlplane.api.meta import Object
from controlplane.api.strategies.common import KindStrategy, as_dict, as_list, is_int
from controlplane.api.strategies.config import decode_base64
from controlplane.api.validation import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    is_dns1123_label,
    is_dns1123_subdomain,
    not_supported,
    required,
    too_long,
    validate_object_meta,
    validate_object_meta_update,
)
from controlplane.identity import UserInfo

#: Condition types that may only be True (``trueConditionTypes``).
TRUE_ONLY: Final = (APPROVED, DENIED, FAILED)
ALL_STATUSES: Final = ("False", "True", "Unknown")
_DNS1123_SUBDOMAIN_MAX: Final = 253
_DNS1123_LABEL_MAX: Final = 63


def _no_name_rules(name: str) -> list[str]:
    """``ValidateCertificateRequestName``: "We don't care what you call your certificate requests"."""
    return []


def validate_signer_name(signer: Any, path: str = "spec.signerName") -> list[FieldError]:
    """``ValidateCertificateSigningRequestSignerName``: ``<domain>/<path>``, e.g. ``example.com/signer``."""
    if not isinstance(signer, str) or not signer:
        return [required(path, "signerName must be provided")]
    segments = signer.split("/")
    if len(segments) != 2:
        return [
            invalid(
                path,
                signer,
                "must be a fully qualified domain and path of the form 'example.com/signer-name'",
            )
        ]
    errors: list[FieldError] = []
    domain, rest = segments
    if len(domain) > _DNS1123_SUBDOMAIN_MAX:
        errors.append(too_long(path, _DNS1123_SUBDOMAIN_MAX))
    labels = domain.split(".")
    for label in labels:
        problems = is_dns1123_label(label)
        if problems:
            errors += [invalid(path, domain, f"validating label {_quote(label)}: {p}") for p in problems]
            break
    if len(labels) < 2:
        errors.append(
            invalid(path, domain, "should be a domain with at least two segments separated by dots")
        )
    for label in rest.split("."):
        problems = is_dns1123_subdomain(label)
        if problems:
            errors += [invalid(path, rest, f"validating label {_quote(label)}: {p}") for p in problems]
            break
    longest = _DNS1123_SUBDOMAIN_MAX + (_DNS1123_SUBDOMAIN_MAX + _DNS1123_LABEL_MAX + 1) + 1
    if len(signer) > longest:
        errors.append(too_long(path, longest))
    return errors


def _quote(text: str) -> str:
    """Go's ``%q`` for the plain strings a label is."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _signature_problem(request: x509.CertificateSigningRequest) -> str | None:
    """``CheckSignature``'s error, worded as Go's ``crypto/x509`` words it, or None."""
    if request.is_signature_valid:
        return None
    key = request.public_key()
    if isinstance(key, ec.EllipticCurvePublicKey):
        return "x509: ECDSA verification failure"
    if isinstance(key, rsa.RSAPublicKey):
        return "crypto/rsa: verification error"
    return "x509: signature verification failure"


def request_problem(spec: Mapping[str, Any]) -> str | None:
    """``validateCSR``: why ``spec.request`` is not a signed PEM certificate request, or None."""
    pem = decode_base64(spec.get("request"), "CertificateSigningRequestSpec.request")
    try:
        request = parse_request(pem)
    except RequestError as error:
        return str(error)
    return _signature_problem(request)


def validate_conditions(csr: Object) -> list[FieldError]:
    """``validateConditions``: types present and unique, statuses valid, not Approved and Denied both."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    approved = denied = False
    for i, condition in enumerate(as_list(as_dict(csr.get("status")).get("conditions"))):
        path = f"status.conditions[{i}]"
        condition = as_dict(condition)
        kind = condition.get("type") or ""
        if not kind:
            errors.append(required(f"{path}.type"))
        allowed = ("True",) if kind in TRUE_ONLY else ALL_STATUSES
        status = condition.get("status") or ""
        if not status:
            errors.append(required(f"{path}.status"))
        elif status not in allowed:
            errors.append(not_supported(f"{path}.status", status, list(allowed)))
        if kind == APPROVED:
            approved = True
            if denied:
                errors.append(
                    invalid(f"{path}.type", kind, "Approved and Denied conditions are mutually exclusive")
                )
        elif kind == DENIED:
            denied = True
            if approved:
                errors.append(
                    invalid(f"{path}.type", kind, "Approved and Denied conditions are mutually exclusive")
                )
        if kind in seen:
            errors.append(duplicate(f"{path}.type", kind))
        seen.add(kind)
    return errors


def certificate_problem(pem: bytes) -> str | None:
    """``validateCertificate``: ``status.certificate`` holds PEM CERTIFICATE blocks only, or None."""
    if not pem:
        return None
    blocks = 0
    rest = pem
    while True:
        begin = rest.find(b"-----BEGIN ")
        if begin < 0:
            break
        header_end = rest.find(b"-----", begin + 11)
        if header_end < 0:
            break
        label = rest[begin + 11 : header_end].decode(errors="replace")
        end_marker = f"-----END {label}-----".encode()
        end = rest.find(end_marker, header_end)
        if end < 0:
            break
        if label != "CERTIFICATE":
            return f'only CERTIFICATE PEM blocks are allowed, found "{label}"'
        block = rest[begin : end + len(end_marker)]
        if any(b":" in line for line in block.splitlines()[1:-1]):
            return "no PEM block headers are permitted"
        try:
            x509.load_pem_x509_certificate(block)
        except ValueError as error:
            return f"x509: malformed certificate: {error}"
        blocks += 1
        rest = rest[end + len(end_marker) :]
    if blocks == 0:
        return "must contain at least one CERTIFICATE PEM block"
    return None


def validate_csr(csr: Object, *, old: Object | None = None) -> list[FieldError]:
    """``validateCertificateSigningRequest``: everything about one CSR on its own."""
    errors = _validate_meta(csr)
    spec = as_dict(csr.get("spec"))
    problem = request_problem(spec)
    if problem is not None:
        errors.append(invalid("spec.request", spec.get("request"), problem))
    usages = as_list(spec.get("usages"))
    if not usages:
        errors.append(required("spec.usages", "usages must be provided"))
    for i, usage in enumerate(usages):
        if usage not in VALID_USAGES:
            errors.append(not_supported(f"spec.usages[{i}]", usage, sorted(VALID_USAGES)))
    seen: set[Any] = set()
    for i, usage in enumerate(usages):
        if usage in seen:
            errors.append(duplicate(f"spec.usages[{i}]", usage))
        seen.add(usage)
    signer = spec.get("signerName")
    if signer == LEGACY_UNKNOWN_SIGNER and (
        old is None or as_dict(old.get("spec")).get("signerName") != signer
    ):
        errors.append(
            invalid("spec.signerName", signer, "the legacy signerName is not allowed via this API version")
        )
    elif signer != LEGACY_UNKNOWN_SIGNER:
        errors += validate_signer_name(signer)
    seconds = spec.get("expirationSeconds")
    if is_int(seconds) and seconds < MIN_EXPIRATION_SECONDS:
        errors.append(
            invalid(
                "spec.expirationSeconds",
                seconds,
                "may not specify a duration less than 600 seconds (10 minutes)",
            )
        )
    errors += validate_conditions(csr)
    certificate = as_dict(csr.get("status")).get("certificate")
    unchanged = old is not None and certificate == as_dict(old.get("status")).get("certificate")
    if not unchanged:
        problem = certificate_problem(
            decode_base64(certificate, "CertificateSigningRequestStatus.certificate")
        )
        if problem is not None:
            errors.append(invalid("status.certificate", "<certificate data>", problem))
    return errors


def _validate_meta(csr: Object) -> list[FieldError]:
    return validate_object_meta(csr["metadata"], namespaced=False, name_validator=_no_name_rules)


def _of_type(csr: Object, condition_type: str) -> list[Any]:
    return [
        c
        for c in as_list(as_dict(csr.get("status")).get("conditions"))
        if as_dict(c).get("type") == condition_type
    ]


def validate_csr_update(
    csr: Object, old: Object, *, approval: bool = False, status: bool = False
) -> list[FieldError]:
    """``validateCertificateSigningRequestUpdate``, with what the door (``approval``: ``/approval``,
    ``status``: ``/status``) may change."""
    errors = validate_csr(csr, old=old) + validate_object_meta_update(csr["metadata"], old["metadata"])
    for kind in (APPROVED, DENIED, FAILED):
        if len(_of_type(csr, kind)) < len(_of_type(old, kind)):
            errors.append(
                forbidden("status.conditions", f'updates may not remove a condition of type "{kind}"')
            )
    if not approval:
        for kind in (APPROVED, DENIED):
            new_conditions, old_conditions = _of_type(csr, kind), _of_type(old, kind)
            if len(new_conditions) > len(old_conditions):
                errors.append(
                    forbidden("status.conditions", f'updates may not add a condition of type "{kind}"')
                )
            elif len(new_conditions) == len(old_conditions) and new_conditions != old_conditions:
                errors.append(
                    forbidden("status.conditions", f'updates may not modify a condition of type "{kind}"')
                )
    new_certificate = as_dict(csr.get("status")).get("certificate") or ""
    old_certificate = as_dict(old.get("status")).get("certificate") or ""
    if new_certificate != old_certificate:
        if not status:
            errors.append(forbidden("status.certificate", "updates may not set certificate content"))
        elif old_certificate:
            errors.append(
                forbidden("status.certificate", "updates may not modify existing certificate content")
            )
    return errors


def _preserve_condition_instances(csr: Object, old: Object, condition_type: str) -> None:
    """``preserveConditionInstances``: a ``/status`` write keeps the Approved/Denied conditions as
    they were (adding or removing one is left for validation to refuse)."""
    new_conditions = as_list(as_dict(csr.get("status")).get("conditions"))
    new_indices = [i for i, c in enumerate(new_conditions) if as_dict(c).get("type") == condition_type]
    old_instances = _of_type(old, condition_type)
    if len(new_indices) != len(old_instances):
        return
    for i, old_condition in zip(new_indices, old_instances, strict=True):
        new_conditions[i] = copy.deepcopy(old_condition)


class CertificateSigningRequestStrategy(KindStrategy):
    """``csrStrategy``, ``csrStatusStrategy`` and ``csrApprovalStrategy`` in one."""

    status_subresource = True
    name_validator = staticmethod(_no_name_rules)

    def default(self, obj: Object) -> None:
        """``SetDefaults_CertificateSigningRequestCondition``: a condition's status defaults to True."""
        status = obj.get("status")
        if not isinstance(status, dict):
            return
        for condition in as_list(status.get("conditions")):
            if isinstance(condition, dict) and not condition.get("status"):
                condition["status"] = "True"

    def reset_status(self, obj: Object) -> None:
        # "Be explicit that users cannot create pre-approved certificate requests."
        obj["status"] = {}

    def set_requester(self, obj: Object, user: UserInfo | None) -> None:
        """``PrepareForCreate``: ``spec.username``/``uid``/``groups``/``extra`` are the requester's."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        for field in ("username", "uid", "groups", "extra"):
            spec.pop(field, None)
        if user is None:
            return
        spec["username"] = user.username
        if user.uid:
            spec["uid"] = user.uid
        if user.groups:
            spec["groups"] = list(user.groups)
        if user.extra:
            spec["extra"] = {key: list(values) for key, values in user.extra.items()}

    def prepare_for_update(self, obj: Object, old: Object) -> None:
        """The spec and status cannot change here: only metadata (labels, annotations, finalizers)."""
        super().prepare_for_update(obj, old)
        if "spec" in old:
            obj["spec"] = copy.deepcopy(old["spec"])
        else:
            obj.pop("spec", None)

    def prepare_for_status_update(self, obj: Object, old: Object) -> None:
        super().prepare_for_status_update(obj, old)
        _preserve_condition_instances(obj, old, APPROVED)
        _preserve_condition_instances(obj, old, DENIED)

    def prepare_for_approval_update(self, obj: Object, old: Object) -> None:
        """``csrApprovalStrategy.PrepareForUpdate``: only ``status.conditions`` changes."""
        self.default(obj)
        conditions = as_dict(obj.get("status")).get("conditions")
        kept = {name: copy.deepcopy(value) for name, value in old.items() if name != "metadata"}
        metadata = obj.get("metadata")
        obj.clear()
        obj.update(kept)
        obj["metadata"] = metadata
        status = as_dict(obj.get("status"))
        if conditions is None:
            status.pop("conditions", None)
        else:
            status["conditions"] = conditions
        obj["status"] = status

    def set_condition_times(self, obj: Object, old: Object, now: Callable[[], str]) -> None:
        """``populateConditionTimestamps``: a condition without times gets ``now``; its
        ``lastTransitionTime`` stays the old one if a condition of that type and status was there."""
        conditions = as_list(as_dict(obj.get("status")).get("conditions"))
        if not conditions:
            return
        stamp = now()
        old_conditions = [as_dict(c) for c in as_list(as_dict(old.get("status")).get("conditions"))]
        for condition in conditions:
            if not isinstance(condition, dict):
                continue
            if not condition.get("lastUpdateTime"):
                condition["lastUpdateTime"] = stamp
            if not condition.get("lastTransitionTime"):
                transition = stamp
                for previous in old_conditions:
                    if (
                        previous.get("type") == condition.get("type")
                        and previous.get("status") == condition.get("status")
                        and previous.get("lastTransitionTime")
                    ):
                        transition = previous["lastTransitionTime"]
                        break
                condition["lastTransitionTime"] = transition

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_csr(obj)

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_csr_update(obj, old)

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_csr_update(obj, old, status=True)

    def validate_approval_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_csr_update(obj, old, approval=True)


__all__ = [
    "CertificateSigningRequestStrategy",
    "certificate_problem",
    "request_problem",
    "validate_conditions",
    "validate_csr",
    "validate_csr_update",
    "validate_signer_name",
]
