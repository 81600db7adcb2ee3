"""kubectl 1.37 and ResourceQuotas: the quota controller's status, as get and describe print it."""

from __future__ import annotations

import re

from tests.support.lab import LiveLab


def test_get_and_describe_quota_show_what_the_namespace_uses(lab: LiveLab) -> None:
    lab.kubectl("create", "namespace", "quota-team")
    ns = ("-n", "quota-team")
    lab.kubectl("create", "quota", "q", "--hard=configmaps=5,pods=10,requests.cpu=2", *ns)
    lab.kubectl("create", "configmap", "one", *ns)
    # kube-root-ca.crt, published in every namespace, counts as well
    lab.kubectl("wait", "--for=jsonpath={.status.used.configmaps}=2", "quota/q", "--timeout=60s", *ns)
    lines = [
        re.split(r"\s{2,}", line.strip()) for line in lab.kubectl("get", "quota", *ns).stdout.splitlines()
    ]
    assert lines[0] == ["NAME", "AGE", "REQUEST", "LIMIT"]
    assert (lines[1][0], lines[1][2]) == ("q", "configmaps: 2/5, pods: 0/10, requests.cpu: 0/2")
    described = lab.kubectl("describe", "quota", "q", *ns).stdout.splitlines()
    rows = [line.split() for line in described[described.index("Resource      Used  Hard") :]]
    assert rows[2:5] == [["configmaps", "2", "5"], ["pods", "0", "10"], ["requests.cpu", "0", "2"]]
