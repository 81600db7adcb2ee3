"""kubectl 1.37 and CustomResourceDefinitions: a new resource served as soon as it is Established.

The definition is the Kubernetes documentation's ``crontabs.stable.example.com``, with printer
columns, a default, bounds and a status subresource; each test makes its own definition (a group per
test) so the tests do not depend on each other's objects.
"""

from __future__ import annotations

import json
import subprocess

from tests.support.lab import KUBECTL, LiveLab


def crd(group: str, *, scope: str = "Namespaced") -> str:
    return f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.{group}
spec:
  group: {group}
  scope: {scope}
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {{}}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Spec
      type: string
      description: The cron spec defining the interval a CronJob is run
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the CronTab runs and when.
            properties:
              cronSpec:
                type: string
                description: The schedule, in cron format.
                pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){{4}}$'
              image:
                type: string
              replicas:
                type: integer
                minimum: 1
                maximum: 10
                default: 1
          status:
            type: object
            properties:
              replicas:
                type: integer
"""


def crontab(group: str, name: str, extra: str = "") -> str:
    return f"""
apiVersion: {group}/v1
kind: CronTab
metadata:
  name: {name}
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
{extra}"""


def install(lab: LiveLab, group: str) -> None:
    created = lab.kubectl("apply", "-f", "-", input=crd(group)).stdout
    assert created == f"customresourcedefinition.apiextensions.k8s.io/crontabs.{group} created\n"
    lab.kubectl("wait", "--for", "condition=established", f"crd/crontabs.{group}", "--timeout=30s")


def test_a_definition_is_established_and_its_resource_served(lab: LiveLab) -> None:
    group = "stable.example.com"
    install(lab, group)
    got = lab.kubectl_json("get", "crd", f"crontabs.{group}")
    conditions = {c["type"]: c for c in got["status"]["conditions"]}
    assert conditions["NamesAccepted"]["reason"] == "NoConflicts"
    assert conditions["Established"]["status"] == "True"
    assert got["status"]["acceptedNames"]["listKind"] == "CronTabList"
    assert got["status"]["storedVersions"] == ["v1"]
    header = lab.kubectl("get", "crd", f"crontabs.{group}").stdout.splitlines()[0]
    assert header.split() == ["NAME", "CREATED", "AT"]

    resources = lab.kubectl("api-resources", f"--api-group={group}").stdout.splitlines()
    assert resources[1].split() == ["crontabs", "ct", f"{group}/v1", "true", "CronTab"]

    assert lab.kubectl("apply", "-f", "-", input=crontab(group, "my-new-cron-object")).stdout == (
        f"crontab.{group}/my-new-cron-object created\n"
    )
    got = lab.kubectl_json("get", "crontab", "my-new-cron-object")
    assert got["spec"]["replicas"] == 1  # the schema's default
    assert got["metadata"]["generation"] == 1
    header, row = lab.kubectl("get", "ct").stdout.splitlines()
    assert header.split() == ["NAME", "SPEC", "REPLICAS", "AGE"]
    assert row.split()[:6] == ["my-new-cron-object", "*", "*", "*", "*", "*/5"]
    assert row.split()[6] == "1"

    patched = lab.kubectl(
        "patch", "crontab", "my-new-cron-object", "--type=merge", "-p", '{"spec":{"replicas":3}}'
    )
    assert patched.stdout == f"crontab.{group}/my-new-cron-object patched\n"
    lab.kubectl(
        "patch",
        "crontab",
        "my-new-cron-object",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/image","value":"v2"}]',
    )
    got = lab.kubectl_json("get", "crontab", "my-new-cron-object")
    assert (got["spec"]["replicas"], got["spec"]["image"], got["metadata"]["generation"]) == (3, "v2", 3)
    strategic = lab.kubectl(
        "patch", "crontab", "my-new-cron-object", "-p", '{"spec":{"replicas":4}}', check=False
    )
    assert strategic.returncode != 0
    assert (
        "accepted media types include: application/json-patch+json, application/merge-patch+json, "
        "application/apply-patch+yaml"
    ) in strategic.stderr
    reapplied = lab.kubectl("apply", "-f", "-", input=crontab(group, "my-new-cron-object", "  replicas: 5\n"))
    assert reapplied.stdout == f"crontab.{group}/my-new-cron-object configured\n"
    lab.kubectl("label", "crontab", "my-new-cron-object", "app=cron")
    assert lab.kubectl_json("get", "crontabs", "-l", "app=cron")["items"][0]["spec"]["replicas"] == 5
    selected = lab.kubectl_json("get", "crontabs", "--field-selector", "metadata.name=my-new-cron-object")
    assert [i["metadata"]["name"] for i in selected["items"]] == ["my-new-cron-object"]
    assert lab.kubectl_json("get", "crontabs", "-l", "app=none")["items"] == []

    deleted = lab.kubectl("delete", "crontab", "my-new-cron-object").stdout
    assert deleted == f'crontab.{group} "my-new-cron-object" deleted from default namespace\n'


def test_the_schema_validates_prunes_and_explains(lab: LiveLab) -> None:
    group = "validation.example.com"
    install(lab, group)
    refused = lab.kubectl("apply", "-f", "-", input=crontab(group, "big", "  replicas: 15\n"), check=False)
    assert refused.returncode != 0
    assert "spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10" in (
        refused.stderr
    )
    bad_type = lab.kubectl("apply", "-f", "-", input=crontab(group, "bad", "  replicas: many\n"), check=False)
    assert 'spec.replicas in body must be of type integer: "string"' in bad_type.stderr

    strict = lab.kubectl("create", "-f", "-", input=crontab(group, "extra", "  color: blue\n"), check=False)
    assert strict.returncode != 0
    assert 'strict decoding error: unknown field "spec.color"' in strict.stderr
    lab.kubectl("create", "--validate=false", "-f", "-", input=crontab(group, "extra", "  color: blue\n"))
    assert "color" not in lab.kubectl_json("get", f"crontabs.{group}", "extra")["spec"]

    explained = lab.kubectl("explain", f"crontabs.{group}.spec").stdout
    assert "What the CronTab runs and when." in explained
    assert "cronSpec\t<string>" in explained
    assert "The schedule, in cron format." in explained


def test_status_and_scale_are_written_through_their_subresources(lab: LiveLab) -> None:
    group = "status.example.com"
    install(lab, group)
    lab.kubectl("create", "-f", "-", input=crontab(group, "s1", "status:\n  replicas: 5\n"))
    got = lab.kubectl_json("get", f"crontabs.{group}", "s1")
    assert "status" not in got  # ignored on the main endpoint
    lab.kubectl(
        "patch",
        f"crontabs.{group}",
        "s1",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"replicas":2}}',
    )
    got = lab.kubectl_json("get", f"crontabs.{group}", "s1")
    assert got["status"] == {"replicas": 2}
    assert got["metadata"]["generation"] == 1

    scaled = lab.kubectl("scale", f"crontabs.{group}", "s1", "--replicas=4")
    assert scaled.stdout == f"crontab.{group}/s1 scaled\n"
    scale = lab.kubectl_json("get", f"crontabs.{group}", "s1", "--subresource=scale")
    assert (scale["kind"], scale["spec"], scale["status"]) == (
        "Scale",
        {"replicas": 4},
        {"replicas": 2},  # no labelSelectorPath: ScaleStatus.selector is omitempty
    )
    too_many = lab.kubectl("scale", f"crontabs.{group}", "s1", "--replicas=11", check=False)
    assert "spec.replicas in body should be less than or equal to 10" in too_many.stderr


def test_a_watch_sees_changes(lab: LiveLab) -> None:
    group = "watch.example.com"
    install(lab, group)
    lab.kubectl("create", "-f", "-", input=crontab(group, "w1"))
    command = [
        str(KUBECTL),
        "--kubeconfig",
        str(lab.kubeconfig),
        "get",
        f"crontabs.{group}",
        "-w",
        "-o",
        "name",
    ]
    command += ["--request-timeout=20s"]
    watcher = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert watcher.stdout is not None
        assert watcher.stdout.readline() == f"crontab.{group}/w1\n"  # the initial list
        lab.kubectl("create", "-f", "-", input=crontab(group, "w2"))
        assert watcher.stdout.readline() == f"crontab.{group}/w2\n"
    finally:
        watcher.kill()
        watcher.wait()


def test_deleting_the_definition_deletes_its_objects(lab: LiveLab) -> None:
    group = "cleanup.example.com"
    install(lab, group)
    for name in ("c1", "c2"):
        lab.kubectl("create", "-f", "-", input=crontab(group, name))
    lab.kubectl("create", "namespace", "crd-cleanup")
    lab.kubectl("create", "-n", "crd-cleanup", "-f", "-", input=crontab(group, "c3"))
    assert len(lab.kubectl_json("get", f"crontabs.{group}", "-A")["items"]) == 3
    lab.kubectl("delete", "crd", f"crontabs.{group}", "--timeout=60s")
    gone = lab.kubectl("get", f"crontabs.{group}", "-A", check=False)
    assert gone.returncode != 0
    assert "the server doesn't have a resource type" in gone.stderr
    # Made again, the definition serves no object left over from before.
    install(lab, group)
    assert lab.kubectl_json("get", f"crontabs.{group}", "-A")["items"] == []
    lab.kubectl("delete", "namespace", "crd-cleanup", "--wait=false")


def test_a_definition_that_breaks_the_rules_is_refused(lab: LiveLab) -> None:
    broken = crd("broken.example.com").replace(
        "name: crontabs.broken.example.com", "name: crontab.broken.example.com"
    )
    broken = broken.replace(
        "            properties:\n              cronSpec:",
        "            properties:\n              cronSpec:",
        1,
    )
    refused = lab.kubectl("apply", "-f", "-", input=broken, check=False)
    assert refused.returncode != 0
    assert (
        'metadata.name: Invalid value: "crontab.broken.example.com": must be spec.names.plural+"."+spec.group'
        in (refused.stderr)
    )
    untyped = crd("untyped.example.com").replace(
        "              image:\n                type: string\n",
        "              image:\n                description: no type\n",
    )
    refused = lab.kubectl("apply", "-f", "-", input=untyped, check=False)
    assert (
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[image].type: Required value: "
        "must not be empty for specified object fields"
    ) in refused.stderr
    assert json.loads(lab.kubectl("get", "crd", "-o", "json").stdout)["kind"] == "List"


def test_server_side_apply_and_a_second_version(lab: LiveLab) -> None:
    group = "versions.example.com"
    two_versions = crd(group).replace(
        "  versions:\n  - name: v1\n    served: true\n    storage: true\n",
        "  versions:\n  - name: v1beta1\n    served: true\n    storage: false\n"
        "    schema:\n      openAPIV3Schema:\n        type: object\n"
        "        x-kubernetes-preserve-unknown-fields: true\n"
        "  - name: v1\n    served: true\n    storage: true\n",
    )
    lab.kubectl("apply", "-f", "-", input=two_versions)
    lab.kubectl("wait", "--for", "condition=established", f"crd/crontabs.{group}", "--timeout=30s")
    old = crontab(group, "old").replace(f"apiVersion: {group}/v1\n", f"apiVersion: {group}/v1beta1\n")
    lab.kubectl("create", "-f", "-", input=old)
    assert lab.kubectl_json("get", f"crontabs.v1.{group}", "old")["apiVersion"] == f"{group}/v1"
    assert lab.kubectl_json("get", f"crontabs.v1beta1.{group}", "old")["apiVersion"] == f"{group}/v1beta1"

    applied = lab.kubectl("apply", "--server-side", "-f", "-", input=crontab(group, "ssa"))
    assert applied.stdout == f"crontab.{group}/ssa serverside-applied\n"
    got = lab.kubectl_json("get", f"crontabs.v1.{group}", "ssa")
    assert got["spec"]["image"] == "my-awesome-cron-image"


def test_deleting_a_namespace_deletes_its_custom_objects(lab: LiveLab) -> None:
    group = "namespaced.example.com"
    install(lab, group)
    lab.kubectl("create", "namespace", "crd-namespace")
    lab.kubectl("create", "-n", "crd-namespace", "-f", "-", input=crontab(group, "n1"))
    lab.kubectl("delete", "namespace", "crd-namespace", "--timeout=60s", timeout=90)
    assert lab.kubectl_json("get", f"crontabs.{group}", "-A")["items"] == []


def test_the_garbage_collector_deletes_the_dependents_of_a_custom_object(lab: LiveLab) -> None:
    group = "owners.example.com"
    install(lab, group)
    lab.kubectl("create", "-f", "-", input=crontab(group, "owner"))
    owner = lab.kubectl_json("get", f"crontabs.{group}", "owner")
    dependent = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "owned-by-a-crontab",
            "ownerReferences": [
                {
                    "apiVersion": f"{group}/v1",
                    "kind": "CronTab",
                    "name": "owner",
                    "uid": owner["metadata"]["uid"],
                }
            ],
        },
    }
    lab.kubectl("create", "-f", "-", input=json.dumps(dependent))
    lab.kubectl("delete", f"crontabs.{group}", "owner")
    lab.kubectl("wait", "--for=delete", "configmap/owned-by-a-crontab", "--timeout=60s", timeout=90)
