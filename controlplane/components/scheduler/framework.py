"""The scheduling framework: how one pod is matched to one node, step by step.

A scheduling *attempt* (upstream's "scheduling cycle", ``pkg/scheduler/schedule_one.go``) takes one
pending pod and a *snapshot* of the cluster (every node with the pods already on it) and runs plugins:

0. **PreFilter.** Before any node is looked at, each plugin that has a PreFilter looks at the pod
   alone (``RunPreFilterPlugins``): it precomputes what its Filter needs, says ``Skip`` (nothing it
   checks concerns this pod, so its Filter does not run), or rejects the pod outright, whatever the
   node (VolumeBinding: the pod's claim does not exist). A rejection ends the attempt before Filter:
   every node gets that one status, and the message is the rejection alone, without per-node counts
   ("0/4 nodes are available: persistentvolumeclaim "data" not found.").
1. **Filter.** Each filter plugin answers, for each node, "can this pod run here?" (enough CPU left? a
   taint the pod does not tolerate?). A node passes only if every filter says yes; the first "no" ends
   that node's evaluation (``RunFilterPlugins``) and its reason is what ``kubectl describe pod`` shows.
2. **Score.** Every plugin with an opinion gives each feasible node 0..100 (after *normalizing* its raw
   numbers, ``NormalizeScore``); the scores are multiplied by the plugin's weight and summed.
3. **Select.** The highest total wins; ties are broken at random (``selectHost``), so that identical
   nodes share the load. Randomness here is a seeded ``random.Random``, so a lesson replays the same way.

If no node passes, the attempt ends with upstream's ``FitError`` (see ``messages``). The result of an
attempt is a ``Decision``, which keeps every per-node, per-plugin verdict so that the trace can show
*why*, not only *where*.

This module is pure: plugins read dicts (the API objects as JSON) and return values.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from controlplane.api.meta import object_key
from controlplane.api.quantity import QuantityError, parse_json_quantity
from controlplane.components.scheduler.messages import fit_error_message

Obj = Mapping[str, Any]

#: ``framework.MaxNodeScore`` / ``MinNodeScore`` (pkg/scheduler/framework/interface.go).
MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0

#: ``schedutil.DefaultMilliCPURequest`` / ``DefaultMemoryRequest`` (pkg/scheduler/util/pod_resources.go):
#: what scoring assumes a container without requests uses, so best-effort pods still spread out.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


# -- resources --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Resource:
    """``framework.Resource``: CPU in milli-cores, memory and ephemeral storage in bytes, a pod count."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: Mapping[str, int] = field(default_factory=dict)

    def __add__(self, other: Resource) -> Resource:
        scalar = dict(self.scalar)
        for name, amount in other.scalar.items():
            scalar[name] = scalar.get(name, 0) + amount
        return Resource(
            self.milli_cpu + other.milli_cpu,
            self.memory + other.memory,
            self.ephemeral_storage + other.ephemeral_storage,
            self.allowed_pod_number + other.allowed_pod_number,
            scalar,
        )

    def __sub__(self, other: Resource) -> Resource:
        scalar = dict(self.scalar)
        for name, amount in other.scalar.items():
            scalar[name] = scalar.get(name, 0) - amount
        return Resource(
            self.milli_cpu - other.milli_cpu,
            self.memory - other.memory,
            self.ephemeral_storage - other.ephemeral_storage,
            self.allowed_pod_number - other.allowed_pod_number,
            scalar,
        )

    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or any(self.scalar.values()))

    def get(self, name: str) -> int:
        """The amount of one resource by its API name (``cpu`` in milli-cores)."""
        if name == "cpu":
            return self.milli_cpu
        if name == "memory":
            return self.memory
        if name == "ephemeral-storage":
            return self.ephemeral_storage
        if name == "pods":
            return self.allowed_pod_number
        return self.scalar.get(name, 0)


def _amounts(resource_list: Obj | None) -> dict[str, int]:
    """A ResourceList as integers: CPU in milli-cores (``MilliValue``), the rest in units (``Value``)."""
    amounts: dict[str, int] = {}
    for name, raw in (resource_list or {}).items():
        amount = _AMOUNTS.get((name, raw)) if type(raw) is str else None
        if amount is None:
            amount = _amount(name, raw)
            if amount is None:
                continue  # validation refuses these before they reach the scheduler
        amounts[name] = amount
    return amounts


def _amount(name: str, raw: object) -> int | None:
    """One quantity as ``_amounts`` counts it, or None if it is not one; a string's is remembered."""
    try:
        quantity = parse_json_quantity(raw)
    except QuantityError:
        return None
    amount = quantity.milli_value() if name == "cpu" else quantity.value()
    if type(raw) is str:
        if len(_AMOUNTS) >= _AMOUNTS_LIMIT:
            _AMOUNTS.clear()
        _AMOUNTS[(name, raw)] = amount
    return amount


#: ``_amount`` by (resource name, quantity string): the same few spellings ("100m", "64Mi") come back
#: for every pod and every version of it, and parsing one is far dearer than looking it up. Only
#: strings are kept, so that ``True`` (refused) and ``1`` (one unit) cannot share an entry.
_AMOUNTS: dict[tuple[str, str], int] = {}
_AMOUNTS_LIMIT = 10_000


def resource_from_list(resource_list: Obj | None) -> Resource:
    """``NewResource(rl)``: a node's allocatable, or a sum of requests."""
    return _resource(_amounts(resource_list))


def _resource(amounts: Mapping[str, int]) -> Resource:
    known = {"cpu", "memory", "ephemeral-storage", "pods"}
    return Resource(
        amounts.get("cpu", 0),
        amounts.get("memory", 0),
        amounts.get("ephemeral-storage", 0),
        amounts.get("pods", 0),
        {k: v for k, v in amounts.items() if k not in known and ("/" in k or k.startswith("hugepages-"))},
    )


def pod_requests(pod: Obj, *, non_zero: bool = False) -> Resource:
    """What a pod asks for: ``resource.PodRequests`` (k8s.io/component-helpers/resource/helpers.go).

    The app containers run together, so their requests add up; init containers run one at a time
    before them, so the pod needs the *largest* init container's request, if that is more than the sum
    (a max per resource). ``spec.overhead`` (the sandbox's own cost, from a RuntimeClass) is added.

    ``non_zero`` gives scoring's view (``NonMissingContainerRequests``): a container that requests no
    CPU or memory counts as 100m and 200Mi, so best-effort pods do not all pile onto one node.
    Sidecar (restartable) init containers and pod-level resources are not modelled.
    """
    meta: Obj = pod.get("metadata") or {}
    cache_key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""), non_zero)
    if cache_key[0] and (cached := _REQUESTS.get(cache_key)) is not None:
        return cached
    requests = _pod_requests(pod, non_zero=non_zero)
    if cache_key[0]:
        if len(_REQUESTS) >= _REQUESTS_LIMIT:
            _REQUESTS.clear()
        _REQUESTS[cache_key] = requests
    return requests


#: ``pod_requests`` by (uid, resourceVersion, non_zero): a pod's requests do not change while its
#: resourceVersion does not, and every scheduling attempt sums them for every pod on every node.
_REQUESTS: dict[tuple[str, str, bool], Resource] = {}
_REQUESTS_LIMIT = 200_000


def _pod_requests(pod: Obj, *, non_zero: bool) -> Resource:
    spec: Obj = pod.get("spec") or {}
    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        requests = _amounts((container.get("resources") or {}).get("requests"))
        if non_zero:
            requests.setdefault("cpu", DEFAULT_MILLI_CPU_REQUEST)
            requests.setdefault("memory", DEFAULT_MEMORY_REQUEST)
        for name, amount in requests.items():
            total[name] = total.get(name, 0) + amount
    for container in spec.get("initContainers") or []:
        requests = _amounts((container.get("resources") or {}).get("requests"))
        if non_zero:
            requests.setdefault("cpu", DEFAULT_MILLI_CPU_REQUEST)
            requests.setdefault("memory", DEFAULT_MEMORY_REQUEST)
        for name, amount in requests.items():
            total[name] = max(total.get(name, 0), amount)
    for name, amount in _amounts(spec.get("overhead")).items():
        total[name] = total.get(name, 0) + amount
    total.pop("pods", None)
    return _resource(total)


def pod_priority(pod: Obj) -> int:
    """``corev1helpers.PodPriority``: ``spec.priority`` (set by the Priority admission plugin), 0 without."""
    priority = (pod.get("spec") or {}).get("priority")
    return priority if isinstance(priority, int) and not isinstance(priority, bool) else 0


# -- the snapshot -----------------------------------------------------------------------------------


def labels_of(obj: Obj) -> Mapping[str, str]:
    labels: Mapping[str, str] = (obj.get("metadata") or {}).get("labels") or {}
    return labels


def _has_required_anti_affinity(pod: Obj) -> bool:
    affinity: Obj = (pod.get("spec") or {}).get("affinity") or {}
    anti: Obj = affinity.get("podAntiAffinity") or {}
    return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))


class NodeInfo:
    """``framework.NodeInfo``: one node and what is already placed on it.

    ``requested`` sums the requests of the pods on the node (what NodeResourcesFit compares with
    ``allocatable``); ``non_zero_requested`` is the same with scoring's defaults for missing requests.
    What the plugins read of the node object itself (``allocatable``, ``labels``, ``taints``,
    ``unschedulable``) is taken out of it once, when the object arrives, not once per pod scheduled.
    """

    def __init__(self, node: Obj, pods: Iterable[Obj] = ()) -> None:
        self.pods: list[Obj] = []
        #: The pods with required anti-affinity terms (``PodsWithRequiredAntiAffinity``): the only
        #: ones InterPodAffinity must look at for a pod that has no affinity terms of its own.
        self.pods_with_required_anti_affinity: list[Obj] = []
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self._read_node(node)
        for pod in pods:
            self.add_pod(pod)

    def set_node(self, node: Obj) -> None:
        """The node object changed (labels, taints, allocatable); its pods stay."""
        if node is not self.node:
            self._read_node(node)

    def _read_node(self, node: Obj) -> None:
        self.node = node
        self.name = _node_name(node)
        self.allocatable = resource_from_list((node.get("status") or {}).get("allocatable"))
        spec: Obj = node.get("spec") or {}
        self.labels: Mapping[str, str] = labels_of(node)
        self.taints: tuple[Obj, ...] = tuple(spec.get("taints") or ())
        #: ``spec.unschedulable``: cordoned.
        self.unschedulable = bool(spec.get("unschedulable"))

    def add_pod(self, pod: Obj) -> None:
        """``AddPod``: the pod now takes room on this node."""
        self.pods.append(pod)
        if _has_required_anti_affinity(pod):
            self.pods_with_required_anti_affinity.append(pod)
        self.requested += pod_requests(pod)
        self.non_zero_requested += pod_requests(pod, non_zero=True)

    def remove_pod(self, pod: Obj) -> None:
        """``RemovePod``: the pod (this very object, as added) no longer takes room here."""
        for i, placed in enumerate(self.pods):
            if placed is pod:
                del self.pods[i]
                self.pods_with_required_anti_affinity = [
                    p for p in self.pods_with_required_anti_affinity if p is not pod
                ]
                self.requested -= pod_requests(pod)
                self.non_zero_requested -= pod_requests(pod, non_zero=True)
                return

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, pods={len(self.pods)})"


def _node_name(node: Obj) -> str:
    return str((node.get("metadata") or {}).get("name") or "")


class Snapshot:
    """The cluster as one attempt sees it (``internal/cache/snapshot.go``): nodes, ordered by name.

    ``pods`` are the pods already bound (``spec.nodeName`` set); each is attached to its node.
    ``namespace_labels`` lets affinity terms with a ``namespaceSelector`` find their namespaces.
    """

    def __init__(
        self,
        nodes: Iterable[Obj],
        pods: Iterable[Obj] = (),
        *,
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        by_node: dict[str, list[Obj]] = {}
        for pod in pods:
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name:
                by_node.setdefault(str(node_name), []).append(pod)
        infos = [NodeInfo(node) for node in nodes]
        for info in infos:
            for pod in by_node.get(info.name, ()):
                info.add_pod(pod)
        self.node_infos: list[NodeInfo] = sorted(infos, key=lambda i: i.name)
        self.namespace_labels: Mapping[str, Mapping[str, str]] = namespace_labels or {}

    @classmethod
    def of(cls, infos: Iterable[NodeInfo]) -> Snapshot:
        """A snapshot over node infos kept up to date by the scheduler's cache (``UpdateSnapshot``).

        The infos are not copied: a scheduling cycle (``schedule``) runs without awaiting, so nothing
        changes them while it looks.
        """
        snapshot = cls(())
        snapshot.node_infos = sorted(infos, key=lambda i: i.name)
        return snapshot

    def get(self, name: str) -> NodeInfo | None:
        for info in self.node_infos:
            if info.name == name:
                return info
        return None

    def __len__(self) -> int:
        return len(self.node_infos)


# -- plugin results ---------------------------------------------------------------------------------


class Code(enum.Enum):
    """``framework.Code``: how a plugin's verdict is to be read."""

    SUCCESS = "Success"
    #: The node does not fit now, but could after a change that preemption might make.
    UNSCHEDULABLE = "Unschedulable"
    #: The node does not fit and preempting pods would not help (a label, a taint, a name).
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
    ERROR = "Error"
    #: A PreFilter's (or PreScore's) "nothing to check for this pod": the plugin's Filter does not run.
    SKIP = "Skip"


@dataclass(frozen=True, slots=True)
class Status:
    """``framework.Status``: a plugin's verdict with upstream's reason strings."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    @property
    def is_rejected(self) -> bool:
        """``IsRejected``: Unschedulable or UnschedulableAndUnresolvable."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def message(self) -> str:
        """``Status.Message``: the reasons joined by ", "."""
        return ", ".join(self.reasons)

    def to_trace(self) -> dict[str, Any]:
        return {"code": self.code.value, "reasons": list(self.reasons)}


SUCCESS = Status()
SKIP = Status(Code.SKIP)


def unschedulable(plugin: str, *reasons: str, unresolvable: bool = False) -> Status:
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
    return Status(code, reasons, plugin)


class CycleState:
    """``framework.CycleState``: per-attempt scratch space, where plugins keep what they precompute
    once for all nodes (PreFilter/PreScore upstream), keyed by plugin name."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.data: dict[str, Any] = {}
        self._requests: dict[bool, Resource] = {}

    def pod_requests(self, pod: Obj, *, non_zero: bool = False) -> Resource:
        """The requests of the pod being scheduled, summed once per attempt (upstream's plugins keep
        them in their PreFilter/PreScore state rather than summing them again for every node)."""
        requests = self._requests.get(non_zero)
        if requests is None:
            requests = self._requests[non_zero] = pod_requests(pod, non_zero=non_zero)
        return requests


class FilterPlugin(Protocol):
    """A plugin that can rule a node out."""

    @property
    def name(self) -> str: ...

    def filter(self, state: CycleState, pod: Obj, node: NodeInfo) -> Status: ...


class ScorePlugin(Protocol):
    """A plugin that ranks feasible nodes; ``normalize`` maps raw scores onto 0..100."""

    @property
    def name(self) -> str: ...

    def score(self, state: CycleState, pod: Obj, node: NodeInfo) -> int: ...

    def normalize(self, scores: dict[str, int]) -> dict[str, int]: ...


def pre_filter(plugin: FilterPlugin, state: CycleState, pod: Obj) -> Status:
    """The plugin's PreFilter verdict on the pod: ``SUCCESS``, ``SKIP``, or a rejection.

    ``Skip`` says that nothing the plugin checks concerns this pod: upstream
    (``framework/runtime/framework.go``, RunPreFilterPlugins) then leaves the plugin out of every
    node's Filter for this attempt (a pod without affinity terms need not be checked against the
    affinity of every pod on every node). A rejection (Unschedulable, UnschedulableAndUnresolvable)
    holds whatever the node. A plugin opts in with a ``pre_filter(state, pod) -> Status`` method, or,
    if all its PreFilter can say is ``Skip``, a ``pre_filter_skip(state, pod) -> bool`` one; a plugin
    with neither has no PreFilter (NodeUnschedulable, NodeName, TaintToleration).
    """
    run = getattr(plugin, "pre_filter", None)
    if run is not None:
        status: Status = run(state, pod)
        if status.is_rejected and not status.plugin:
            status = Status(status.code, status.reasons, plugin.name)
        return status
    check = getattr(plugin, "pre_filter_skip", None)
    return SKIP if check is not None and check(state, pod) else SUCCESS


def run_pre_filter_plugins(
    plugins: Sequence[FilterPlugin], state: CycleState, pod: Obj
) -> tuple[list[str], Status | None]:
    """``RunPreFilterPlugins``: the plugins that said ``Skip``, and the status that rejects the pod.

    The plugins run in the profile's order. An UnschedulableAndUnresolvable rejection stops the run at
    once ("the preemption shouldn't happen in this scheduling cycle. So, no need to execute all
    PreFilter"); an Unschedulable one lets the others run (preemption may still help, and it needs
    their state) and the last such rejection is returned. None when the pod may go on to Filter.
    """
    skipped: list[str] = []
    rejection: Status | None = None
    for plugin in plugins:
        status = pre_filter(plugin, state, pod)
        if status.code is Code.SKIP:
            skipped.append(plugin.name)
        elif status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return skipped, status
        elif status.is_rejected:
            rejection = status
    return skipped, rejection


def skips_filter(plugin: FilterPlugin, state: CycleState, pod: Obj) -> bool:
    """Whether the plugin's PreFilter answers ``Skip`` (see ``pre_filter``)."""
    return pre_filter(plugin, state, pod).code is Code.SKIP


def skips_score(plugin: ScorePlugin, state: CycleState, pod: Obj) -> bool:
    """Whether the plugin's PreScore answers ``Skip`` (RunPreScorePlugins): it would give every node
    the same score, so it is not run. A plugin opts in with a ``pre_score_skip`` method."""
    check = getattr(plugin, "pre_score_skip", None)
    return bool(check(state, pod)) if check is not None else False


@dataclass(frozen=True)
class Candidate:
    """A node where preemption would make the pod fit, and the pods that would have to go."""

    node: str
    #: Most important first (``victims[0]`` is the highest-priority victim).
    victims: tuple[Obj, ...]
    #: How many victims' eviction breaks a PodDisruptionBudget (``NumPDBViolations``).
    pdb_violations: int = 0


@dataclass
class PostFilterResult:
    """What a PostFilter plugin found: its status message, and the node to nominate with its victims.

    ``nominated_node`` is None when the pod's nomination is left as it is (say, the pod may not
    preempt), "" when it is to be cleared (no node would do), else the chosen node. ``message`` is
    empty on success and otherwise what the FailedScheduling message ends with ("preemption: ...").
    """

    nominated_node: str | None
    victims: list[Obj] = field(default_factory=list)
    message: str = ""
    candidates: list[Candidate] = field(default_factory=list)
    #: Why each node that might have helped could not (its status from the victim search).
    statuses: dict[str, Status] = field(default_factory=dict)

    @property
    def nominated(self) -> bool:
        return bool(self.nominated_node)

    def to_trace(self) -> dict[str, Any]:
        """The ``preemption`` field of the ``scheduler.decision`` trace event."""
        return {
            "nominated": self.nominated_node or None,
            "victims": [object_key(v) for v in self.victims],
            "candidates": {c.node: [object_key(v) for v in c.victims] for c in self.candidates},
            "message": self.message or None,
        }


class PostFilterPlugin(Protocol):
    """A plugin that runs when no node fits (``PostFilterPlugin``): DefaultPreemption."""

    @property
    def name(self) -> str: ...

    def post_filter(
        self,
        pod: Obj,
        snapshot: Snapshot,
        filters: Sequence[FilterPlugin],
        statuses: Mapping[str, Status],
        *,
        now: float,
    ) -> PostFilterResult: ...


@dataclass(frozen=True)
class Profile:
    """A scheduling profile (``KubeSchedulerProfile``): filters in order, score plugins with weights,
    and the PostFilter plugins that run when no node fits (none: a pod that fits nowhere just waits)."""

    filters: Sequence[FilterPlugin]
    scores: Sequence[tuple[ScorePlugin, int]]
    scheduler_name: str = "default-scheduler"
    post_filters: Sequence[PostFilterPlugin] = ()


def default_normalize_score(scores: dict[str, int], *, reverse: bool = False) -> dict[str, int]:
    """``helper.DefaultNormalizeScore`` (framework/plugins/helper/normalize_score.go).

    Scales so that the highest raw score becomes 100 (integer arithmetic, as upstream); ``reverse``
    turns "more is worse" counts (untolerated PreferNoSchedule taints) into "more is better".
    """
    max_count = max(scores.values(), default=0)
    if max_count == 0:
        return {name: MAX_NODE_SCORE if reverse else score for name, score in scores.items()}
    result: dict[str, int] = {}
    for name, score in scores.items():
        scaled = MAX_NODE_SCORE * score // max_count
        result[name] = MAX_NODE_SCORE - scaled if reverse else scaled
    return result


# -- one attempt ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PluginScore:
    raw: int
    normalized: int
    weighted: int


@dataclass
class Decision:
    """Everything one scheduling attempt found out, for the binding, the event and the trace.

    ``filters`` holds each node's verdicts by plugin and ``scores`` each feasible node's score by
    plugin; without ``explain`` (see ``schedule``) only the failed nodes' verdicts are kept.

    ``pre_filter`` is the PreFilter status that rejected the pod before any node was looked at (then
    ``filters`` is empty and ``processed`` 0: no Filter ran); as upstream's
    ``NodeToStatus.SetAbsentNodesStatus``, it is every node's status for the message and preemption.
    """

    pod: str
    nodes: list[str]
    filters: dict[str, dict[str, Status]]
    feasible: list[str]
    scores: dict[str, dict[str, PluginScore]]
    totals: dict[str, int]
    chosen: str | None
    #: How many nodes the filters looked at (all, unless the cluster is large: see ``schedule``).
    processed: int = 0
    #: Plugins whose PreFilter or PreScore said ``Skip`` for this pod, and so did not run.
    skipped_filters: list[str] = field(default_factory=list)
    skipped_scores: list[str] = field(default_factory=list)
    pre_filter: Status | None = None

    @property
    def statuses(self) -> dict[str, Status]:
        """``NodeToStatusMap``: the failing status of every infeasible node (every node's, the
        PreFilter rejection, when PreFilter rejected the pod)."""
        if self.pre_filter is not None:
            return dict.fromkeys(self.nodes, self.pre_filter)
        result: dict[str, Status] = {}
        for node, by_plugin in self.filters.items():
            for status in by_plugin.values():
                if not status.is_success:
                    result[node] = status
        return result

    def message(self) -> str | None:
        """Upstream's FailedScheduling text when no node fits, else None."""
        if self.chosen is not None:
            return None
        if self.pre_filter is not None:
            # ``Diagnosis.PreFilterMsg``: FitError.Error prints it alone, without per-node counts.
            return fit_error_message(len(self.nodes), {}, pre_filter_msg=self.pre_filter.message())
        return fit_error_message(len(self.nodes), self.statuses)

    def to_trace(self) -> dict[str, Any]:
        """The fields of the ``scheduler.decision`` trace event.

        After a PreFilter rejection every node shows that one status (what upstream's NodeToStatus
        holds and preemption reads), marked ``"extensionPoint": "PreFilter"`` since no Filter ran on
        any node (``evaluated`` is 0).
        """
        nodes: dict[str, Any] = {}
        rejection = self.pre_filter
        for name in self.nodes:
            if rejection is not None:
                verdict = {**rejection.to_trace(), "extensionPoint": "PreFilter"}
                nodes[name] = {
                    "filters": {rejection.plugin: verdict},
                    "scores": {},
                    "total": None,
                    "feasible": False,
                }
                continue
            if name not in self.filters:
                continue  # not looked at: enough feasible nodes were found before it
            nodes[name] = {
                "filters": {
                    plugin: status.to_trace() for plugin, status in self.filters.get(name, {}).items()
                },
                "scores": {
                    plugin: {"raw": s.raw, "normalized": s.normalized, "weighted": s.weighted}
                    for plugin, s in self.scores.get(name, {}).items()
                },
                "total": self.totals.get(name),
                "feasible": name in self.feasible,
            }
        return {
            "pod": self.pod,
            "nodes": nodes,
            "feasible": list(self.feasible),
            "chosen": self.chosen,
            "message": self.message(),
            "evaluated": self.processed,
            "of": len(self.nodes),
            "skipped": {"filters": list(self.skipped_filters), "scores": list(self.skipped_scores)},
        }


#: ``numFeasibleNodesToFind`` (pkg/scheduler/schedule_one.go): below this many nodes every node is
#: filtered and scored; above, only an adaptive percentage of them, at least this many.
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
BASE_PERCENTAGE_OF_NODES_TO_SCORE = 50


def num_feasible_nodes_to_find(num_all_nodes: int) -> int:
    """How many feasible nodes are enough: all of a small cluster; 50% minus 1% per 125 nodes (at
    least 5%, at least 100 nodes) of a large one, since scoring every node of 5000 is not worth it."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = max(
        BASE_PERCENTAGE_OF_NODES_TO_SCORE - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    )
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def schedule(
    pod: Obj,
    snapshot: Snapshot,
    plugins: Profile,
    *,
    rng: random.Random,
    start: int = 0,
    explain: bool = True,
    nominated: Mapping[str, Sequence[Obj]] | None = None,
) -> Decision:
    """One scheduling attempt (``schedulePod``): prefilter, filter, score, select.

    A PreFilter rejection (``run_pre_filter_plugins``) ends the attempt before any node is filtered:
    the decision has no verdicts per node, ``processed`` 0, and ``pre_filter`` the rejection.

    Filtering starts at node ``start`` (the scheduler moves it round-robin between attempts) and stops
    once ``num_feasible_nodes_to_find`` nodes passed; ``Decision.processed`` says how many were looked
    at. Nodes not looked at have no verdicts in the decision.

    ``nominated`` holds, per node, the pods that preempted pods there and wait for the room
    (``status.nominatedNodeName``). Those of at least this pod's priority count as placed on the node
    while it is filtered (upstream's ``RunFilterPluginsWithNominatedPods``), so that a pod of lower
    priority cannot take the room a preemption freed for another.

    With ``explain`` the decision keeps every verdict and every plugin's score of every node, for the
    trace. Without it (nobody watches the trace) it keeps only what the scheduler acts on: the chosen
    node, the totals, and the verdicts of the nodes that failed (``message`` is built from those). The
    choice is the same either way.
    """
    state = CycleState(snapshot)
    infos = snapshot.node_infos
    count = len(infos)
    names = [info.name for info in infos]
    skipped_filters, rejection = run_pre_filter_plugins(plugins.filters, state, pod)
    if rejection is not None and count:
        # findNodesThatFitPod: a PreFilter rejection is the FitError; no node is filtered.
        decision = Decision(object_key(pod), names, {}, [], {}, {}, None)
        decision.skipped_filters = skipped_filters
        decision.pre_filter = rejection
        return decision
    active_filters = [(p.name, p.filter) for p in plugins.filters if p.name not in skipped_filters]
    filters: dict[str, dict[str, Status]] = {}
    feasible: list[NodeInfo] = []
    wanted = num_feasible_nodes_to_find(count)
    processed = 0
    success = Code.SUCCESS
    if count:
        start %= count
        for info in infos[start:] + infos[:start] if start else infos:
            if len(feasible) >= wanted:
                break
            processed += 1
            verdicts: dict[str, Status] = {}
            view = _with_nominated_pods(pod, info, nominated) if nominated else info
            for plugin_name, check in active_filters:
                status = check(state, pod, view)
                if status.code is not success:
                    verdicts[plugin_name] = status
                    filters[info.name] = verdicts
                    break  # RunFilterPlugins stops at the first plugin that rejects the node
                if explain:
                    verdicts[plugin_name] = status
            else:
                feasible.append(info)
                if explain:
                    filters[info.name] = verdicts

    decision = Decision(object_key(pod), names, filters, [i.name for i in feasible], {}, {}, None)
    decision.processed = processed
    decision.skipped_filters = skipped_filters
    if not feasible:
        return decision
    if len(feasible) == 1:
        # schedule_one.go: "When only one node after predicate, just use it." No scoring happens.
        decision.chosen = feasible[0].name
        return decision

    totals = dict.fromkeys(decision.feasible, 0)
    per_node: dict[str, dict[str, PluginScore]] = {}
    if explain:
        per_node = {name: {} for name in decision.feasible}
    for scorer, weight in plugins.scores:
        if skips_score(scorer, state, pod):
            decision.skipped_scores.append(scorer.name)
            continue
        score = scorer.score
        raw = {info.name: score(state, pod, info) for info in feasible}
        normalized = scorer.normalize(dict(raw) if explain else raw)
        for name, value in normalized.items():
            totals[name] += value * weight
        if explain:
            for name, value in normalized.items():
                per_node[name][scorer.name] = PluginScore(raw[name], value, value * weight)
    decision.scores = per_node
    decision.totals = totals
    decision.chosen = select_host(totals, rng)
    return decision


def _with_nominated_pods(pod: Obj, info: NodeInfo, nominated: Mapping[str, Sequence[Obj]]) -> NodeInfo:
    """``addGENominatedPods``: the node as if the pods nominated to it, of at least ``pod``'s
    priority (and not ``pod`` itself), were already there; the node itself when there are none."""
    waiting = nominated.get(info.name)
    if not waiting:
        return info
    priority, key = pod_priority(pod), object_key(pod)
    extra = [p for p in waiting if pod_priority(p) >= priority and object_key(p) != key]
    if not extra:
        return info
    return NodeInfo(info.node, [*info.pods, *extra])


def select_host(totals: Mapping[str, int], rng: random.Random) -> str:
    """``selectHost``: the highest total; among equals, reservoir sampling so each is equally likely."""
    items = list(totals.items())
    selected, best = items[0]
    count = 1
    for name, total in items[1:]:
        if total > best:
            selected, best, count = name, total, 1
        elif total == best:
            count += 1
            if rng.randrange(count) == 0:
                selected = name
    return selected
