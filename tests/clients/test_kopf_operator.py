"""Kopf, unmodified, runs the documented operator (docs/examples/kopf_operator.py) against a live lab.

`kopf run --standalone` is a separate process speaking aiohttp to the API port, as a student's
operator would: it lists and watches the custom resource (with bookmarks) and the definitions,
adds and removes its finalizer by JSON patch (with a ``test`` of the resourceVersion),
merge-patches its annotation and the status subresource, and posts core/v1 Events. The steps are
awaited with `kubectl wait`; only what kubectl cannot wait for (Kopf's Events, posted in the
background, and a line of its log) is polled.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from docs.examples import kopf_operator
from tests.support.lab import ROOT, LiveLab

KOPF = Path(sys.executable).parent / "kopf"
EXAMPLE = ROOT / "docs" / "examples" / "kopf_operator.py"
FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"
LAST_HANDLED = "kopf.zalando.org/last-handled-configuration"

GREETING = """
apiVersion: kubelab.example/v1
kind: Greeting
metadata:
  name: hello
spec:
  message: Hello
  replicas: 2
"""


@dataclass
class Operator:
    process: subprocess.Popen[bytes]
    log: Path


@pytest.fixture
def operator(lab: LiveLab, namespace: str, tmp_path: Path) -> Iterator[Operator]:
    """The CRD installed, and `kopf run` watching the test's namespace."""
    lab.kubectl("apply", "-f", "-", input=yaml.safe_dump(kopf_operator.CRD))
    lab.kubectl("wait", "--for", "condition=established", "crd/greetings.kubelab.example", "--timeout=30s")
    log = tmp_path / "kopf.log"
    command = [str(KOPF), "run", "--standalone", "--verbose", "--namespace", namespace, str(EXAMPLE)]
    env = {**os.environ, "KUBECONFIG": str(lab.kubeconfig)}
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield Operator(process, log)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        print(log.read_text())  # shown by pytest when the test fails


def test_kopf_creates_updates_and_lets_the_collector_delete_the_configmap(
    lab: LiveLab, namespace: str, operator: Operator
) -> None:
    ns = ("-n", namespace)
    assert lab.kubectl("create", *ns, "-f", "-", input=GREETING).stdout == (
        "greeting.kubelab.example/hello created\n"
    )
    lab.kubectl(
        "wait", *ns, "greeting/hello", "--for=jsonpath={.status.observedGeneration}=1", "--timeout=60s"
    )

    greeting = lab.kubectl_json("get", *ns, "greeting", "hello")
    assert greeting["status"] == {"configMap": "hello-greeting", "observedGeneration": 1}
    assert FINALIZER in greeting["metadata"]["finalizers"]
    assert '"message":"Hello"' in greeting["metadata"]["annotations"][LAST_HANDLED]
    configmap = lab.kubectl_json("get", *ns, "configmap", "hello-greeting")
    assert configmap["data"] == {"message": "Hello", "replicas": "2", "greeting": "Hello\nHello"}
    assert configmap["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "kubelab.example/v1",
            "kind": "Greeting",
            "name": "hello",
            "uid": greeting["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    header, row = lab.kubectl("get", *ns, "greetings").stdout.splitlines()
    assert header.split() == ["NAME", "MESSAGE", "REPLICAS", "CONFIGMAP", "AGE"]
    assert row.split()[:4] == ["hello", "Hello", "2", "hello-greeting"]

    lab.kubectl("patch", *ns, "greeting", "hello", "--type=merge", "-p", '{"spec":{"message":"Bonjour"}}')
    lab.kubectl(
        "wait", *ns, "greeting/hello", "--for=jsonpath={.status.observedGeneration}=2", "--timeout=60s"
    )
    configmap = lab.kubectl_json("get", *ns, "configmap", "hello-greeting")
    assert configmap["data"] == {"message": "Bonjour", "replicas": "2", "greeting": "Bonjour\nBonjour"}

    # The handler's kopf.info() Events: core/v1, posted in the background (so polled for).
    def reasons() -> set[str]:
        events = lab.kubectl_json("get", *ns, "events", "--field-selector", "involvedObject.name=hello")
        return {e["reason"] for e in events["items"] if e["source"]["component"] == "kopf"}

    lab.eventually(lambda: {"ConfigMapCreated", "ConfigMapUpdated"} <= reasons(), "Kopf's events")
    # Kopf sends Python's isoformat() (2026-12-02T13:25:45.634164+00:00); stored as upstream's Go
    # types write them back: metav1.Time in whole seconds, MicroTime with six digits, both in UTC.
    event = lab.kubectl_json("get", *ns, "events", "--field-selector", "reason=ConfigMapCreated")["items"][0]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", event["firstTimestamp"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", event["eventTime"])
    assert event["involvedObject"]["uid"] == greeting["metadata"]["uid"]

    # kubectl delete waits until the object is gone: until Kopf ran farewell() and removed its finalizer.
    deleted = lab.kubectl("delete", *ns, "greeting", "hello", "--timeout=60s")
    assert deleted.stdout == 'greeting.kubelab.example "hello" deleted from ' + f"{namespace} namespace\n"
    lab.kubectl("wait", *ns, "configmap/hello-greeting", "--for=delete", "--timeout=60s")

    lab.eventually(lambda: "Farewell" in reasons(), "the delete handler's Event")
    assert "Handler 'farewell' succeeded." in operator.log.read_text()

    # Deleting the definition deletes its objects: a Greeting with Kopf's finalizer goes once Kopf
    # has run farewell(). Then Kopf stops watching the resource (it watches the definitions too) and
    # carries on: the API server ends the watches of a resource no longer served only a second
    # later, as upstream's does, so Kopf hears of the deletion first.
    lab.kubectl("create", *ns, "-f", "-", input=GREETING.replace("name: hello", "name: again"))
    lab.kubectl(
        "wait", *ns, "greeting/again", "--for=jsonpath={.status.observedGeneration}=1", "--timeout=60s"
    )
    lab.kubectl("delete", "crd", "greetings.kubelab.example", "--timeout=60s")
    lab.kubectl("wait", *ns, "configmap/again-greeting", "--for=delete", "--timeout=60s")
    stopped = "Stopping the watch-stream for greetings.v1.kubelab.example"
    lab.eventually(lambda: stopped in operator.log.read_text(), "Kopf to stop watching greetings")
    assert operator.process.poll() is None, "kopf exited"
    log = operator.log.read_text()
    for trouble in ("Traceback", "has failed", "inconsistencies", "Failed to post an event", "[ERROR"):
        assert trouble not in log
