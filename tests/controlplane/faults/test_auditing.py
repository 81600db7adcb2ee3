"""Faults in the cluster's audit log: each one applied and cleared is an Event naming who did it."""

from __future__ import annotations

import json
from typing import Any

from controlplane.faults import auditing
from controlplane.faults.book import Fault
from controlplane.faults.catalogue import check
from tests.controlplane.faults.conftest import Running


def fault_events(running: Running) -> list[dict[str, Any]]:
    auditor = running.cluster.apiserver.auditor if running.cluster.apiserver else None
    assert auditor is not None, "the cluster audits"
    lines = auditor.log.path.read_text().splitlines()
    events = [json.loads(line) for line in lines]
    return [e for e in events if (e.get("objectRef") or {}).get("apiGroup") == auditing.GROUP]


async def test_an_applied_and_a_cleared_fault_are_audited_with_who_asked(running: Running) -> None:
    name = running.cluster.name
    applied = await running.faults.apply(
        name, "stop-scheduler", reason="instructor alice of classroom k8s-101", actor="alice"
    )
    await running.faults.clear_all(name, reason="the lesson is over", actor="bob")
    assert running.cluster.apiserver is not None and running.cluster.apiserver.auditor is not None
    await running.cluster.apiserver.auditor.log.flush()

    create, delete = fault_events(running)
    assert (create["verb"], create["user"], create["stage"]) == (
        "create",
        {"username": "alice"},
        "ResponseComplete",
    )
    assert create["objectRef"] == {
        "resource": "faults",
        "name": applied.fault.id,
        "apiGroup": "kubelab.io",
        "apiVersion": "v1",
    }
    assert create["responseStatus"]["code"] == 201
    assert create["annotations"]["kubelab.io/fault-kind"] == "stop-scheduler"
    assert create["annotations"]["kubelab.io/reason"] == "instructor alice of classroom k8s-101"
    assert (delete["verb"], delete["user"]["username"]) == ("delete", "bob")
    assert delete["annotations"]["kubelab.io/reason"] == "the lesson is over"
    assert create["requestReceivedTimestamp"].endswith("Z")


def test_what_the_service_ends_by_itself_names_the_service() -> None:
    spec = check("stop-kubelet", {"node": "node-2"}, nodes=3)
    fault = Fault("f7", "demo", spec, 0.0, 60.0, "chapter 5")
    event = auditing.fault_event(fault, verb="delete", actor="", reason="its time is up", now=60.0)
    assert event["user"] == {"username": auditing.SERVICE_USER}
    assert event["annotations"]["kubelab.io/fault-parameters"] == "node=node-2"
    assert event["requestURI"] == "/apis/kubelab.io/v1/faults/f7"
    assert event["level"] == "Metadata"
