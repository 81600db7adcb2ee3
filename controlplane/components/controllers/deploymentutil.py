"""Deployment arithmetic: revisions, the pod-template-hash, rolling-update fenceposts and status.

A Deployment never touches pods. It owns **ReplicaSets**, one per version of its pod template, and
rolls from one to the next by changing their ``spec.replicas``; the ReplicaSet controller does the
rest. Everything the Deployment controller decides is arithmetic over those ReplicaSets, and it all
lives here, with no I/O, under upstream's names (``pkg/controller/deployment/util/deployment_util.go``,
``pkg/controller/deployment/{sync,rolling,recreate,progress}.go``):

- **which ReplicaSet is "new"**: the one whose template equals the Deployment's, ignoring the
  ``pod-template-hash`` label (``find_new_replica_set``); every other owned one is "old";
- **its name**: ``<deployment>-<pod-template-hash>``, the hash being FNV-32a over the template (plus
  ``status.collisionCount`` when a name was already taken), spelled with ``rand.SafeEncodeString``'s
  alphabet of consonants and digits (``compute_hash``);
- **revisions**: each new ReplicaSet gets ``deployment.kubernetes.io/revision`` = the highest old
  revision + 1. A rollback (``kubectl rollout undo`` copies an old ReplicaSet's template back into the
  Deployment) makes that *old* ReplicaSet the new one again, so it gets the next revision and keeps its
  earlier ones in ``deployment.kubernetes.io/revision-history``;
- **fenceposts**: ``maxSurge`` (how many pods above ``replicas`` may exist) and ``maxUnavailable``
  (how many below may be unavailable) are ints or percentages of ``replicas``; a percentage of surge
  rounds **up**, of unavailability **down**, and if both come out 0 unavailability becomes 1 so the
  rollout can move at all (``resolve_fenceposts``);
- **rolling steps**: scale the new ReplicaSet up while the total stays under ``replicas + maxSurge``
  (``new_rs_new_replicas``), scale old ones down while the available pods stay above ``replicas -
  maxUnavailable`` (``old_replica_sets_scale_down``);
- **status and conditions**: the counts summed over the ReplicaSets, ``Available`` and
  ``Progressing`` with upstream's reasons and messages (``calculate_status``, ``rollout_status``),
  exactly what ``kubectl rollout status`` reads.

What differs from upstream, and why:

- upstream hashes the Go struct with ``hashutil.DeepHashObject`` (a ``spew`` dump of every field); Go's
  memory layout cannot be reproduced in Python, so the hash here is FNV-32a over the template's
  canonical JSON (sorted keys, no spaces). Same algorithm, same collision handling, same alphabet and
  length, different values: ``nginx-7c5ddbdf54`` upstream is some other ten letters here;
- when rolling down old ReplicaSets, upstream counts each one's ``status.availableReplicas``. Between
  the moment an old ReplicaSet is scaled down and the moment its controller has deleted the pods and
  reported it, that status still counts pods that are about to go, and a second reconcile in that
  window could take away more than ``maxUnavailable`` allows. Here a ReplicaSet counts for at most
  its ``spec.replicas`` available pods (``available_after_scaling``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object, format_time, parse_timestamp
from controlplane.api.strategies.common import semantic

#: The revision of a Deployment's ReplicaSet, its rollout sequence number (``RevisionAnnotation``).
REVISION_ANNOTATION: Final = "deployment.kubernetes.io/revision"
#: Earlier revisions a ReplicaSet served, after a rollback made it new again.
REVISION_HISTORY_ANNOTATION: Final = "deployment.kubernetes.io/revision-history"
#: ``spec.replicas`` of the Deployment when it last sized this ReplicaSet.
DESIRED_REPLICAS_ANNOTATION: Final = "deployment.kubernetes.io/desired-replicas"
#: ``spec.replicas + maxSurge`` then: used to scale ReplicaSets in proportion during a rollout.
MAX_REPLICAS_ANNOTATION: Final = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED_CONFIG_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"
DEPRECATED_ROLLBACK_TO: Final = "deprecated.deployment.rollback.to"
#: The label that keeps the pods of two ReplicaSets of one Deployment apart.
DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: Final = "pod-template-hash"
#: ``revision-history`` is capped at this many characters (``maxRevHistoryLengthInChars``).
MAX_REV_HISTORY_LENGTH_IN_CHARS: Final = 2000
MAX_INT32: Final = 2**31 - 1

#: Annotations a Deployment does not copy to its ReplicaSets (``annotationsToSkip``).
ANNOTATIONS_TO_SKIP: Final = frozenset(
    {
        LAST_APPLIED_CONFIG_ANNOTATION,
        REVISION_ANNOTATION,
        REVISION_HISTORY_ANNOTATION,
        DESIRED_REPLICAS_ANNOTATION,
        MAX_REPLICAS_ANNOTATION,
        DEPRECATED_ROLLBACK_TO,
    }
)

# Condition types and reasons (deployment_util.go).
AVAILABLE: Final = "Available"
PROGRESSING: Final = "Progressing"
REPLICA_FAILURE: Final = "ReplicaFailure"
REPLICA_SET_UPDATED_REASON: Final = "ReplicaSetUpdated"
FAILED_RS_CREATE_REASON: Final = "ReplicaSetCreateError"
NEW_REPLICA_SET_REASON: Final = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON: Final = "FoundNewReplicaSet"
NEW_RS_AVAILABLE_REASON: Final = "NewReplicaSetAvailable"
TIMED_OUT_REASON: Final = "ProgressDeadlineExceeded"
PAUSED_DEPLOY_REASON: Final = "DeploymentPaused"
RESUMED_DEPLOY_REASON: Final = "DeploymentResumed"
MINIMUM_REPLICAS_AVAILABLE: Final = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE: Final = "MinimumReplicasUnavailable"

ROLLING_UPDATE: Final = "RollingUpdate"
RECREATE: Final = "Recreate"

# -- small accessors ---------------------------------------------------------------------------------


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    value = obj.get("spec")
    return value if isinstance(value, dict) else {}


def status(obj: Mapping[str, Any]) -> dict[str, Any]:
    value = obj.get("status")
    return value if isinstance(value, dict) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("uid") or "")


def spec_replicas(obj: Mapping[str, Any]) -> int:
    """``*spec.replicas`` (the API server defaults it to 1)."""
    value = spec(obj).get("replicas")
    return int(value) if isinstance(value, int) else 1


def status_count(obj: Mapping[str, Any] | None, field: str) -> int:
    if obj is None:
        return 0
    value = status(obj).get(field)
    return int(value) if isinstance(value, int) else 0


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    value = meta(obj).get("annotations")
    return value if isinstance(value, dict) else {}


# -- ordering (controller_utils.go) ------------------------------------------------------------------


def by_creation_timestamp(rs: Mapping[str, Any]) -> tuple[float, str]:
    """``ReplicaSetsByCreationTimestamp``: older first, then by name."""
    return (parse_timestamp(meta(rs).get("creationTimestamp")) or 0.0, name_of(rs))


def sort_by_creation(rss: Iterable[Object]) -> list[Object]:
    return sorted(rss, key=by_creation_timestamp)


def sort_by_size_newer(rss: Iterable[Object]) -> list[Object]:
    """``ReplicaSetsBySizeNewer``: larger first; of equal size, the newer first."""
    by_age = sort_by_creation(rss)[::-1]
    return sorted(by_age, key=lambda rs: -spec_replicas(rs))


def sort_by_size_older(rss: Iterable[Object]) -> list[Object]:
    """``ReplicaSetsBySizeOlder``: larger first; of equal size, the older first."""
    return sorted(sort_by_creation(rss), key=lambda rs: -spec_replicas(rs))


def sort_by_revision(rss: Iterable[Object]) -> list[Object]:
    """``ReplicaSetsByRevision``: lower revision first; equal (or unreadable) ones by age."""
    return sorted(sort_by_creation(rss), key=lambda rs: revision_or_none(rs) or 0)


def filter_active(rss: Iterable[Object | None]) -> list[Object]:
    """``FilterActiveReplicaSets``: those asking for at least one pod."""
    return [rs for rs in rss if rs is not None and spec_replicas(rs) > 0]


# -- int-or-percent and the fenceposts ---------------------------------------------------------------


def scaled_value(value: int | str | None, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``"25%"`` of ``total`` rounded."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ValueError(f"invalid value for IntOrString: {value!r}")
    if isinstance(value, int):
        return value
    if not value.endswith("%") or not value[:-1].isdigit():
        raise ValueError(
            f"invalid value for IntOrString: invalid type: string is not a percentage: {value!r}"
        )
    percent = int(value[:-1])
    # Integer arithmetic, so 29% of 100 is 29 (float math.ceil would give 30).
    return -(-percent * total // 100) if round_up else percent * total // 100


def resolve_fenceposts(
    max_surge: int | str | None, max_unavailable: int | str | None, desired: int
) -> tuple[int, int]:
    """``ResolveFenceposts``: (surge rounded up, unavailable rounded down); never both 0."""
    surge = scaled_value(max_surge if max_surge is not None else 0, desired, round_up=True)
    unavailable = scaled_value(max_unavailable if max_unavailable is not None else 0, desired, round_up=False)
    if surge == 0 and unavailable == 0:
        # Validation forbids both being 0, but rounding down may make maxUnavailable 0: allow one
        # unavailable pod, on the theory that surging might be impossible (quota).
        unavailable = 1
    return surge, unavailable


def is_rolling_update(d: Mapping[str, Any]) -> bool:
    strategy = spec(d).get("strategy") or {}
    return bool(strategy.get("type", ROLLING_UPDATE) == ROLLING_UPDATE)


def _rolling(d: Mapping[str, Any]) -> dict[str, Any]:
    rolling = (spec(d).get("strategy") or {}).get("rollingUpdate")
    return rolling if isinstance(rolling, dict) else {}


def max_surge(d: Mapping[str, Any]) -> int:
    """``MaxSurge``: pods allowed above ``spec.replicas`` (0 for Recreate)."""
    if not is_rolling_update(d):
        return 0
    rolling = _rolling(d)
    return resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), spec_replicas(d))[0]


def max_unavailable(d: Mapping[str, Any]) -> int:
    """``MaxUnavailable``: pods allowed to be unavailable (0 for Recreate or 0 replicas)."""
    replicas = spec_replicas(d)
    if not is_rolling_update(d) or replicas == 0:
        return 0
    rolling = _rolling(d)
    unavailable = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas)[1]
    return min(unavailable, replicas)


def min_available(d: Mapping[str, Any]) -> int:
    """``MinAvailable``."""
    if not is_rolling_update(d):
        return 0
    return spec_replicas(d) - max_unavailable(d)


# -- the pod-template-hash ---------------------------------------------------------------------------

#: ``k8s.io/apimachinery/pkg/util/rand``'s alphabet: no vowels (no words), no 0/1/3 (no look-alikes).
SAFE_ALPHANUMS: Final = "bcdfghjklmnpqrstvwxz2456789"

_FNV32_OFFSET: Final = 2166136261
_FNV32_PRIME: Final = 16777619


def fnv32a(data: bytes, start: int = _FNV32_OFFSET) -> int:
    """FNV-1a, 32 bits (Go's ``hash/fnv.New32a``)."""
    value = start
    for byte in data:
        value = ((value ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return value


def safe_encode_string(text: str) -> str:
    """``rand.SafeEncodeString``: each character mapped into ``SAFE_ALPHANUMS`` by its code point."""
    return "".join(SAFE_ALPHANUMS[ord(char) % len(SAFE_ALPHANUMS)] for char in text)


def compute_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """``controller.ComputeHash``: FNV-32a of the template (canonical JSON here, see the module doc),
    then ``collisionCount`` as 8 little-endian bytes, printed in decimal and safe-encoded."""
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    value = fnv32a(canonical.encode())
    if collision_count is not None:
        value = fnv32a((collision_count & 0xFFFFFFFF).to_bytes(4, "little") + bytes(4), value)
    return safe_encode_string(str(value))


def template_without_hash(template: Mapping[str, Any]) -> Object:
    """A copy of the template without the ``pod-template-hash`` label."""
    copied = deep_copy(dict(template))
    labels = (copied.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, None)
    return copied


def equal_ignore_hash(template1: Mapping[str, Any], template2: Mapping[str, Any]) -> bool:
    """``EqualIgnoreHash``: the same template, whatever their ``pod-template-hash`` labels say."""
    return bool(semantic(template_without_hash(template1)) == semantic(template_without_hash(template2)))


# -- finding the new and old ReplicaSets -------------------------------------------------------------


def find_new_replica_set(d: Mapping[str, Any], rs_list: Iterable[Object]) -> Object | None:
    """``FindNewReplicaSet``: the oldest ReplicaSet whose template is the Deployment's."""
    template = spec(d).get("template") or {}
    for rs in sort_by_creation(rs_list):
        if equal_ignore_hash(spec(rs).get("template") or {}, template):
            return rs
    return None


def find_old_replica_sets(
    d: Mapping[str, Any], rs_list: Sequence[Object]
) -> tuple[list[Object], list[Object]]:
    """``FindOldReplicaSets``: (old ones with pods wanted, all old ones)."""
    new_rs = find_new_replica_set(d, rs_list)
    required: list[Object] = []
    every: list[Object] = []
    for rs in rs_list:
        if new_rs is not None and uid_of(rs) == uid_of(new_rs):
            continue
        every.append(rs)
        if spec_replicas(rs) != 0:
            required.append(rs)
    return required, every


# -- revisions and annotations -----------------------------------------------------------------------


def revision_or_none(obj: Mapping[str, Any]) -> int | None:
    """``Revision``: the revision annotation (0 if absent); None if it is not a number."""
    value = annotations_of(obj).get(REVISION_ANNOTATION)
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        return None


def max_revision(rss: Iterable[Object]) -> int:
    """``MaxRevision``: the highest revision among ``rss`` (unreadable ones skipped)."""
    return max((r for r in (revision_or_none(rs) for rs in rss) if r is not None), default=0)


def last_revision(rss: Iterable[Object]) -> int:
    """``LastRevision``: the second highest revision (the one before the current)."""
    top = second = 0
    for rs in rss:
        value = revision_or_none(rs)
        if value is None:
            continue
        if value >= top:
            top, second = value, top
        elif value > second:
            second = value
    return second


def copy_deployment_annotations(d: Mapping[str, Any], rs: Object) -> bool:
    """``copyDeploymentAnnotationsToReplicaSet``: the Deployment's annotations (but the skipped ones)
    onto ``rs``; whether anything changed."""
    annotations = meta(rs).setdefault("annotations", {})
    changed = False
    for key, value in annotations_of(d).items():
        if key in ANNOTATIONS_TO_SKIP or annotations.get(key) == value:
            continue
        annotations[key] = value
        changed = True
    return changed


def set_replicas_annotations(rs: Object, desired: int, maximum: int) -> bool:
    """``SetReplicasAnnotations``: desired-replicas and max-replicas; whether they changed."""
    annotations = meta(rs).setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS_ANNOTATION, str(desired)), (MAX_REPLICAS_ANNOTATION, str(maximum))):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: Mapping[str, Any], desired: int, maximum: int) -> bool:
    annotations = annotations_of(rs)
    return annotations.get(DESIRED_REPLICAS_ANNOTATION) != str(desired) or annotations.get(
        MAX_REPLICAS_ANNOTATION
    ) != str(maximum)


def set_new_replica_set_annotations(
    d: Mapping[str, Any],
    rs: Object,
    new_revision: int,
    *,
    exists: bool,
    history_limit_chars: int = MAX_REV_HISTORY_LENGTH_IN_CHARS,
) -> bool:
    """``SetNewReplicaSetAnnotations``: copy the Deployment's annotations, raise the revision to
    ``new_revision`` (never lower it), remember the old one in revision-history (a rollback), and for
    a ReplicaSet about to be created the replicas annotations. Whether anything changed."""
    changed = copy_deployment_annotations(d, rs)
    annotations = meta(rs).setdefault("annotations", {})
    old_text = annotations.get(REVISION_ANNOTATION)
    had_revision = old_text is not None
    try:
        old_revision = int(old_text) if old_text else 0
    except ValueError:
        return False
    if old_revision < new_revision:
        annotations[REVISION_ANNOTATION] = str(new_revision)
        changed = True
        if had_revision:
            # Made new again by a rollback: keep the revisions it served before.
            history = annotations.get(REVISION_HISTORY_ANNOTATION, "")
            old_revisions = history.split(",") if history else []
            if not old_revisions:
                annotations[REVISION_HISTORY_ANNOTATION] = str(old_text)
            else:
                total = len(history) + len(str(old_text)) + 1
                start = 0
                while total > history_limit_chars and start < len(old_revisions):
                    total -= len(old_revisions[start]) + 1
                    start += 1
                if total <= history_limit_chars:
                    annotations[REVISION_HISTORY_ANNOTATION] = ",".join(
                        [*old_revisions[start:], str(old_text)]
                    )
    if not exists:
        replicas = spec_replicas(d)
        if set_replicas_annotations(rs, replicas, replicas + max_surge(d)):
            changed = True
    return changed


def desired_replicas_annotation(rs: Mapping[str, Any]) -> int | None:
    return _int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)


def max_replicas_annotation(rs: Mapping[str, Any]) -> int | None:
    return _int_annotation(rs, MAX_REPLICAS_ANNOTATION)


def _int_annotation(rs: Mapping[str, Any], key: str) -> int | None:
    value = annotations_of(rs).get(key)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


# -- building the new ReplicaSet ---------------------------------------------------------------------


def new_replica_set(
    d: Mapping[str, Any], old_rss: Sequence[Object], new_revision: int, *, controller_ref: Mapping[str, Any]
) -> Object:
    """The new ReplicaSet ``getNewReplicaSet`` creates: ``<deployment>-<hash>``, the hash as a label
    on it, its template and selector, sized by ``new_rs_new_replicas`` and annotated."""
    template = deep_copy(spec(d).get("template") or {})
    collision_count = status(d).get("collisionCount")
    pod_template_hash = compute_hash(template, collision_count if isinstance(collision_count, int) else None)
    template_meta = template.setdefault("metadata", {})
    labels = dict(template_meta.get("labels") or {})
    labels[DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY] = pod_template_hash
    template_meta["labels"] = labels
    selector = deep_copy(spec(d).get("selector") or {})
    match_labels = dict(selector.get("matchLabels") or {})
    match_labels[DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY] = pod_template_hash
    selector["matchLabels"] = match_labels
    rs_spec: Object = {"replicas": 0, "selector": selector, "template": template}
    min_ready = spec(d).get("minReadySeconds")
    if min_ready:
        rs_spec["minReadySeconds"] = min_ready
    rs: Object = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{name_of(d)}-{pod_template_hash}",
            "namespace": meta(d).get("namespace"),
            "labels": dict(labels),
            "ownerReferences": [dict(controller_ref)],
        },
        "spec": rs_spec,
    }
    rs_spec["replicas"] = new_rs_new_replicas(d, [*old_rss, rs], rs)
    set_new_replica_set_annotations(d, rs, new_revision, exists=False)
    return rs


def existing_new_replica_set_update(
    d: Mapping[str, Any], rs: Mapping[str, Any], new_revision: int
) -> Object | None:
    """For an existing new ReplicaSet: the updated copy to write when its annotations (revision, the
    Deployment's) or ``minReadySeconds`` are behind, else None."""
    rs_copy = deep_copy(dict(rs))
    annotations_updated = set_new_replica_set_annotations(d, rs_copy, new_revision, exists=True)
    min_ready = spec(d).get("minReadySeconds") or 0
    if annotations_updated or (spec(rs_copy).get("minReadySeconds") or 0) != min_ready:
        rs_copy.setdefault("spec", {})["minReadySeconds"] = min_ready
        return rs_copy
    return None


# -- scaling arithmetic ------------------------------------------------------------------------------


def replica_count(rss: Iterable[Object | None]) -> int:
    """``GetReplicaCountForReplicaSets``: the sum of ``spec.replicas``."""
    return sum(spec_replicas(rs) for rs in rss if rs is not None)


def actual_replica_count(rss: Iterable[Object | None]) -> int:
    """``GetActualReplicaCountForReplicaSets``: the sum of ``status.replicas``."""
    return sum(status_count(rs, "replicas") for rs in rss if rs is not None)


def ready_replica_count(rss: Iterable[Object | None]) -> int:
    return sum(status_count(rs, "readyReplicas") for rs in rss if rs is not None)


def available_replica_count(rss: Iterable[Object | None]) -> int:
    return sum(status_count(rs, "availableReplicas") for rs in rss if rs is not None)


def terminating_replica_count(rss: Iterable[Object | None]) -> int | None:
    """``GetTerminatingReplicaCountForReplicaSets``: None when no ReplicaSet reports the field."""
    values = [status(rs).get("terminatingReplicas") for rs in rss if rs is not None]
    reported = [v for v in values if isinstance(v, int)]
    return sum(reported) if reported else None


def new_rs_new_replicas(
    d: Mapping[str, Any], all_rss: Sequence[Object | None], new_rs: Mapping[str, Any]
) -> int:
    """``NewRSNewReplicas``: how big the new ReplicaSet may be now.

    RollingUpdate: grow it by what is left under ``replicas + maxSurge`` (counting every ReplicaSet's
    ``spec.replicas``), never past ``replicas``. Recreate: all of ``replicas`` at once.
    """
    replicas = spec_replicas(d)
    if is_rolling_update(d):
        surge = scaled_value(_rolling(d).get("maxSurge"), replicas, round_up=True)
        current = replica_count(all_rss)
        max_total = replicas + surge
        if current >= max_total:
            return spec_replicas(new_rs)
        scale_up = min(max_total - current, replicas - spec_replicas(new_rs))
        return spec_replicas(new_rs) + scale_up
    return replicas


def is_saturated(d: Mapping[str, Any], rs: Mapping[str, Any] | None) -> bool:
    """``IsSaturated``: the ReplicaSet has all of the Deployment's replicas, agreed and available."""
    if rs is None:
        return False
    desired = desired_replicas_annotation(rs)
    replicas = spec_replicas(d)
    return (
        desired is not None
        and spec_replicas(rs) == replicas
        and desired == replicas
        and status_count(rs, "availableReplicas") == replicas
    )


def available_after_scaling(rs: Mapping[str, Any]) -> int:
    """Available pods a ReplicaSet will still have once its controller catches up with its spec
    (upstream reads ``status.availableReplicas`` alone: see the module docstring)."""
    return min(status_count(rs, "availableReplicas"), spec_replicas(rs))


@dataclass(frozen=True)
class ScaleStep:
    """Scale ``rs`` to ``replicas``. ``always`` (proportional scaling) writes even an unchanged size
    when the replicas annotations are behind; otherwise an unchanged size is no write at all
    (``scaleReplicaSet`` vs ``scaleReplicaSetAndRecordEvent``)."""

    rs: Object
    replicas: int
    always: bool = False


def old_replica_sets_scale_down(
    d: Mapping[str, Any], all_rss: Sequence[Object], old_rss: Sequence[Object], new_rs: Mapping[str, Any]
) -> list[ScaleStep]:
    """``reconcileOldReplicaSets``: the steps that scale old ReplicaSets down during a rolling update.

    At most ``spec(all) - minAvailable - unavailable(new)`` pods may go: first unhealthy old pods (old
    ReplicaSets asking for more than they have available, oldest ReplicaSet first:
    ``cleanupUnhealthyReplicas``), then available ones as long as more than ``minAvailable`` remain
    (``scaleDownOldReplicaSetsForRollingUpdate``).
    """
    old_count = replica_count(old_rss)
    if old_count == 0:
        return []
    all_count = replica_count(all_rss)
    minimum = spec_replicas(d) - max_unavailable(d)
    new_unavailable = spec_replicas(new_rs) - status_count(new_rs, "availableReplicas")
    max_scaled_down = all_count - minimum - new_unavailable
    if max_scaled_down <= 0:
        return []
    steps: list[ScaleStep] = []
    sizes = {uid_of(rs) or name_of(rs): spec_replicas(rs) for rs in all_rss}
    ordered = sort_by_creation(old_rss)

    def key(rs: Mapping[str, Any]) -> str:
        return uid_of(rs) or name_of(rs)

    cleaned = 0
    for rs in ordered:
        if cleaned >= max_scaled_down:
            break
        size, available = sizes[key(rs)], status_count(rs, "availableReplicas")
        if size == 0 or size == available:
            continue
        count = min(max_scaled_down - cleaned, size - available)
        sizes[key(rs)] = size - count
        steps.append(ScaleStep(rs, size - count))
        cleaned += count
    available_now = sum(min(status_count(rs, "availableReplicas"), sizes[key(rs)]) for rs in all_rss)
    if available_now <= minimum:
        return steps
    to_scale_down = available_now - minimum
    scaled = 0
    for rs in ordered:
        if scaled >= to_scale_down:
            break
        size = sizes[key(rs)]
        if size == 0:
            continue
        count = min(size, to_scale_down - scaled)
        sizes[key(rs)] = size - count
        steps.append(ScaleStep(rs, size - count))
        scaled += count
    return steps


def find_active_or_latest(new_rs: Object | None, old_rss: Sequence[Object]) -> Object | None:
    """``FindActiveOrLatest``: the only active ReplicaSet, or the newest if none is; None if several."""
    if new_rs is None and not old_rss:
        return None
    olds = sort_by_creation(old_rss)[::-1]
    active = filter_active([*olds, new_rs])
    if not active:
        return new_rs if new_rs is not None else olds[0]
    if len(active) == 1:
        return active[0]
    return None


def _replica_set_fraction(rs: Mapping[str, Any], d: Mapping[str, Any]) -> int:
    """``getReplicaSetFraction``: this ReplicaSet's share of a resize, from its max-replicas annotation."""
    if spec_replicas(d) == 0:
        return -spec_replicas(rs)
    deployment_replicas = spec_replicas(d) + max_surge(d)
    annotated = max_replicas_annotation(rs)
    if annotated is None:
        annotated = status_count(d, "replicas")
    if annotated == 0:
        return 0
    new_size = spec_replicas(rs) * deployment_replicas / annotated
    # integer.RoundToInt32: half away from zero.
    rounded = math.floor(new_size + 0.5) if new_size >= 0 else -math.floor(-new_size + 0.5)
    return rounded - spec_replicas(rs)


def get_proportion(rs: Mapping[str, Any], d: Mapping[str, Any], to_add: int, added: int) -> int:
    """``GetProportion``: how many replicas this ReplicaSet gains (or loses) in a proportional resize."""
    if spec_replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _replica_set_fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def scale_steps(d: Mapping[str, Any], new_rs: Object | None, old_rss: Sequence[Object]) -> list[ScaleStep]:
    """``scale`` (sync.go): what a scaling event (or a paused Deployment) does to the ReplicaSets.

    One active ReplicaSet takes all of ``replicas``; a saturated new one means old ones go to 0;
    otherwise (mid-rollout) every active ReplicaSet grows or shrinks in proportion to its size, the
    leftover going to the largest.
    """
    active_or_latest = find_active_or_latest(new_rs, old_rss)
    replicas = spec_replicas(d)
    if active_or_latest is not None:
        if spec_replicas(active_or_latest) == replicas:
            return []
        return [ScaleStep(active_or_latest, replicas)]
    if is_saturated(d, new_rs):
        return [ScaleStep(old, 0) for old in filter_active(old_rss)]
    if not is_rolling_update(d):
        return []
    all_rss = filter_active([*old_rss, new_rs])
    allowed = replicas + max_surge(d) if replicas > 0 else 0
    to_add = allowed - replica_count(all_rss)
    if to_add > 0:
        all_rss = sort_by_size_newer(all_rss)
    elif to_add < 0:
        all_rss = sort_by_size_older(all_rss)
    added = 0
    sizes: list[int] = []
    for rs in all_rss:
        if to_add != 0:
            proportion = get_proportion(rs, d, to_add, added)
            sizes.append(spec_replicas(rs) + proportion)
            added += proportion
        else:
            sizes.append(spec_replicas(rs))
    if all_rss and to_add != 0:
        sizes[0] = max(0, sizes[0] + to_add - added)
    return [ScaleStep(rs, size, always=True) for rs, size in zip(all_rss, sizes, strict=True)]


def is_scaling_event(d: Mapping[str, Any], new_rs: Object | None, old_rss: Sequence[Object]) -> bool:
    """``isScalingEvent``: an active ReplicaSet was sized for another ``spec.replicas``."""
    replicas = spec_replicas(d)
    for rs in filter_active([*old_rss, new_rs]):
        desired = desired_replicas_annotation(rs)
        if desired is not None and desired != replicas:
            return True
    return False


def old_pods_running(
    new_rs: Mapping[str, Any] | None, old_rss: Sequence[Object], pod_map: Mapping[str, Sequence[Object]]
) -> bool:
    """``oldPodsRunning`` (recreate.go): any pod of an old ReplicaSet that is not finished, even one
    being deleted, keeps a Recreate rollout from starting the new pods."""
    if actual_replica_count(old_rss) > 0:
        return True
    new_uid = uid_of(new_rs) if new_rs is not None else None
    for rs_uid, pods in pod_map.items():
        if rs_uid == new_uid:
            continue
        for pod in pods:
            if status(pod).get("phase") not in ("Failed", "Succeeded"):
                return True
    return False


def has_progress_deadline(d: Mapping[str, Any]) -> bool:
    deadline = spec(d).get("progressDeadlineSeconds")
    return isinstance(deadline, int) and deadline != MAX_INT32


def has_revision_history_limit(d: Mapping[str, Any]) -> bool:
    limit = spec(d).get("revisionHistoryLimit")
    return isinstance(limit, int) and limit != MAX_INT32


def replica_sets_to_clean_up(d: Mapping[str, Any], old_rss: Sequence[Object]) -> list[Object]:
    """``cleanupDeployment``: the oldest revisions beyond ``revisionHistoryLimit`` that are scaled to
    0, observed, and not already being deleted."""
    if not has_revision_history_limit(d):
        return []
    alive = [rs for rs in old_rss if not meta(rs).get("deletionTimestamp")]
    diff = len(alive) - int(spec(d)["revisionHistoryLimit"])
    if diff <= 0:
        return []
    doomed = []
    for rs in sort_by_revision(alive)[:diff]:
        observed = status(rs).get("observedGeneration") or 0
        if (
            status_count(rs, "replicas") != 0
            or spec_replicas(rs) != 0
            or (meta(rs).get("generation") or 0) > observed
        ):
            continue
        doomed.append(rs)
    return doomed


# -- conditions --------------------------------------------------------------------------------------


def new_condition(type: str, status_value: str, reason: str, message: str, now: float) -> Object:
    """``NewDeploymentCondition``."""
    stamp = format_time(now)
    return {
        "type": type,
        "status": status_value,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def get_condition(status_obj: Mapping[str, Any], type: str) -> Object | None:
    for condition in status_obj.get("conditions") or []:
        if condition.get("type") == type:
            return dict(condition)
    return None


def set_condition(status_obj: Object, condition: Object) -> None:
    """``SetDeploymentCondition``: same status and reason is no change; the same status keeps its
    ``lastTransitionTime``."""
    current = get_condition(status_obj, condition["type"])
    if (
        current is not None
        and current.get("status") == condition["status"]
        and current.get("reason") == condition["reason"]
    ):
        return
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(status_obj, condition["type"])
    status_obj.setdefault("conditions", []).append(condition)


def remove_condition(status_obj: Object, type: str) -> None:
    conditions = [c for c in status_obj.get("conditions") or [] if c.get("type") != type]
    if conditions:
        status_obj["conditions"] = conditions
    else:
        status_obj.pop("conditions", None)


def replica_set_to_deployment_condition(condition: Mapping[str, Any]) -> Object:
    return {
        "type": condition.get("type"),
        "status": condition.get("status"),
        "lastUpdateTime": condition.get("lastTransitionTime"),
        "lastTransitionTime": condition.get("lastTransitionTime"),
        "reason": condition.get("reason"),
        "message": condition.get("message"),
    }


# -- status ------------------------------------------------------------------------------------------


def _omit_empty(status_obj: Object) -> Object:
    """Go's ``omitempty`` on the int32 counters: a zero count is not written."""
    return {k: v for k, v in status_obj.items() if v not in (0, None, [])}


def calculate_status(
    all_rss: Sequence[Object | None], new_rs: Object | None, d: Mapping[str, Any], now: float
) -> Object:
    """``calculateStatus`` (sync.go): counts summed over the ReplicaSets, and ``Available``.

    ``replicas``/``readyReplicas``/``availableReplicas`` come from the ReplicaSets' statuses,
    ``updatedReplicas`` from the new ReplicaSet's, ``unavailableReplicas`` is what the *specs* ask for
    minus what is available. ``Available`` is True once at least ``replicas - maxUnavailable`` pods are.
    """
    available = available_replica_count(all_rss)
    unavailable = max(0, replica_count(all_rss) - available)
    old_status = status(d)
    new_status: Object = {
        "observedGeneration": meta(d).get("generation"),
        "replicas": actual_replica_count(all_rss),
        "updatedReplicas": actual_replica_count([new_rs]),
        "readyReplicas": ready_replica_count(all_rss),
        "availableReplicas": available,
        "unavailableReplicas": unavailable,
    }
    new_status = _omit_empty(new_status)
    terminating = terminating_replica_count(all_rss)
    if terminating is not None:
        new_status["terminatingReplicas"] = terminating
    if isinstance(old_status.get("collisionCount"), int):
        new_status["collisionCount"] = old_status["collisionCount"]
    conditions = [dict(c) for c in old_status.get("conditions") or []]
    if conditions:
        new_status["conditions"] = conditions
    if available >= spec_replicas(d) - max_unavailable(d):
        condition = new_condition(
            AVAILABLE, "True", MINIMUM_REPLICAS_AVAILABLE, "Deployment has minimum availability.", now
        )
    else:
        condition = new_condition(
            AVAILABLE,
            "False",
            MINIMUM_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            now,
        )
    set_condition(new_status, condition)
    return new_status


def deployment_complete(d: Mapping[str, Any], new_status: Mapping[str, Any]) -> bool:
    """``DeploymentComplete``: every desired replica updated and available, no old ones, observed."""
    replicas = spec_replicas(d)
    return (
        (new_status.get("updatedReplicas") or 0) == replicas
        and (new_status.get("replicas") or 0) == replicas
        and (new_status.get("availableReplicas") or 0) == replicas
        and (new_status.get("observedGeneration") or 0) >= (meta(d).get("generation") or 0)
    )


def deployment_progressing(d: Mapping[str, Any], new_status: Mapping[str, Any]) -> bool:
    """``DeploymentProgressing``: more updated, ready or available pods, or fewer old ones, than before."""
    old = status(d)

    def count(s: Mapping[str, Any], field: str) -> int:
        value = s.get(field)
        return int(value) if isinstance(value, int) else 0

    old_old = count(old, "replicas") - count(old, "updatedReplicas")
    new_old = count(new_status, "replicas") - count(new_status, "updatedReplicas")
    return (
        count(new_status, "updatedReplicas") > count(old, "updatedReplicas")
        or new_old < old_old
        or count(new_status, "readyReplicas") > count(old, "readyReplicas")
        or count(new_status, "availableReplicas") > count(old, "availableReplicas")
    )


def deployment_timed_out(d: Mapping[str, Any], new_status: Mapping[str, Any], now: float) -> bool:
    """``DeploymentTimedOut``: no progress reported for ``progressDeadlineSeconds`` (cluster clock)."""
    if not has_progress_deadline(d):
        return False
    condition = get_condition(new_status, PROGRESSING)
    if condition is None:
        return False
    if condition.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if condition.get("reason") == TIMED_OUT_REASON:
        return True
    last = parse_timestamp(condition.get("lastUpdateTime"))
    if last is None:
        return False
    return last + int(spec(d)["progressDeadlineSeconds"]) < now


def replica_failures(all_rss: Sequence[Object | None], new_rs: Object | None) -> list[Object]:
    """``getReplicaFailures``: ReplicaFailure conditions, the new ReplicaSet's first."""

    def failures(rs: Object | None) -> list[Object]:
        if rs is None:
            return []
        return [
            replica_set_to_deployment_condition(c)
            for c in status(rs).get("conditions") or []
            if c.get("type") == REPLICA_FAILURE
        ]

    found = failures(new_rs)
    if found:
        return found
    return [c for rs in all_rss for c in failures(rs)]


def rollout_status(
    d: Mapping[str, Any], all_rss: Sequence[Object | None], new_rs: Object | None, now: float
) -> Object:
    """``syncRolloutStatus`` (progress.go): ``calculate_status`` plus the ``Progressing`` condition.

    - complete (every replica updated and available): True, ``NewReplicaSetAvailable``,
      ``ReplicaSet "x" has successfully progressed.``;
    - any progress since the last status: True, ``ReplicaSetUpdated``, ``ReplicaSet "x" is
      progressing.`` (its lastUpdateTime moves: the deadline starts again);
    - no progress for ``progressDeadlineSeconds``: False, ``ProgressDeadlineExceeded``,
      ``ReplicaSet "x" has timed out progressing.``, which makes ``kubectl rollout status`` fail.
    """
    new_status = calculate_status(all_rss, new_rs, d, now)
    if not has_progress_deadline(d):
        remove_condition(new_status, PROGRESSING)
    current = get_condition(status(d), PROGRESSING)
    is_complete = (
        (new_status.get("replicas") or 0) == (new_status.get("updatedReplicas") or 0)
        and current is not None
        and current.get("reason") == NEW_RS_AVAILABLE_REASON
    )
    subject = f'ReplicaSet "{name_of(new_rs)}"' if new_rs is not None else f'Deployment "{name_of(d)}"'
    if has_progress_deadline(d) and not is_complete:
        if deployment_complete(d, new_status):
            set_condition(
                new_status,
                new_condition(
                    PROGRESSING,
                    "True",
                    NEW_RS_AVAILABLE_REASON,
                    f"{subject} has successfully progressed.",
                    now,
                ),
            )
        elif deployment_progressing(d, new_status):
            condition = new_condition(
                PROGRESSING, "True", REPLICA_SET_UPDATED_REASON, f"{subject} is progressing.", now
            )
            if current is not None:
                if current.get("status") == "True":
                    condition["lastTransitionTime"] = current.get("lastTransitionTime")
                remove_condition(new_status, PROGRESSING)
            set_condition(new_status, condition)
        elif deployment_timed_out(d, new_status, now):
            set_condition(
                new_status,
                new_condition(
                    PROGRESSING, "False", TIMED_OUT_REASON, f"{subject} has timed out progressing.", now
                ),
            )
    failures = replica_failures(all_rss, new_rs)
    if failures:
        set_condition(new_status, failures[0])
    else:
        remove_condition(new_status, REPLICA_FAILURE)
    return new_status


#: ``requeue_stuck_deployment``'s answer when the check is due now (upstream: ``enqueueRateLimited``).
REQUEUE_NOW: Final = 0.0


def requeue_stuck_deployment(d: Mapping[str, Any], new_status: Mapping[str, Any], now: float) -> float | None:
    """``requeueStuckDeployment``: when to look again for a progress deadline, in seconds (None: no
    need; ``REQUEUE_NOW``: at once, rate-limited). One second is added against clock skew, as upstream."""
    current = get_condition(status(d), PROGRESSING)
    if not has_progress_deadline(d) or current is None:
        return None
    if deployment_complete(d, new_status) or current.get("reason") == TIMED_OUT_REASON:
        return None
    last = parse_timestamp(current.get("lastUpdateTime")) or now
    after = last + int(spec(d)["progressDeadlineSeconds"]) - now
    if after < 1:
        return REQUEUE_NOW
    return after + 1


def paused_condition_status(d: Mapping[str, Any], now: float) -> Object | None:
    """``checkPausedConditions``: the status with ``Progressing`` Unknown ``DeploymentPaused`` (or
    ``DeploymentResumed``) when pausing or resuming; None when nothing changes."""
    if not has_progress_deadline(d):
        return None
    current = get_condition(status(d), PROGRESSING)
    if current is not None and current.get("reason") == TIMED_OUT_REASON:
        return None
    paused_exists = current is not None and current.get("reason") == PAUSED_DEPLOY_REASON
    paused = bool(spec(d).get("paused"))
    new_status = deep_copy(status(d))
    if paused and not paused_exists:
        set_condition(
            new_status,
            new_condition(PROGRESSING, "Unknown", PAUSED_DEPLOY_REASON, "Deployment is paused", now),
        )
        return new_status
    if not paused and paused_exists:
        set_condition(
            new_status,
            new_condition(PROGRESSING, "Unknown", RESUMED_DEPLOY_REASON, "Deployment is resumed", now),
        )
        return new_status
    return None


def same_status(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """``reflect.DeepEqual`` of two statuses, zero values and missing fields alike."""
    return bool(semantic(dict(old)) == semantic(dict(new)))
