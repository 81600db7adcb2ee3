"""The API server's refusals in words, on the lines they are about (courses/manifests/explain.py).

A table of answers (the Status bodies the lab's API server sends, as seen in the service tests) and
the explanation each gets: its summary, its details, and where its diagnostics point.
"""

from __future__ import annotations

from typing import Any

import pytest

from courses.manifests import discovery
from courses.manifests.explain import Answer, explain, explain_mapping
from courses.manifests.parse import Document, parse

TEXT = """apiVersion: v1
kind: Namespace
metadata:
  name: team
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: team
  resourceVersion: "12"
spec:
  containers:
  - name: web
    image: ""
    ports:
    - containerPort: "80"
"""


def documents() -> tuple[Document, ...]:
    return parse(TEXT)


def status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message}
    body.update(reason=reason, code=code)
    if details is not None:
        body["details"] = details
    return body


def lines(problem: Any) -> list[tuple[int, int | None]]:
    return [(d.line, d.column) for d in problem.diagnostics]


def test_each_invalid_field_is_marked_at_its_line() -> None:
    pod = documents()[1]
    causes = [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers[0].image"},
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "x"',
            "field": "spec.containers[0].ports[0].name",
        },
    ]
    answer = Answer(422, status(422, "Invalid", 'Pod "web" is invalid: [...]', {"causes": causes}))
    problem = explain(answer, document=pod)
    assert problem.summary == 'The API server found 2 invalid fields in Pod "web".'
    assert problem.details == (
        "spec.containers[0].image: Required value",
        'spec.containers[0].ports[0].name: Invalid value: "x"',
    )
    assert lines(problem) == [(15, 5), (17, 7)]  # the second: the port that lacks a name
    assert (problem.code, problem.reason) == (422, "Invalid")


def test_an_apply_decoding_error_is_marked_at_the_field_it_names() -> None:
    pod = documents()[1]
    message = (
        "failed to create typed patch object (team/web; /v1, Kind=Pod): "
        '.spec.containers[name="web"].ports[containerPort="80",protocol="TCP"].containerPort: '
        'expected numeric (int or float), got "80"'
    )
    problem = explain(Answer(400, status(400, "BadRequest", message)), document=pod)
    assert problem.summary.startswith('The API server could not read Pod "web": failed to create typed patch')
    assert lines(problem) == [(17, 7)]
    strict = (
        'strict decoding error: unknown field "spec.containers[0].imagePullPolcy", unknown field "spec.x"'
    )
    problem = explain(Answer(400, status(400, "BadRequest", strict)), document=pod)
    assert lines(problem) == [(14, 5), (12, 1)]  # the container (the field is not there), and spec


def test_rbac_refusal_with_the_trace_s_reasons() -> None:
    pod = documents()[1]
    message = (
        'pods "web" is forbidden: User "bob" cannot patch resource "pods" in API group "" '
        'in the namespace "team"'
    )
    answer = Answer(403, status(403, "Forbidden", message), audit_id="a-1")
    decision = {
        "type": "rbac.decision",
        "id": "a-1",
        "allowed": False,
        "reason": "no RBAC rule lets bob patch pods",
        "considered": [
            {"binding": 'RoleBinding "v"', "role": 'Role "view"', "subject": 'User "bob"', "why": "no patch"}
        ],
    }
    other = {**decision, "id": "another request", "reason": "not this one"}
    problem = explain(answer, document=pod, events=[other, decision])
    assert problem.summary == f"Authorization refused it (403 Forbidden): {message}"
    assert problem.details == (
        "Why: no RBAC rule lets bob patch pods",
        'RoleBinding "v" gives User "bob" the Role "view": no patch',
    )
    assert lines(problem) == [(6, None)]
    # Without a trace, the Status message alone.
    assert explain(answer, document=pod).details == ()


def test_an_admission_denial_names_its_plugin() -> None:
    pod = documents()[1]
    message = 'pods "web" is forbidden: violates PodSecurity "restricted:latest": privileged'
    step = {
        "type": "admission.step",
        "id": "a-2",
        "plugin": "PodSecurity",
        "outcome": "deny",
        "phase": "validating",
    }
    problem = explain(
        Answer(403, status(403, "Forbidden", message), audit_id="a-2"), document=pod, events=[step]
    )
    assert problem.summary == f'The admission plugin PodSecurity denied Pod "web": {message}'
    # Without the trace, a 403 that is not an authorizer's is not called one.
    problem = explain(Answer(403, status(403, "Forbidden", message), audit_id="a-2"), document=pod)
    assert problem.summary == f"The API server refused it (403 Forbidden): {message}"
    webhook = 'admission webhook "policy.example.com" denied the request: no latest tags'
    problem = explain(Answer(400, status(400, "BadRequest", webhook)), document=pod)
    assert problem.summary.startswith('The admission plugin policy.example.com denied Pod "web"')


def test_a_namespace_that_an_earlier_document_creates() -> None:
    namespace, pod = documents()
    details = {"name": "team", "kind": "namespaces"}
    answer = Answer(404, status(404, "NotFound", 'namespaces "team" not found', details))
    problem = explain(answer, document=pod, earlier=[namespace], dry_run=True)
    assert 'The namespace "team" does not exist yet: document 1 creates it' in problem.summary
    assert lines(problem) == [(10, 3)]
    problem = explain(answer, document=pod, earlier=[], dry_run=True)
    assert problem.summary.startswith('The namespace "team" does not exist. Create it first')


def test_nothing_to_delete() -> None:
    pod = documents()[1]
    answer = Answer(404, status(404, "NotFound", 'pods "web" not found', {"name": "web", "kind": "pods"}))
    problem = explain(answer, document=pod)
    assert problem.summary == 'Pod "web" was not found: pods "web" not found'
    assert lines(problem) == [(9, 3)]


def test_an_apply_conflict_names_the_manager_and_the_field() -> None:
    pod = documents()[1]
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl-edit" using v1',
            "field": '.spec.containers[name="web"].image',
        }
    ]
    message = (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: '
        '.spec.containers[name="web"].image'
    )
    problem = explain(Answer(409, status(409, "Conflict", message, {"causes": causes})), document=pod)
    assert (
        problem.summary
        == 'Apply conflict: 1 field of Pod "web" is owned by another field manager, so nothing was changed.'
    )
    (detail,) = problem.details
    assert detail.startswith('.spec.containers[name="web"].image belongs to the field manager "kubectl-edit"')
    assert "--force-conflicts" in detail
    assert lines(problem) == [(15, 5)]


def test_a_stale_resource_version_is_explained() -> None:
    pod = documents()[1]
    message = (
        'Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes'
    )
    problem = explain(Answer(409, status(409, "Conflict", message)), document=pod)
    assert (
        'has changed since it was read: your manifest carries metadata.resourceVersion "12"'
        in problem.summary
    )
    assert lines(problem) == [(11, 3)]


def test_throttling_says_how_long_to_wait() -> None:
    pod = documents()[1]
    plain = Answer(429, None, text="Too many requests, please try again later.\n", retry_after="3")
    problem = explain(plain, document=pod)
    assert "wait 3 s and try again" in problem.summary
    assert (problem.code, problem.retry_after) == (429, 3)
    assert problem.details == ("Too many requests, please try again later.",)
    from_status = Answer(429, status(429, "TooManyRequests", "slow down", {"retryAfterSeconds": 7}))
    assert explain(from_status, document=pod).retry_after == 7


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (413, "too large for the API server"),
        (401, "did not accept your credential"),
        (500, "answered 500 InternalError"),
        (418, "answered 418"),
    ],
)
def test_other_answers_say_what_the_api_server_said(code: int, words: str) -> None:
    pod = documents()[1]
    reason = {413: "RequestEntityTooLarge", 401: "Unauthorized", 500: "InternalError", 418: ""}[code]
    problem = explain(Answer(code, status(code, reason, "something")), document=pod)
    assert words in problem.summary
    assert problem.code == code


def test_strange_status_details_are_read_defensively() -> None:
    pod = documents()[1]
    odd = {"kind": "Status", "message": 5, "details": {"causes": ["not a mapping", {"field": 3}]}}
    problem = explain(Answer(422, odd), document=pod)
    assert problem.summary == 'The API server found 1 invalid field in Pod "web".'
    assert lines(problem) == [(6, 1)]


def test_kinds_the_api_server_does_not_serve() -> None:
    pod = documents()[1]
    similar = discovery.UnknownKind("v1", "pod", elsewhere=(), similar="Pod")
    assert explain_mapping(similar, document=pod).summary == 'There is no kind "pod" in v1. Did you mean Pod?'
    elsewhere = discovery.UnknownKind("v1", "Pod", elsewhere=("apps/v1",), similar=None)
    problem = explain_mapping(elsewhere, document=pod)
    assert problem.summary == 'There is no kind "Pod" in v1. Pod is served as apps/v1: change apiVersion.'
    assert lines(problem) == [(7, 1)]
    version = discovery.UnknownAPIVersion("v2", "Pod", served=("v1",), elsewhere=())
    problem = explain_mapping(version, document=pod)
    assert problem.summary == 'The API server does not serve apiVersion "v2". Its group is served as v1.'
    assert lines(problem) == [(6, 1)]
    invalid = explain_mapping(discovery.InvalidAPIVersion("a/b/c"), document=pod)
    assert invalid.summary.startswith('apiVersion "a/b/c" is not a version')
