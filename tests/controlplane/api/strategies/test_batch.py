"""Jobs and CronJobs: ``pkg/apis/batch/v1/defaults_test.go``, the rules of
``pkg/apis/batch/validation/validation_test.go`` (``TestValidateJob``, ``TestValidateCronJob``), the
generated selector of ``pkg/registry/batch/job/strategy_test.go``, and robfig/cron's parse errors."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api import cron
from controlplane.api.strategies import CronJobStrategy, JobStrategy
from tests.controlplane.api.strategies import create, stored, update

JOBS = JobStrategy()
CRONJOBS = CronJobStrategy()
UID = "11111111-1111-1111-1111-111111111111"
GENERATED = {
    "batch.kubernetes.io/controller-uid": UID,
    "batch.kubernetes.io/job-name": "pi",
    "controller-uid": UID,
    "job-name": "pi",
}


def template(restart: str | None = "Never", **labels: str) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [{"name": "pi", "image": "perl"}]}
    if restart is not None:
        pod_spec["restartPolicy"] = restart
    return {"metadata": {"labels": labels}, "spec": pod_spec} if labels else {"spec": pod_spec}


def job(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": template()}
    body.update(spec)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"}, "spec": body}


def cronjob(name: str = "hello", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "schedule": "*/1 * * * *",
        "jobTemplate": {"spec": {"template": template("OnFailure")}},
    }
    body.update(spec)
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name}, "spec": body}


def job_errors(**spec: Any) -> list[str]:
    return create(JOBS, job(**spec))[1]


def test_job_defaults_and_generated_selector() -> None:
    obj = stored(JOBS, job())
    spec = obj["spec"]
    assert {
        k: spec[k] for k in ("completions", "parallelism", "backoffLimit", "completionMode", "suspend")
    } == {
        "completions": 1,
        "parallelism": 1,
        "backoffLimit": 6,
        "completionMode": "NonIndexed",
        "suspend": False,
    }
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed" and spec["manualSelector"] is False
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}
    assert spec["template"]["metadata"]["labels"] == GENERATED
    # The Job shows its template's labels (upstream re-defaults on read).
    assert obj["metadata"]["labels"] == GENERATED
    assert spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    assert obj["status"] == {} and obj["metadata"]["generation"] == 1


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"parallelism": 3}, {"parallelism": 3}),  # completions stays unset: any success ends the Job
        ({"completions": 5}, {"completions": 5, "parallelism": 1}),
        ({"podFailurePolicy": {"rules": []}}, {"podReplacementPolicy": "Failed"}),
        (
            {"backoffLimitPerIndex": 1, "completionMode": "Indexed", "completions": 2},
            {"backoffLimit": 2147483647},
        ),
    ],
)
def test_job_defaults_table(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    """``TestSetDefaultJob``'s cases."""
    obj = create(JOBS, job(**spec))[0]
    assert {k: obj["spec"].get(k) for k in expected} == expected
    if "completions" not in spec and "parallelism" in spec:
        assert "completions" not in obj["spec"]


def test_job_labels_kept_when_set() -> None:
    body = job(template=template(app="pi"))
    body["metadata"]["labels"] = {"team": "a"}
    obj = stored(JOBS, body)
    assert obj["metadata"]["labels"] == {"team": "a"}
    assert obj["spec"]["template"]["metadata"]["labels"] == {"app": "pi", **GENERATED}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"template": template(None)},
            'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"',
        ),
        (
            {"template": template("Always")},
            'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"',
        ),
        ({"parallelism": -1}, "spec.parallelism: Invalid value: -1: must be greater than or equal to 0"),
        ({"completions": -1}, "spec.completions: Invalid value: -1: must be greater than or equal to 0"),
        ({"backoffLimit": -1}, "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"),
        (
            {"activeDeadlineSeconds": -1},
            "spec.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            {"ttlSecondsAfterFinished": -1},
            "spec.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            {"completionMode": "Bad"},
            'spec.completionMode: Unsupported value: "Bad": supported values: "NonIndexed", "Indexed"',
        ),
        (
            {"completionMode": "Indexed", "completions": None, "parallelism": 2},
            "spec.completions: Required value: when completion mode is Indexed",
        ),
        (
            {"podReplacementPolicy": "Sometimes"},
            'spec.podReplacementPolicy: Unsupported value: "Sometimes": supported values: '
            '"TerminatingOrFailed", "Failed"',
        ),
        (
            {"podFailurePolicy": {"rules": []}, "template": template("OnFailure")},
            'spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when '
            "podFailurePolicy is specified",
        ),
    ],
)
def test_job_validation(spec: dict[str, Any], message: str) -> None:
    assert message in job_errors(**spec)


def test_a_hand_written_selector_is_refused_unless_manual() -> None:
    errors = job_errors(selector={"matchLabels": {"app": "pi"}}, template=template(app="pi"))
    assert errors == [
        'spec.selector: Invalid value: {"matchLabels":{"app":"pi","batch.kubernetes.io/controller-uid":'
        f'"{UID}"}}}}: `selector` not auto-generated'
    ]
    manual = stored(
        JOBS, job(manualSelector=True, selector={"matchLabels": {"app": "pi"}}, template=template(app="pi"))
    )
    assert manual["spec"]["selector"] == {"matchLabels": {"app": "pi"}}
    assert manual["spec"]["template"]["metadata"]["labels"] == {"app": "pi"}
    assert (
        "`selector` does not match template `labels`"
        in job_errors(
            manualSelector=True, selector={"matchLabels": {"app": "x"}}, template=template(app="pi")
        )[0]
    )


def test_a_conflicting_generated_label_is_reported() -> None:
    errors = job_errors(template=template(**{"job-name": "other"}))
    assert any(
        e.startswith("spec.template.metadata.labels[job-name]: Invalid value:") and e.endswith("must be 'pi'")
        for e in errors
    ), errors


def test_job_updates_keep_the_selector_completions_and_a_started_template() -> None:
    old = stored(JOBS, job())
    old["status"] = {"startTime": "2025-01-01T00:00:01Z"}
    changed = job(completions=3, parallelism=2)
    changed["spec"]["selector"] = old["spec"]["selector"]
    changed["spec"]["template"] = old["spec"]["template"]
    new, errors = update(JOBS, changed, old)
    assert errors == ["spec.completions: Invalid value: 3: field is immutable"]
    assert new["metadata"]["generation"] == 2
    moved = job(selector=old["spec"]["selector"])
    moved["spec"]["template"] = {**old["spec"]["template"]}
    moved["spec"]["template"]["spec"] = {**old["spec"]["template"]["spec"], "nodeSelector": {"zone": "a"}}
    assert any(
        e.startswith("spec.template: Invalid value:") and "field is immutable" in e
        for e in update(JOBS, moved, old)[1]
    )
    # A suspended Job that never started may still say where its pods go.
    suspended = stored(JOBS, job(suspend=True))
    moved["spec"]["suspend"] = True
    assert update(JOBS, moved, suspended)[1] == []


def test_cronjob_defaults() -> None:
    obj = stored(CRONJOBS, cronjob())
    spec = obj["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"]) == ("Allow", False)
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    # The job template gets the pod defaults, not the Job's own (the Jobs get those when created).
    job_spec = spec["jobTemplate"]["spec"]
    assert "backoffLimit" not in job_spec and "selector" not in job_spec
    assert job_spec["template"]["spec"]["terminationGracePeriodSeconds"] == 30


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"schedule": ""}, "spec.schedule: Required value"),
        (
            {"schedule": "70 * * * *"},
            'spec.schedule: Invalid value: "70 * * * *": end of range (70) above maximum (59): 70',
        ),
        (
            {"schedule": "* * * *"},
            'spec.schedule: Invalid value: "* * * *": expected exactly 5 fields, found 4: [* * * *]',
        ),
        (
            {"schedule": "@fortnightly"},
            'spec.schedule: Invalid value: "@fortnightly": unrecognized descriptor: @fortnightly',
        ),
        (
            {"schedule": "TZ=UTC 0 * * * *"},
            'spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use '
            "timeZone field instead",
        ),
        (
            {"timeZone": "Mars/Olympus"},
            'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus',
        ),
        (
            {"timeZone": "Local"},
            'spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone as defined in '
            "https://www.iana.org/time-zones",
        ),
        (
            {"concurrencyPolicy": "Sometimes"},
            'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", '
            '"Replace"',
        ),
        (
            {"startingDeadlineSeconds": -1},
            "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            {"successfulJobsHistoryLimit": -1},
            "spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            {"jobTemplate": {"spec": {"template": template("Always")}}},
            "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "
            '"OnFailure", "Never"',
        ),
        (
            {"jobTemplate": {"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template()}}},
            'spec.jobTemplate.spec.selector: Invalid value: {"matchLabels":{"a":"b"}}: `selector` will be '
            "auto-generated",
        ),
    ],
)
def test_cronjob_validation(changes: dict[str, Any], message: str) -> None:
    assert message in create(CRONJOBS, cronjob(**changes))[1]


def test_cronjob_names_leave_room_for_the_job_suffix() -> None:
    name = "c" * 53
    assert (
        f'metadata.name: Invalid value: "{name}": must be no more than 52 characters'
        in create(CRONJOBS, cronjob(name))[1]
    )
    assert create(CRONJOBS, cronjob("c" * 52))[1] == []


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("*/5 * * * *", None),
        ("0 3 * * mon-fri", None),
        ("0 0 1 jan,jul ?", None),
        ("@hourly", None),
        ("@every 1h30m", None),
        ("0 0 * * 7", "end of range (7) above maximum (6): 7"),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("a * * * *", 'failed to parse int from a: strconv.Atoi: parsing "a": invalid syntax'),
        ("@every soon", 'failed to parse duration @every soon: time: invalid duration "soon"'),
        ("", "empty spec string"),
    ],
)
def test_schedule_errors_are_robfigs(spec: str, error: str | None) -> None:
    assert cron.schedule_error(spec) == error


def test_schedule_times() -> None:
    start = 1_767_225_630.0  # 2026-01-01T00:00:30Z, a Thursday
    assert cron.Schedule.parse("*/5 * * * *").next(start) == 1_767_225_900.0
    assert cron.Schedule.parse("@every 90s").next(start) == start + 90
    # Day-of-month and day-of-week are ORed when both are restricted: Friday the 2nd comes first.
    assert cron.Schedule.parse("0 0 13 * fri").next(start) == 1_767_312_000.0
    # A zone moves the hours: 09:00 in Paris is 08:00 UTC in winter.
    assert cron.Schedule.parse("0 9 * * *", "Europe/Paris").next(start) == 1_767_254_400.0
