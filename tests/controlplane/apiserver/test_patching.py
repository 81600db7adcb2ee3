"""Unknown fields and wrong types in merge and strategic patches: the shortcut that walks only the patch.

``Patcher.mutate`` skips the walks of the whole patched object when the patch itself names no field
outside the kind's schema and has no value of the wrong type (the stored object has neither). These
tests pin that a patch that does bring one is still found, dropped or refused wherever it is, and
that the shortcut answers exactly what the full walks answer.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from controlplane.apiserver.patching import Patcher
from tests.controlplane.apiserver.conftest import API

PODS = "/api/v1/namespaces/default/pods"
MERGE = {"Content-Type": "application/merge-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
    }


RUNNING: dict[str, Any] = {
    "phase": "Running",
    "podIP": "10.0.0.7",
    "conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}],
    "containerStatuses": [
        {
            "name": "app",
            "image": "nginx:1.25",
            "imageID": "",
            "ready": True,
            "restartCount": 0,
            "started": True,
        }
    ],
}


async def created(api: API, name: str) -> None:
    response = await api.client.post(PODS, json=pod(name))
    assert response.status_code == 201, response.text


async def patch_with_a_typo(api: API, name: str, validation: str) -> httpx.Response:
    """A new pod's status merge-patched to Running, with a misspelt ``phaze`` beside ``phase``."""
    await created(api, name)
    return await api.client.patch(
        f"{PODS}/{name}/status?fieldValidation={validation}",
        json={"status": {**RUNNING, "phaze": "Running"}},
        headers=MERGE,
    )


async def test_unknown_status_field_in_a_merge_patch_is_refused_under_strict(api: API) -> None:
    response = await patch_with_a_typo(api, "a", "Strict")
    assert response.status_code == 400, response.text
    assert response.json()["message"] == 'strict decoding error: unknown field "status.phaze"'
    stored = (await api.client.get(f"{PODS}/a")).json()
    assert "phase" not in stored["status"] or stored["status"]["phase"] == "Pending"


async def test_unknown_field_in_a_list_item_is_dropped_with_a_warning(api: API) -> None:
    await created(api, "b")
    status = {**RUNNING, "containerStatuses": [{**RUNNING["containerStatuses"][0], "redy": True}]}
    response = await api.client.patch(f"{PODS}/b/status", json={"status": status}, headers=STRATEGIC)
    assert response.status_code == 200, response.text
    assert response.headers["warning"] == '299 - "unknown field \\"status.containerStatuses[0].redy\\""'
    assert "redy" not in response.json()["status"]["containerStatuses"][0]


PATCHES: list[tuple[dict[str, str], dict[str, Any]]] = [
    (MERGE, {"status": RUNNING}),
    (MERGE, {"status": {"podIP": None, "phase": "Running"}}),
    (MERGE, {"metadata": {"labels": {"tier": "front", "app": None}}}),
    (STRATEGIC, {"status": RUNNING}),
    (
        STRATEGIC,
        {
            "status": {
                "$setElementOrder/conditions": [{"type": "Initialized"}, {"type": "Ready"}],
                "conditions": [{"type": "Ready", "status": "False"}],
            }
        },
    ),
    (STRATEGIC, {"metadata": {"labels": {"tier": "back"}, "annotationz": {"x": "y"}}}),
    (MERGE, {"status": {"containerStatuses": [{"name": "app", "restartCount": "two"}]}}),
    (MERGE, {"metadata": {"labels": {"tier": 7}}}),
    (
        STRATEGIC,
        {"status": {"conditions": [{"type": "Ready", "status": "True", "lastProbeTime": "yesterday"}]}},
    ),
]


@pytest.mark.parametrize(("headers", "patch"), PATCHES)
async def test_the_shortcut_answers_what_the_full_walk_answers(
    api: API, monkeypatch: pytest.MonkeyPatch, headers: dict[str, str], patch: dict[str, Any]
) -> None:
    async def patched(name: str) -> tuple[int, Any, str | None]:
        await created(api, name)
        subresource = "/status" if "status" in patch else ""
        await api.client.patch(f"{PODS}/{name}/status", json={"status": RUNNING}, headers=MERGE)
        response = await api.client.patch(f"{PODS}/{name}{subresource}", json=patch, headers=headers)
        body = response.json()
        if response.status_code == 200:  # compare what differs between any two pods only by name
            meta = body["metadata"]
            for key in ("name", "uid", "resourceVersion", "creationTimestamp", "managedFields"):
                meta.pop(key, None)
        else:  # the message quotes the whole patched object: compare Go's error at its end
            body = (
                body["reason"],
                body["details"]["causes"][0]["field"],
                body["message"].rpartition('": ')[2],
            )
        return response.status_code, body, response.headers.get("warning")

    shortcut = await patched("fast")
    monkeypatch.setattr(Patcher, "_is_clean", lambda self, document: False)
    full_walk = await patched("slow")
    assert shortcut == full_walk
    assert shortcut[0] in (200, 422)


async def test_an_ignored_unknown_field_is_still_dropped(api: API) -> None:
    response = await patch_with_a_typo(api, "c", "Ignore")
    assert response.status_code == 200, response.text
    assert "warning" not in response.headers
    assert "phaze" not in response.json()["status"]
    assert response.json()["status"]["phase"] == "Running"
