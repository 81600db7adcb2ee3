"""What a client may ask back through ``Accept`` (``handlers/response.go``): the objects, a Table of
them, or their metadata alone (``PartialObjectMetadata``), in ``meta.k8s.io/v1`` or ``v1beta1``."""

from __future__ import annotations

import json

from tests.controlplane.apiserver.conftest import API

CMS = "/api/v1/namespaces/default/configmaps"
PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


async def make(api: API, name: str) -> dict[str, object]:
    body = {"metadata": {"name": name, "labels": {"app": "x"}}, "data": {"secret-ish": "value"}}
    response = await api.client.post(CMS, json=body)
    assert response.status_code == 201, response.text
    made: dict[str, object] = response.json()
    return made


async def test_the_metadata_alone_of_an_object_a_list_and_a_watch(api: API) -> None:
    made = await make(api, "meta-a")
    one = (await api.client.get(f"{CMS}/meta-a", headers={"Accept": PARTIAL})).json()
    assert one == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": made["metadata"],
    }

    listed = (await api.client.get(CMS, headers={"Accept": PARTIAL_LIST})).json()
    assert (listed["kind"], listed["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert listed["metadata"]["resourceVersion"]
    assert [item["metadata"]["name"] for item in listed["items"]] == ["meta-a"]
    assert all(set(item) == {"kind", "apiVersion", "metadata"} for item in listed["items"])

    await make(api, "meta-b")
    params = {
        "watch": "true",
        "resourceVersion": listed["metadata"]["resourceVersion"],
        "timeoutSeconds": "0",
    }
    watched = await api.client.get(CMS, params=params, headers={"Accept": PARTIAL})
    [event] = [json.loads(line) for line in watched.text.splitlines()]
    assert event["type"] == "ADDED"
    assert event["object"]["kind"] == "PartialObjectMetadata"
    assert event["object"]["metadata"]["name"] == "meta-b"
    assert "data" not in event["object"]


async def test_the_wrong_partial_kind_for_the_answer_is_not_acceptable(api: API) -> None:
    await make(api, "meta-c")
    listed_as_one = await api.client.get(CMS, headers={"Accept": PARTIAL})
    assert listed_as_one.status_code == 406
    assert listed_as_one.json()["message"] == (
        "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
    )
    one_as_list = await api.client.get(f"{CMS}/meta-c", headers={"Accept": PARTIAL_LIST})
    assert one_as_list.status_code == 406


async def test_a_table_is_written_in_the_version_asked_for_and_checks_include_object(api: API) -> None:
    await make(api, "meta-d")
    beta = "application/json;as=Table;g=meta.k8s.io;v=v1beta1"
    table = (await api.client.get(CMS, headers={"Accept": beta})).json()
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1beta1")
    assert table["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"

    v2 = await api.client.get(CMS, headers={"Accept": "application/json;as=Table;g=meta.k8s.io;v=v2"})
    assert v2.status_code == 406
    assert v2.json()["message"].startswith("only the following media types are accepted: application/json")

    bogus = await api.client.get(
        CMS,
        params={"includeObject": "Bogus"},
        headers={"Accept": "application/json;as=Table;g=meta.k8s.io;v=v1"},
    )
    assert bogus.status_code == 400
    assert bogus.json()["message"] == (
        'Unable to convert to Table as requested: includeObject: Invalid value: "Bogus": '
        "must be 'Metadata', 'Object', 'None', or empty"
    )
