"""kubectl 1.37 and the batch/v1 API: Jobs and CronJobs on the demo cluster of the session's lab.

The simulated kubelet runs ``echo hi`` to exit 0 at once and ``false`` to exit 1, so Jobs finish in
a second or two; kubectl's own ``wait`` does the waiting. The CronJob fires on the cluster clock at
the next whole minute, so its test waits for up to a minute.
"""

from __future__ import annotations

from tests.support.lab import LiveLab


def test_a_job_runs_to_completion_and_its_deletion_takes_its_pods(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    assert lab.kubectl("create", "job", "j1", "--image=busybox", *ns, "--", "echo", "hi").stdout == (
        "job.batch/j1 created\n"
    )
    lab.kubectl("wait", "--for=condition=complete", "job/j1", "--timeout=60s", *ns, timeout=90)
    header, row = lab.kubectl("get", "jobs", *ns).stdout.splitlines()
    assert header.split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert row.split()[:3] == ["j1", "Complete", "1/1"]
    wide = lab.kubectl("get", "job", "j1", "-o", "wide", *ns).stdout.splitlines()
    assert wide[0].split()[5:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert "batch.kubernetes.io/controller-uid=" in wide[1]
    [pod] = lab.kubectl_json("get", "pods", "-l", "job-name=j1", *ns)["items"]
    assert pod["status"]["phase"] == "Succeeded"
    assert lab.kubectl("logs", pod["metadata"]["name"], *ns).stdout == "hi\n"

    # The controller records its Completed event after it wrote the condition (the recorder sends
    # events on its own, as client-go's broadcaster): describe once the event is there.
    def completed() -> str | None:
        out = lab.kubectl("describe", "job", "j1", *ns).stdout
        return out if "Job completed" in out else None

    described = lab.eventually(completed, "the job controller's Completed event")
    assert "Pods Statuses:    0 Active (0 Ready) / 1 Succeeded / 0 Failed" in described
    assert "Completion Mode:  NonIndexed" in described
    assert f"Created pod: {pod['metadata']['name']}" in described and "Job completed" in described
    assert 'job.batch "j1" deleted' in lab.kubectl("delete", "job", "j1", *ns).stdout
    lab.kubectl("wait", "--for=delete", f"pod/{pod['metadata']['name']}", "--timeout=60s", *ns, timeout=90)


def test_a_failing_job_fails_with_its_reason(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    manifest = """
apiVersion: batch/v1
kind: Job
metadata: {name: fails}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox, command: [sh, -c, "exit 1"]}]
"""
    lab.kubectl("apply", "-f", "-", *ns, input=manifest)
    lab.kubectl("wait", "--for=condition=failed", "job/fails", "--timeout=60s", *ns, timeout=90)
    job = lab.kubectl_json("get", "job", "fails", *ns)
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert (failed["reason"], job["status"]["failed"]) == ("BackoffLimitExceeded", 1)
    assert lab.kubectl("get", "job", "fails", "--no-headers", *ns).stdout.split()[1:3] == ["Failed", "0/1"]
    invalid = lab.kubectl(
        "apply",
        "-f",
        "-",
        *ns,
        check=False,
        input=manifest.replace("restartPolicy: Never", "restartPolicy: Always"),
    )
    assert (
        'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'
        in invalid.stderr
    )


def test_a_cronjob_fires_and_a_job_can_be_made_from_it(lab: LiveLab, namespace: str) -> None:
    ns = ("-n", namespace)
    lab.kubectl(
        "create", "cronjob", "tick", "--image=busybox", "--schedule=*/1 * * * *", *ns, "--", "echo", "tick"
    )
    header, row = lab.kubectl("get", "cronjobs", *ns).stdout.splitlines()
    assert header.split() == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    assert row.split()[:7] == ["tick", "*/1", "*", "*", "*", "*", "<none>"]
    lab.kubectl("create", "job", "by-hand", "--from=cronjob/tick", *ns)
    made = lab.kubectl_json("get", "job", "by-hand", *ns)
    assert made["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert made["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    lab.kubectl("wait", "--for=condition=complete", "job/by-hand", "--timeout=60s", *ns, timeout=90)
    # The manual Job counts as a success of the CronJob's, though it was not scheduled.
    lab.kubectl(
        "wait",
        "--for=jsonpath={.status.lastSuccessfulTime}",
        "cronjob/tick",
        "--timeout=60s",
        *ns,
        timeout=90,
    )
    # The next whole minute of the cluster clock.
    lab.kubectl(
        "wait",
        "--for=jsonpath={.status.lastScheduleTime}",
        "cronjob/tick",
        "--timeout=100s",
        *ns,
        timeout=120,
    )
    cronjob = lab.kubectl_json("get", "cronjob", "tick", *ns)
    scheduled = cronjob["status"]["lastScheduleTime"]
    names = [j["metadata"]["name"] for j in lab.kubectl_json("get", "jobs", *ns)["items"]]
    fired = [n for n in names if n.startswith("tick-")]
    assert len(fired) == 1 and fired[0].removeprefix("tick-").isdigit()
    lab.kubectl("wait", "--for=condition=complete", f"job/{fired[0]}", "--timeout=60s", *ns, timeout=90)
    job = lab.kubectl_json("get", "job", fired[0], *ns)
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == scheduled
