"""CertificateSigningRequests' strategy: upstream's validation messages, the requester recorded by the
server, and what each door (the object, ``/approval``, ``/status``) may change."""

from __future__ import annotations

import base64
import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from controlplane.api.meta import Object
from controlplane.api.printers import printer_for
from controlplane.api.strategies.certificates import CertificateSigningRequestStrategy, validate_signer_name
from controlplane.identity import UserInfo
from controlplane.pki import certificate_pem, new_ca
from tests.support.csr import csr_manifest, new_key, request_pem

STRATEGY = CertificateSigningRequestStrategy()
NOW = "2026-01-01T00:00:00Z"


def created(**spec: Any) -> Object:
    csr: Object = csr_manifest("c", request_pem(new_key(), "ada"), **spec)
    csr["metadata"].update(uid="u1", creationTimestamp=NOW)
    STRATEGY.default(csr)
    STRATEGY.prepare_for_create(csr)
    STRATEGY.set_requester(csr, UserInfo.create("ada", uid="ada-uid", groups=["students"]))
    return csr


def messages(problems: list[Any]) -> list[str]:
    return [p.message() for p in problems]


def with_condition(csr: Object, kind: str, **fields: str) -> Object:
    updated = copy.deepcopy(csr)
    updated.setdefault("status", {}).setdefault("conditions", []).append({"type": kind, **fields})
    return updated


def test_the_requester_is_the_user_who_creates_it_and_status_starts_empty() -> None:
    csr = csr_manifest("c", request_pem(new_key(), "ada"), username="root", uid="0", extra={"a": ["b"]})
    csr["status"] = {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "eA=="}
    STRATEGY.prepare_for_create(csr)
    STRATEGY.set_requester(
        csr, UserInfo.create("ada", groups=["students"], extra={"authentication.kubernetes.io/x": ["y"]})
    )
    spec = csr["spec"]
    assert (spec["username"], spec["groups"], spec["extra"]) == (
        "ada",
        ["students"],
        {"authentication.kubernetes.io/x": ["y"]},
    )
    assert "uid" not in spec, "an empty uid is left out, as Go's omitempty does"
    assert csr["status"] == {}


def test_a_valid_request_passes_and_the_rules_speak_upstreams_words() -> None:
    assert messages(STRATEGY.validate(created(), namespaced=False)) == []
    bad = created(usages=["client auth", "flying", "client auth"], expirationSeconds=599)
    bad["spec"]["request"] = base64.b64encode(
        b"-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"
    ).decode()
    bad["spec"]["signerName"] = "kubernetes.io/legacy-unknown"
    got = messages(STRATEGY.validate(bad, namespaced=False))
    assert got[0].startswith("spec.request: Invalid value: ") and got[0].endswith(
        ": PEM block type must be CERTIFICATE REQUEST"
    )
    assert got[1].startswith(
        'spec.usages[1]: Unsupported value: "flying": supported values: "any", "cert sign"'
    )
    assert got[2:] == [
        'spec.usages[2]: Duplicate value: "client auth"',
        'spec.signerName: Invalid value: "kubernetes.io/legacy-unknown": '
        "the legacy signerName is not allowed via this API version",
        "spec.expirationSeconds: Invalid value: 599: "
        "may not specify a duration less than 600 seconds (10 minutes)",
    ]
    no_usages = created(usages=[])
    assert messages(STRATEGY.validate(no_usages, namespaced=False)) == [
        "spec.usages: Required value: usages must be provided"
    ]


def test_a_request_signed_by_another_key_is_refused() -> None:
    csr = created()
    pem = base64.b64decode(csr["spec"]["request"])
    der = bytearray(x509.load_pem_x509_csr(pem).public_bytes(serialization.Encoding.DER))
    der[-3] ^= 0x01  # a byte of the signature
    tampered = b"-----BEGIN CERTIFICATE REQUEST-----\n" + base64.encodebytes(bytes(der))
    tampered += b"-----END CERTIFICATE REQUEST-----\n"
    csr["spec"]["request"] = base64.b64encode(tampered).decode()
    [problem] = messages(STRATEGY.validate(csr, namespaced=False))
    assert problem.startswith("spec.request: Invalid value: ")
    assert problem.endswith(": x509: ECDSA verification failure")


@pytest.mark.parametrize(
    ("signer", "expected"),
    [
        ("example.com/my-signer", []),
        ("", ["spec.signerName: Required value: signerName must be provided"]),
        (
            "example",
            [
                'spec.signerName: Invalid value: "example": must be a fully qualified domain and path of the '
                "form 'example.com/signer-name'"
            ],
        ),
        (
            "example/signer",
            [
                'spec.signerName: Invalid value: "example": '
                "should be a domain with at least two segments separated by dots"
            ],
        ),
        (
            "Example.com/signer",
            [
                'spec.signerName: Invalid value: "Example.com": validating label "Example": '
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                "and must start and end with an alphanumeric character "
                "(e.g. 'my-name',  or '123-abc', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ],
        ),
    ],
)
def test_signer_names_are_qualified_names(signer: str, expected: list[str]) -> None:
    assert messages(validate_signer_name(signer)) == expected


def test_the_spec_cannot_change_after_creation() -> None:
    old = created()
    new = copy.deepcopy(old)
    new["spec"]["usages"] = ["server auth"]
    new["spec"]["username"] = "mallory"
    new["metadata"]["labels"] = {"team": "a"}
    STRATEGY.prepare_for_update(new, old)
    assert new["spec"] == old["spec"] and new["metadata"]["labels"] == {"team": "a"}
    assert messages(STRATEGY.validate_update(new, old, namespaced=False)) == []


def test_approval_changes_only_conditions_and_stamps_them() -> None:
    old = created()
    new = with_condition(old, "Approved", reason="KubectlApprove")
    new["spec"]["signerName"] = "example.com/other"
    new["status"]["certificate"] = "eA=="
    STRATEGY.prepare_for_approval_update(new, old)
    STRATEGY.set_condition_times(new, old, lambda: NOW)
    assert new["spec"] == old["spec"] and "certificate" not in new["status"]
    [condition] = new["status"]["conditions"]
    assert condition == {
        "type": "Approved",
        "reason": "KubectlApprove",
        "status": "True",
        "lastUpdateTime": NOW,
        "lastTransitionTime": NOW,
    }
    assert messages(STRATEGY.validate_approval_update(new, old, namespaced=False)) == []


def test_approved_and_denied_exclude_each_other_and_are_never_removed() -> None:
    old = with_condition(created(), "Denied", status="True")
    both = with_condition(old, "Approved", status="True")
    assert messages(STRATEGY.validate_approval_update(both, old, namespaced=False)) == [
        'status.conditions[1].type: Invalid value: "Approved": '
        "Approved and Denied conditions are mutually exclusive"
    ]
    removed = copy.deepcopy(old)
    removed["status"]["conditions"] = []
    assert messages(STRATEGY.validate_approval_update(removed, old, namespaced=False)) == [
        'status.conditions: Forbidden: updates may not remove a condition of type "Denied"'
    ]
    false = with_condition(created(), "Approved", status="False")
    assert messages(STRATEGY.validate_approval_update(false, created(), namespaced=False)) == [
        'status.conditions[0].status: Unsupported value: "False": supported values: "True"'
    ]


def test_status_may_set_the_certificate_once_but_not_approve() -> None:
    old = with_condition(created(), "Approved", status="True")
    cert = base64.b64encode(_certificate_pem()).decode()
    new = copy.deepcopy(old)
    new["status"]["certificate"] = cert
    new["status"]["conditions"][0]["reason"] = "Changed by the signer"
    STRATEGY.prepare_for_status_update(new, old)
    assert new["status"]["conditions"] == old["status"]["conditions"], "Approved kept as it was"
    assert messages(STRATEGY.validate_status_update(new, old, namespaced=False)) == []
    again = copy.deepcopy(new)
    again["status"]["certificate"] = base64.b64encode(_certificate_pem()).decode()
    assert messages(STRATEGY.validate_status_update(again, new, namespaced=False)) == [
        "status.certificate: Forbidden: updates may not modify existing certificate content"
    ]
    approving = with_condition(created(), "Approved", status="True")
    assert messages(STRATEGY.validate_status_update(approving, created(), namespaced=False)) == [
        'status.conditions: Forbidden: updates may not add a condition of type "Approved"'
    ]
    junk = copy.deepcopy(old)
    junk["status"]["certificate"] = base64.b64encode(b"not a certificate").decode()
    assert messages(STRATEGY.validate_status_update(junk, old, namespaced=False)) == [
        'status.certificate: Invalid value: "<certificate data>": '
        "must contain at least one CERTIFICATE PEM block"
    ]
    through_main = copy.deepcopy(old)
    through_main["status"]["certificate"] = cert
    assert messages(STRATEGY.validate_update(through_main, old, namespaced=False)) == [
        "status.certificate: Forbidden: updates may not set certificate content"
    ]


def _certificate_pem() -> bytes:
    return certificate_pem(new_ca("x", now=datetime(2026, 1, 1, tzinfo=UTC)).certificate)


def test_the_table_has_upstreams_columns_and_conditions() -> None:
    printer = printer_for("certificates.k8s.io", "certificatesigningrequests")
    assert [c["name"] for c in printer.column_definitions()] == [
        "Name",
        "Age",
        "SignerName",
        "Requestor",
        "RequestedDuration",
        "Condition",
    ]
    now = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    csr = created(expirationSeconds=3600)
    assert printer.row(csr, now) == [
        "c",
        "5m",
        "kubernetes.io/kube-apiserver-client",
        "ada",
        "60m",
        "Pending",
    ]
    done = with_condition(with_condition(created(), "Approved", status="True"), "Failed", status="True")
    done["status"]["certificate"] = "eA=="
    assert printer.row(done, now)[4:] == ["<none>", "Approved,Failed,Issued"]
    denied = with_condition(with_condition(created(), "Approved"), "Denied")
    assert printer.row(denied, now)[5] == "Denied"
