"""The official Python client's ``EventsV1Api`` and ``CoreV1Api`` on the same Events, against a live lab.

Both APIs serve one set of objects (``controlplane.api.conversion.events``): what one writes, the other
reads in its own field names, in gets, lists and watches.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client, config, watch

from tests.support.lab import LiveLab

NAMESPACE = "py-events"


@pytest.fixture(scope="module")
def api_client(lab: LiveLab) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(config_file=str(lab.kubeconfig))
    try:
        client.CoreV1Api(api).create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE))
        )
        yield api
    finally:
        api.close()


def regarding(name: str) -> client.V1ObjectReference:
    return client.V1ObjectReference(kind="Pod", namespace=NAMESPACE, name=name, api_version="v1")


def new_event(name: str, note: str) -> client.EventsV1Event:
    return client.EventsV1Event(
        metadata=client.V1ObjectMeta(name=name),
        event_time=datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC),
        reporting_controller="example.com/py-controller",
        reporting_instance="py-1",
        action="Testing",
        reason="Tested",
        regarding=regarding(name),
        note=note,
        type="Normal",
    )


def old_event(name: str, message: str) -> client.CoreV1Event:
    """A core/v1 Event as client-go's newer recorders write it: with eventTime and reportingComponent."""
    return client.CoreV1Event(
        metadata=client.V1ObjectMeta(name=name),
        involved_object=regarding(name),
        event_time=datetime(2026, 1, 1, 12, 0, 1, tzinfo=UTC),
        reporting_component="example.com/old-recorder",
        reporting_instance="old-1",
        action="Testing",
        reason="Tested",
        message=message,
        source=client.V1EventSource(component="old-recorder", host="node-1"),
        count=2,
        type="Warning",
    )


def test_events_v1_lists_what_both_apis_wrote(api_client: client.ApiClient) -> None:
    events, core = client.EventsV1Api(api_client), client.CoreV1Api(api_client)
    events.create_namespaced_event(NAMESPACE, new_event("new-1", "written as events.k8s.io/v1"))
    core.create_namespaced_event(NAMESPACE, old_event("old-1", "written as core/v1"))

    listed = {e.metadata.name: e for e in events.list_namespaced_event(NAMESPACE).items}
    assert set(listed) == {"new-1", "old-1"}
    old = listed["old-1"]
    assert old.note == "written as core/v1"
    assert old.regarding.name == "old-1" and old.regarding.kind == "Pod"
    assert old.reporting_controller == "example.com/old-recorder"
    assert old.deprecated_source.component == "old-recorder" and old.deprecated_count == 2
    assert old.type == "Warning"
    assert listed["new-1"].event_time == datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)

    read = events.read_namespaced_event("old-1", NAMESPACE)
    assert read.note == "written as core/v1"

    as_core = {e.metadata.name: e for e in core.list_namespaced_event(NAMESPACE).items}
    new = as_core["new-1"]
    assert new.message == "written as events.k8s.io/v1"
    assert new.involved_object.name == "new-1"
    assert new.reporting_component == "example.com/py-controller"


def test_events_v1_watch_sees_an_event_written_through_core(api_client: client.ApiClient) -> None:
    events, core = client.EventsV1Api(api_client), client.CoreV1Api(api_client)
    start = events.list_namespaced_event(NAMESPACE).metadata.resource_version
    watching = threading.Event()

    def write() -> None:
        watching.wait(5)
        core.create_namespaced_event(NAMESPACE, old_event("old-watched", "seen through the new API"))

    writer = threading.Thread(target=write)
    writer.start()
    w = watch.Watch()
    seen = None
    try:
        for event in w.stream(
            events.list_namespaced_event, NAMESPACE, resource_version=start, timeout_seconds=10
        ):
            watching.set()
            if event["object"].metadata.name == "old-watched":
                seen = event
                break
    finally:
        watching.set()
        w.stop()
        writer.join()
    assert seen is not None
    assert seen["type"] == "ADDED"
    assert seen["object"].note == "seen through the new API"
    assert seen["object"].regarding.name == "old-watched"


def test_a_core_event_without_event_time_reads_as_null_like_upstream(api_client: client.ApiClient) -> None:
    """kube-apiserver serves ``"eventTime": null`` here too, which ``EventsV1Event`` itself refuses
    (kubernetes-client/python#1826); the raw answer shows the conversion is upstream's."""
    core, events = client.CoreV1Api(api_client), client.EventsV1Api(api_client)
    body = old_event("old-untimed", "no eventTime")
    body.event_time = None
    core.create_namespaced_event(NAMESPACE, body)
    raw: Any = events.read_namespaced_event("old-untimed", NAMESPACE, _preload_content=False)
    document = json.loads(raw.data)  # the raw urllib3 response (``_preload_content=False``)
    assert document["apiVersion"] == "events.k8s.io/v1"
    assert document["eventTime"] is None and document["note"] == "no eventTime"
    core.delete_namespaced_event("old-untimed", NAMESPACE)


def test_events_v1_lists_the_schedulers_scheduled_event(lab: LiveLab, api_client: client.ApiClient) -> None:
    """The scheduler writes its Events through events.k8s.io/v1, as kube-scheduler does: with an
    eventTime, so the official client's ``EventsV1Event`` reads them (a core/v1 Event without one it
    refuses), and ``kubectl get events`` and ``kubectl describe`` still show them."""
    core, events = client.CoreV1Api(api_client), client.EventsV1Api(api_client)
    container = client.V1Container(name="app", image="nginx")
    core.create_namespaced_pod(
        NAMESPACE,
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="placed"), spec=client.V1PodSpec(containers=[container])
        ),
    )

    # Only the scheduler's: the kubelet's Events (legacy recorder, no eventTime) would fail to
    # deserialize, against a real cluster too (kubernetes-client/python#1826).
    selector = "regarding.name=placed,reportingController=default-scheduler"

    def scheduled() -> Any:
        listed = events.list_namespaced_event(NAMESPACE, field_selector=selector).items
        return next((e for e in listed if e.reason == "Scheduled"), None)

    event = lab.eventually(scheduled, "the scheduler's Scheduled event")
    node = core.read_namespaced_pod("placed", NAMESPACE).spec.node_name
    assert event.event_time is not None and event.event_time.tzinfo is not None
    assert event.reporting_controller == "default-scheduler"
    assert event.reporting_instance.startswith("default-scheduler-")
    assert event.action == "Binding"
    assert event.type == "Normal"
    assert event.note == f"Successfully assigned {NAMESPACE}/placed to {node}"
    assert event.regarding.kind == "Pod" and event.regarding.name == "placed"
    assert event.deprecated_source is None and event.deprecated_count is None

    table = lab.kubectl(
        "get", "events", "-n", NAMESPACE, "--field-selector", "involvedObject.name=placed"
    ).stdout
    row = next(line for line in table.splitlines() if "Scheduled" in line)
    assert row.split()[1:4] == ["Normal", "Scheduled", "pod/placed"], row
    assert f"Successfully assigned {NAMESPACE}/placed to {node}" in row
    described = lab.kubectl("describe", "pod", "placed", "-n", NAMESPACE).stdout
    line = next(line for line in described.splitlines() if "Successfully assigned" in line)
    assert line.split()[:2] == ["Normal", "Scheduled"] and "default-scheduler" in line, line
