"""A step's request button: its manifest goes to the API server as JSON, as kubectl sends an object."""

from __future__ import annotations

import json

from courses.chapters.consumer import request_body
from courses.engine.content import Request, load_course

STUDENT = "student:ada"


def test_a_manifest_is_sent_as_json_with_its_content_type() -> None:
    manifest = "# a comment the server never sees\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
    body, headers = request_body(Request("POST", "/api/v1/namespaces/default/configmaps", manifest), STUDENT)
    assert headers == {"Content-Type": "application/json"}
    assert body is not None and json.loads(body) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x"},
    }


def test_a_patch_is_a_json_merge_patch_and_names_the_student() -> None:
    patch = "metadata:\n  labels:\n    owner: $student\n"
    body, headers = request_body(Request("PATCH", "/api/v1/namespaces/default/configmaps/x", patch), STUDENT)
    assert headers == {"Content-Type": "application/merge-patch+json"}
    assert body is not None and json.loads(body) == {"metadata": {"labels": {"owner": STUDENT}}}


def test_a_request_without_a_body_sends_none() -> None:
    assert request_body(Request("GET", "/api/v1/namespaces/default/configmaps"), STUDENT) == (None, {})


def test_every_request_button_of_the_course_sends_json() -> None:
    buttons = [
        action.request
        for chapter in load_course("control-plane").chapters
        for step in chapter.steps
        for action in step.actions
        if action.request is not None and action.request.body is not None
    ]
    assert buttons, "the course has request buttons with a body (chapter 11's api-key)"
    for request in buttons:
        body, _ = request_body(request, STUDENT)
        assert body is not None and isinstance(json.loads(body), dict)
