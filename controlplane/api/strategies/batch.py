"""Jobs and CronJobs (``batch/v1``): pods that are meant to finish, once or on a schedule.

A **Job** runs pods until ``completions`` of them have succeeded (exit 0), at most ``parallelism`` at
a time, retrying failed ones until ``backoffLimit`` failures, then gives up. Unlike a ReplicaSet it
waits for its pods to *end*, so its template's ``restartPolicy`` must be ``Never`` (a failed pod stays
failed and the Job makes a new one) or ``OnFailure`` (the kubelet restarts the container in place):
``Always``, the pod default, is refused (``spec.template.spec.restartPolicy: Required value: valid
values: "OnFailure", "Never"``).

**The generated selector.** Nobody writes a Job's selector. On create, unless ``manualSelector: true``,
the API server labels the template with the Job's uid and name, under the old and the new keys
(``controller-uid`` / ``batch.kubernetes.io/controller-uid``, ``job-name`` /
``batch.kubernetes.io/job-name``), and selects on ``batch.kubernetes.io/controller-uid``: a uid is
unique, so two Jobs of the same name, one deleted and one new, never share pods. A hand-written
selector is refused (``spec.selector: Invalid value: ...: `selector` not auto-generated``). The Job
itself gets its template's labels when it has none (``SetDefaults_Job``, which upstream runs again on
every read: that is how the generated labels reach ``metadata.labels``).

Defaults (``pkg/apis/batch/v1/defaults.go``): ``completions`` and ``parallelism`` 1 when both are
unset (``parallelism`` 1 when only it is), ``backoffLimit: 6``, ``completionMode: NonIndexed``,
``suspend: false``, ``manualSelector: false``, ``podReplacementPolicy: TerminatingOrFailed`` (or
``Failed`` with a ``podFailurePolicy``), and the pod-spec defaults in the template. The selector, the
completions, the completion mode and, once the Job has started, the template are immutable.

A **CronJob** holds a ``jobTemplate`` and a cron ``schedule`` (see :mod:`controlplane.api.cron`); its
controller creates a Job from the template at each scheduled time. Defaults: ``concurrencyPolicy:
Allow``, ``suspend: false``, ``successfulJobsHistoryLimit: 3``, ``failedJobsHistoryLimit: 1``. The
schedule must parse (robfig/cron's messages), ``TZ=`` in it is refused in favour of ``spec.timeZone``,
the job template may not have a selector (it is generated per Job), and the name may have at most 52
characters: the controller appends ``-<minutes since the epoch>`` (11 characters) to name each Job.

Upstream: ``pkg/apis/batch/validation/validation.go``, ``pkg/registry/batch/{job,cronjob}/strategy.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controlplane.api import cron
from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    FIELD_IMMUTABLE,
    CoreKindStrategy,
    as_dict,
    as_list,
    as_str,
    child,
    go_label_selector,
    go_pointer,
    go_string_map,
    invalid_go,
    is_int,
    key,
    nonnegative,
    selector_matches,
    semantic,
    spec_of,
    validate_label_selector,
)
from controlplane.api.strategies.pods import validate_pod_spec, validate_pod_template_meta
from controlplane.api.strategies.workloads import default_template, validate_meta_update
from controlplane.api.validation import FieldError, invalid, not_supported, required

# Labels and annotations of upstream's k8s.io/api/batch/v1 types.go.
LEGACY_CONTROLLER_UID_LABEL: Final = "controller-uid"
LEGACY_JOB_NAME_LABEL: Final = "job-name"
CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
#: The finalizer the Job controller puts on its pods so that none is removed before it is counted.
JOB_TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"
CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION: Final = "batch.kubernetes.io/cronjob-scheduled-timestamp"

COMPLETION_MODES: Final = ["NonIndexed", "Indexed"]
POD_REPLACEMENT_POLICIES: Final = ["TerminatingOrFailed", "Failed"]
CONCURRENCY_POLICIES: Final = ["Allow", "Forbid", "Replace"]
JOB_RESTART_POLICIES: Final = ["OnFailure", "Never"]
#: ``maxParallelismForIndexedJob``.
MAX_PARALLELISM_INDEXED: Final = 100_000
#: A CronJob's Job is named ``<cronjob>-<8-digit minutes>``, and a Job name must stay a DNS label.
MAX_CRONJOB_NAME_LENGTH: Final = 63 - 11
#: Pod template fields a suspended Job that never started may still change
#: (``JobMutableSchedulingDirectives``): where its pods will run.
MUTABLE_SCHEDULING_FIELDS: Final = ("nodeSelector", "affinity", "tolerations", "schedulingGates")


def _template(spec: Mapping[str, Any]) -> dict[str, Any]:
    return as_dict(spec.get("template"))


def default_job(obj: Object) -> None:
    """``SetDefaults_Job``."""
    spec = spec_of(obj)
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    template_labels = as_dict(as_dict(_template(spec).get("metadata")).get("labels"))
    if template_labels and not obj["metadata"].get("labels"):
        obj["metadata"]["labels"] = dict(template_labels)
    if spec.get("completionMode") is None:
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    policy = spec.get("podFailurePolicy")
    if isinstance(policy, dict):
        for rule in as_list(policy.get("rules")):
            for pattern in as_list(as_dict(rule).get("onPodConditions")):
                if isinstance(pattern, dict) and not pattern.get("status"):
                    pattern["status"] = "True"
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if policy is not None else "TerminatingOrFailed"
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    default_template(spec)


def generate_selector(obj: Object) -> None:
    """``generateSelector``: label the template with the Job's uid and name, select on the uid.

    A label the user already set is left as it is: validation then says it is wrong, if it is.
    """
    spec = spec_of(obj)
    meta = obj["metadata"]
    template = spec.setdefault("template", {})
    template_meta = template.setdefault("metadata", {})
    if not isinstance(template_meta.get("labels"), dict):
        template_meta["labels"] = {}
    labels = template_meta["labels"]
    for label in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(label, as_str(meta.get("name")))
    for label in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
        labels.setdefault(label, as_str(meta.get("uid")))
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    if not isinstance(selector.get("matchLabels"), dict):
        selector["matchLabels"] = {}
    selector["matchLabels"].setdefault(CONTROLLER_UID_LABEL, as_str(meta.get("uid")))


# -- validation ------------------------------------------------------------------------------------


def _has_label(template: Mapping[str, Any], path: str, label: str, expected: str) -> list[FieldError]:
    """``ValidateHasLabel``."""
    labels = as_dict(as_dict(template.get("metadata")).get("labels"))
    field = key(child(path, "labels"), label)
    if label not in labels:
        return [required(field, expected)]
    if labels[label] != expected:
        return [invalid_go(field, go_string_map(labels), f"must be '{expected}'", labels)]
    return []


def validate_generated_selector(obj: Object) -> list[FieldError]:
    """``ValidateGeneratedSelector``: the generated labels are on the template, the selector picks them."""
    spec = as_dict(obj.get("spec"))
    if spec.get("manualSelector") is True or spec.get("selector") is None:
        return []
    meta = obj["metadata"]
    uid, name = as_str(meta.get("uid")), as_str(meta.get("name"))
    errors: list[FieldError] = []
    if not uid:
        errors.append(required("metadata.uid"))
    template = _template(spec)
    path = "spec.template.metadata"
    errors += _has_label(template, path, LEGACY_CONTROLLER_UID_LABEL, uid)
    errors += _has_label(template, path, LEGACY_JOB_NAME_LABEL, name)
    errors += _has_label(template, path, CONTROLLER_UID_LABEL, uid)
    errors += _has_label(template, path, JOB_NAME_LABEL, name)
    selector = as_dict(spec.get("selector"))
    if not validate_label_selector(selector, "spec.selector") and not selector_matches(
        selector, {CONTROLLER_UID_LABEL: uid}
    ):
        errors.append(
            invalid_go(
                "spec.selector", go_label_selector(selector), "`selector` not auto-generated", selector
            )
        )
    return errors


def _validate_job_spec_fields(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateJobSpec``: counts, completion mode, replacement policy, the template's restart policy."""
    errors: list[FieldError] = []
    for field in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit"):
        errors += nonnegative(spec.get(field), child(path, field))
    errors += nonnegative(spec.get("ttlSecondsAfterFinished"), child(path, "ttlSecondsAfterFinished"))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in COMPLETION_MODES:
            errors.append(not_supported(child(path, "completionMode"), mode, COMPLETION_MODES))
        if mode == "Indexed":
            if spec.get("completions") is None:
                errors.append(required(child(path, "completions"), "when completion mode is Indexed"))
            parallelism = spec.get("parallelism")
            if is_int(parallelism) and parallelism > MAX_PARALLELISM_INDEXED:
                errors.append(
                    invalid(
                        child(path, "parallelism"),
                        parallelism,
                        f"must be less than or equal to {MAX_PARALLELISM_INDEXED} when completion mode is "
                        "Indexed",
                    )
                )
    if spec.get("backoffLimitPerIndex") is not None:
        errors += nonnegative(spec.get("backoffLimitPerIndex"), child(path, "backoffLimitPerIndex"))
        if mode != "Indexed":
            errors.append(
                invalid(
                    child(path, "backoffLimitPerIndex"),
                    spec.get("backoffLimitPerIndex"),
                    "requires indexed completion mode",
                )
            )
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        if replacement not in POD_REPLACEMENT_POLICIES:
            errors.append(
                not_supported(child(path, "podReplacementPolicy"), replacement, POD_REPLACEMENT_POLICIES)
            )
        elif spec.get("podFailurePolicy") is not None and replacement != "Failed":
            errors.append(not_supported(child(path, "podReplacementPolicy"), replacement, ["Failed"]))
    template = _template(spec)
    template_path = child(path, "template")
    pod_spec = as_dict(template.get("spec"))
    errors += validate_pod_template_meta(template, template_path)
    errors += validate_pod_spec(pod_spec, child(template_path, "spec"), is_pod=False)
    restart = pod_spec.get("restartPolicy")
    restart_path = child(template_path, "spec.restartPolicy")
    has_failure_policy = spec.get("podFailurePolicy") is not None
    # The pod default is Always, so an unset restartPolicy reads "Always" here: it is required.
    if restart in (None, "", "Always"):
        detail = (
            'only "Never" is supported when podFailurePolicy is specified'
            if has_failure_policy
            else 'valid values: "OnFailure", "Never"'
        )
        errors.append(required(restart_path, detail))
    elif restart not in JOB_RESTART_POLICIES:
        errors.append(not_supported(restart_path, restart, JOB_RESTART_POLICIES))
    elif has_failure_policy and restart != "Never":
        errors.append(
            invalid(restart_path, restart, 'only "Never" is supported when podFailurePolicy is specified')
        )
    return errors


def validate_job_spec(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateJobSpec``: the fields, a valid selector, and a selector that matches the template."""
    errors = _validate_job_spec_fields(spec, path)
    selector = spec.get("selector")
    selector_path = child(path, "selector")
    if selector is None:
        errors.append(required(selector_path))
        return errors
    selector_errors = validate_label_selector(selector, selector_path)
    errors += selector_errors
    labels = as_dict(_template(spec).get("metadata")).get("labels")
    if not selector_errors and not selector_matches(as_dict(selector), as_dict(labels)):
        errors.append(
            invalid_go(
                child(path, "template.metadata.labels"),
                go_string_map(labels),
                "`selector` does not match template `labels`",
                labels,
            )
        )
    return errors


def _template_update_allowed(spec: Mapping[str, Any], old_spec: Mapping[str, Any], started: bool) -> bool:
    """``validatePodTemplateUpdate``: a suspended Job that never started may move its pods."""
    new_template, old_template = _template(spec), _template(old_spec)
    if semantic(new_template) == semantic(old_template):
        return True
    if not (old_spec.get("suspend") is True and not started):
        return False

    # Everything but the scheduling directives and the template's labels and annotations must agree.
    def without_directives(template: Mapping[str, Any]) -> Any:
        pod_spec = {
            k: v for k, v in as_dict(template.get("spec")).items() if k not in MUTABLE_SCHEDULING_FIELDS
        }
        meta = {
            k: v for k, v in as_dict(template.get("metadata")).items() if k not in ("labels", "annotations")
        }
        return semantic({"metadata": meta, "spec": pod_spec})

    return bool(without_directives(new_template) == without_directives(old_template))


def validate_job_spec_update(obj: Object, old: Object) -> list[FieldError]:
    """``ValidateJobSpecUpdate``: what may not change once a Job exists."""
    spec, old_spec = as_dict(obj.get("spec")), as_dict(old.get("spec"))
    errors: list[FieldError] = []
    for field in ("completions", "completionMode", "backoffLimitPerIndex"):
        if semantic(spec.get(field)) != semantic(old_spec.get(field)):
            errors.append(invalid(child("spec", field), spec.get(field), FIELD_IMMUTABLE))
    if semantic(spec.get("selector")) != semantic(old_spec.get("selector")):
        selector = spec.get("selector")
        errors.append(invalid_go("spec.selector", go_label_selector(selector), FIELD_IMMUTABLE, selector))
    for field in ("podFailurePolicy", "successPolicy", "managedBy"):
        if semantic(spec.get(field)) != semantic(old_spec.get(field)):
            errors.append(invalid(child("spec", field), spec.get(field), FIELD_IMMUTABLE))
    started = as_dict(old.get("status")).get("startTime") is not None
    if not _template_update_allowed(spec, old_spec, started):
        errors.append(invalid("spec.template", _template(spec), FIELD_IMMUTABLE))
    return errors


def _validate_job_status(status: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateJobStatus``: the counters are never negative."""
    errors: list[FieldError] = []
    for field in ("active", "succeeded", "failed", "ready", "terminating"):
        errors += nonnegative(status.get(field), child("status", field))
    uncounted = as_dict(status.get("uncountedTerminatedPods"))
    for field in ("succeeded", "failed"):
        seen: set[str] = set()
        for i, uid in enumerate(as_list(uncounted.get(field))):
            path = f"status.uncountedTerminatedPods.{field}[{i}]"
            if not uid:
                errors.append(invalid(path, uid, "must not be empty"))
            elif uid in seen:
                errors.append(invalid(path, uid, "must not be duplicated"))
            seen.add(uid)
    return errors


class JobStrategy(CoreKindStrategy):
    """``pkg/registry/batch/job/strategy.go``."""

    status_subresource = True
    tracks_generation = True

    def default(self, obj: Object) -> None:
        default_job(obj)

    def reset_status(self, obj: Object) -> None:
        obj["status"] = {}

    def prepare_for_create(self, obj: Object) -> None:
        super().prepare_for_create(obj)
        if spec_of(obj).get("manualSelector") is not True:
            generate_selector(obj)
            # Upstream defaults again on every read, so a Job without labels shows its template's.
            labels = as_dict(as_dict(_template(spec_of(obj)).get("metadata")).get("labels"))
            if labels and not obj["metadata"].get("labels"):
                obj["metadata"]["labels"] = dict(labels)

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateJob``."""
        errors = self.validate_meta(obj, namespaced=namespaced)
        errors += validate_generated_selector(obj)
        return errors + validate_job_spec(as_dict(obj.get("spec")), "spec")

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateJobUpdate``."""
        errors = validate_meta_update(obj, old) + validate_generated_selector(obj)
        errors += validate_job_spec(as_dict(obj.get("spec")), "spec")
        return errors + validate_job_spec_update(obj, old)

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateJobUpdateStatus`` (its counter rules)."""
        errors = validate_meta_update(obj, old)
        return errors + _validate_job_status(as_dict(obj.get("status")))


# -- CronJobs --------------------------------------------------------------------------------------


def default_cronjob(obj: Object) -> None:
    """``SetDefaults_CronJob``, and the pod-spec defaults in the job template (not the Job's own
    defaults: the controller's Jobs get those when it creates them)."""
    spec = spec_of(obj)
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    job_template = spec.get("jobTemplate")
    if not isinstance(job_template, dict):
        job_template = spec["jobTemplate"] = {}
    job_spec = job_template.get("spec")
    if not isinstance(job_spec, dict):
        job_spec = job_template["spec"] = {}
    default_template(job_spec)


def validate_schedule(schedule: str, time_zone: Any, path: str, *, allow_tz: bool) -> list[FieldError]:
    """``validateScheduleFormat``."""
    errors: list[FieldError] = []
    problem = cron.schedule_error(schedule)
    if problem is not None:
        errors.append(invalid(path, schedule, problem))
    if allow_tz and "TZ" in schedule and time_zone is not None:
        errors.append(invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
    elif not allow_tz and "TZ" in schedule:
        errors.append(
            invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
        )
    return errors


def validate_time_zone(time_zone: Any, path: str) -> list[FieldError]:
    """``validateTimeZone``."""
    if time_zone is None:
        return []
    zone = as_str(time_zone)
    if not zone:
        return [invalid_go(path, go_pointer(zone), "timeZone must be nil or non-empty string", zone)]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not all(c.isalnum() or c in "-_+" for c in part):
            return [invalid(path, zone, f"unknown time zone {zone}")]
    if zone.lower() == "local":
        return [
            invalid(
                path,
                zone,
                "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            )
        ]
    problem = cron.time_zone_error(zone)
    return [invalid(path, zone, problem)] if problem else []


def validate_job_template(job_template: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateJobTemplateSpec``: a Job spec whose selector is left to be generated."""
    spec = as_dict(job_template.get("spec"))
    spec_path = child(path, "spec")
    errors = _validate_job_spec_fields(spec, spec_path)
    selector = spec.get("selector")
    if selector is not None:
        errors.append(
            invalid_go(
                child(spec_path, "selector"), go_label_selector(selector), "`selector` will be auto-generated"
            )
        )
    if spec.get("manualSelector") is True:
        errors.append(not_supported(child(spec_path, "manualSelector"), True, ["nil", "false"]))
    return errors


def validate_cronjob_spec(spec: Mapping[str, Any], old_spec: Mapping[str, Any] | None) -> list[FieldError]:
    """``validateCronJobSpec``."""
    errors: list[FieldError] = []
    schedule = spec.get("schedule")
    if not schedule:
        errors.append(required("spec.schedule"))
    else:
        allow_tz = old_spec is not None and "TZ" in as_str(old_spec.get("schedule"))
        errors += validate_schedule(
            as_str(schedule), spec.get("timeZone"), "spec.schedule", allow_tz=allow_tz
        )
    errors += nonnegative(spec.get("startingDeadlineSeconds"), "spec.startingDeadlineSeconds")
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        errors += validate_time_zone(spec.get("timeZone"), "spec.timeZone")
    policy = spec.get("concurrencyPolicy")
    if not policy:
        errors.append(required("spec.concurrencyPolicy"))
    elif policy not in CONCURRENCY_POLICIES:
        errors.append(not_supported("spec.concurrencyPolicy", policy, CONCURRENCY_POLICIES))
    errors += validate_job_template(as_dict(spec.get("jobTemplate")), "spec.jobTemplate")
    for field in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        errors += nonnegative(spec.get(field), child("spec", field))
    return errors


class CronJobStrategy(CoreKindStrategy):
    """``pkg/registry/batch/cronjob/strategy.go``."""

    status_subresource = True
    tracks_generation = True

    def default(self, obj: Object) -> None:
        default_cronjob(obj)

    def reset_status(self, obj: Object) -> None:
        obj["status"] = {}

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateCronJobCreate``."""
        errors = self.validate_meta(obj, namespaced=namespaced)
        errors += validate_cronjob_spec(as_dict(obj.get("spec")), None)
        name = as_str(obj["metadata"].get("name"))
        if len(name) > MAX_CRONJOB_NAME_LENGTH:
            errors.append(
                invalid("metadata.name", name, f"must be no more than {MAX_CRONJOB_NAME_LENGTH} characters")
            )
        return errors

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateCronJobUpdate``."""
        errors = validate_meta_update(obj, old)
        return errors + validate_cronjob_spec(as_dict(obj.get("spec")), as_dict(old.get("spec")))

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_meta_update(obj, old)


__all__ = [
    "CONTROLLER_UID_LABEL",
    "CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION",
    "JOB_NAME_LABEL",
    "JOB_TRACKING_FINALIZER",
    "LEGACY_CONTROLLER_UID_LABEL",
    "LEGACY_JOB_NAME_LABEL",
    "CronJobStrategy",
    "JobStrategy",
    "default_cronjob",
    "default_job",
    "generate_selector",
    "validate_job_spec",
]
