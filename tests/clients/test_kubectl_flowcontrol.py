"""kubectl against API Priority and Fairness: the bootstrap objects, their columns, a live edit."""

from __future__ import annotations

from tests.support.lab import LiveLab


def test_get_flowschemas_and_prioritylevelconfigurations_shows_the_bootstrap_set(lab: LiveLab) -> None:
    rows = [line.split() for line in lab.kubectl("get", "flowschemas").stdout.splitlines()]
    assert rows[0] == [
        "NAME",
        "PRIORITYLEVEL",
        "MATCHINGPRECEDENCE",
        "DISTINGUISHERMETHOD",
        "AGE",
        "MISSINGPL",
    ]
    by_name = {row[0]: row for row in rows[1:]}
    assert by_name["global-default"][1:4] == ["global-default", "9900", "ByUser"]
    assert by_name["kube-scheduler"][1:4] == ["workload-high", "800", "ByNamespace"]
    assert all(row[-1] == "False" for row in rows[1:])  # none dangling

    levels = [line.split() for line in lab.kubectl("get", "prioritylevelconfigurations").stdout.splitlines()]
    assert levels[0][:6] == [
        "NAME",
        "TYPE",
        "NOMINALCONCURRENCYSHARES",
        "QUEUES",
        "HANDSIZE",
        "QUEUELENGTHLIMIT",
    ]
    by_level = {row[0]: row for row in levels[1:]}
    assert set(by_level) == {
        "catch-all",
        "exempt",
        "global-default",
        "leader-election",
        "node-high",
        "system",
        "workload-high",
        "workload-low",
    }
    assert by_level["workload-low"][1:6] == ["Limited", "100", "128", "6", "50"]
    assert by_level["exempt"][1] == "Exempt"


def test_responses_name_the_flowschema_and_priority_level_by_uid(lab: LiveLab) -> None:
    uid = lab.kubectl("get", "flowschema", "exempt", "-o", "jsonpath={.metadata.uid}").stdout
    verbose = lab.kubectl("get", "namespaces", "-v=8", check=True).stderr
    assert (
        f"X-Kubernetes-Pf-Flowschema-Uid: {uid}" in verbose
        or f"X-Kubernetes-PF-FlowSchema-UID: {uid}" in verbose
    )
