"""The fault catalogue: every kind of fault the lab can apply, its parameters, and their check.

A kind says what it stands for upstream, which box of the diagram it hits (``target``: the diagram
node ids of ``controlplane/trace/nodes.py``), which parameters it takes, whether it **lasts** (a stopped
kubelet stays stopped until cleared, or until its time is up) or happens **at once** (a compaction, a
restart: over as soon as it is done, so it takes no duration and cannot be cleared), and how to say
it in each language: a short label (what a chapter's button says) and a summary (what ``manage.py
fault list`` and the instructor's console say). Languages are Django's codes, ``en`` and ``zh-hans``.

``check(kind, values, nodes=N)`` is the one check of a fault's parameters, for every caller: the
content loader (a chapter's ``{fault: stop-kubelet, node: node-2}``), the service and the management
command. It returns a ``FaultSpec`` (the kind, its parameters, its duration) or raises ``InvalidFault``
saying in words what is wrong. Nothing here does I/O.

A lasting fault's duration is ``for`` seconds of the cluster's clock; without one it lasts until
cleared, and never longer than ``MAX_DURATION`` (30 minutes), so a forgotten fault cannot break a
student's cluster for the rest of the day.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from controlplane.trace import nodes

#: The longest any fault lasts, in seconds of the cluster's clock (whatever ``for`` says).
MAX_DURATION: Final = 1800.0
#: The key of a lasting fault's duration, in seconds, wherever a fault is written down.
DURATION: Final = "for"
#: A simulated node's name (``Cluster.component_plan``: ``node-1`` ... ``node-N``).
NODE_NAME: Final = re.compile(r"node-([1-9][0-9]*)")
#: The languages every text of the catalogue is written in (Django's codes), English first.
LANGUAGES: Final = ("en", "zh-hans")


class InvalidFault(ValueError):
    """A fault that cannot be applied as written: an unknown kind, a missing, unknown or bad parameter.

    ``parameter`` names the parameter at fault (None: the kind itself), so a caller can say where.
    """

    def __init__(self, message: str, *, parameter: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter


@dataclass(frozen=True)
class Parameter:
    """One parameter of a kind: its name, what it is (in each language), how its value is checked."""

    name: str
    description: Mapping[str, str]
    #: The check of a value, given the cluster's node count (None: not known here); returns the value.
    check: Callable[[Any, int | None], str | int]
    #: How the value looks, for ``manage.py fault list`` (``node-1 ... node-N``).
    shape: str


def _node(value: Any, nodes_in_cluster: int | None) -> str:
    if not isinstance(value, str) or (match := NODE_NAME.fullmatch(value)) is None:
        raise InvalidFault(f"{value!r} is not a node's name: node-1, node-2 ...", parameter="node")
    if nodes_in_cluster is not None and int(match[1]) > nodes_in_cluster:
        raise InvalidFault(
            f"{value!r}: the cluster has {nodes_in_cluster} node(s), node-1 to node-{nodes_in_cluster}",
            parameter="node",
        )
    return value


NODE: Final = Parameter(
    "node",
    {"en": "the node, node-1 to node-N of the cluster", "zh-hans": "节点：集群中的 node-1 到 node-N"},
    _node,
    "node-1 ... node-N",
)

#: The control plane's components that run as static pods, restarted by the kubelet with
#: CrashLoopBackOff when they crash (each node's kube-proxy, a DaemonSet's pod, is checked by node).
CRASHING_COMPONENTS: Final = (nodes.SCHEDULER, nodes.CONTROLLER_MANAGER)


def _crashing(value: Any, nodes_in_cluster: int | None) -> str:
    if value in CRASHING_COMPONENTS:
        return str(value)
    kind, _, node = value.partition(":") if isinstance(value, str) else ("", "", "")
    if kind == "kube-proxy":
        try:
            return nodes.kube_proxy(_node(node, nodes_in_cluster))
        except InvalidFault as error:
            raise InvalidFault(str(error), parameter="component") from None
    if kind == "kubelet":
        # The kubelet is no pod: systemd restarts it every 10 s (kubeadm's kubelet.service,
        # Restart=always, RestartSec=10), without the kubelet's back-off.
        raise InvalidFault(
            f"{value!r}: a kubelet runs under systemd, not in a pod, so it does not crash-loop "
            "with the kubelet's back-off (stop it with stop-kubelet)",
            parameter="component",
        )
    raise InvalidFault(
        f"{value!r} is not a component that crash-loops: scheduler, controller-manager or kube-proxy:node-N",
        parameter="component",
    )


COMPONENT: Final = Parameter(
    "component",
    {
        "en": "the component: scheduler, controller-manager, or kube-proxy:node-N (its diagram id)",
        "zh-hans": "组件：scheduler、controller-manager 或 kube-proxy:node-N（它在拓扑图中的 id）",
    },
    _crashing,
    "scheduler | controller-manager | kube-proxy:node-N",
)


@dataclass(frozen=True)
class FaultKind:
    """One kind of fault (see the module's docstring)."""

    name: str
    #: What upstream operation or failure it is, in one line (``manage.py fault list``, docs/faults.md).
    upstream: str
    #: A label per language: what a button that applies it says. ``{node}`` and the like are its
    #: parameters' values.
    label: Mapping[str, str]
    #: What a button that clears it says (None: it happens at once, there is nothing to clear).
    clear_label: Mapping[str, str] | None
    #: What it does, per language: ``manage.py fault list`` and the instructor's console.
    summary: Mapping[str, str]
    #: The diagram node it hits, its parameters' values filled in (``kubelet:{node}``).
    target: str
    parameters: tuple[Parameter, ...] = ()
    #: Whether it lasts until cleared or its time is up (False: over once it is done).
    lasting: bool = True
    max_duration: float = MAX_DURATION

    def parameter(self, name: str) -> Parameter | None:
        return next((p for p in self.parameters if p.name == name), None)


CATALOGUE: Final[Mapping[str, FaultKind]] = {
    kind.name: kind
    for kind in (
        FaultKind(
            name="compact-store",
            upstream="etcd compaction at the current revision (kube-apiserver's --etcd-compaction-interval)",
            label={"en": "Compact etcd's history now", "zh-hans": "立即压缩 etcd 的历史版本"},
            clear_label=None,
            summary={
                "en": "Compacts the cluster's store at its current revision, as kube-apiserver's "
                "--etcd-compaction-interval does: reads and watches of the store at older revisions "
                "get 410 Gone (too old resource version).",
                "zh-hans": "在当前修订版本压缩集群存储，就像 kube-apiserver 的 --etcd-compaction-interval "
                "那样：在更早修订版本上读取和监听存储会得到 410 Gone（资源版本过旧）。",
            },
            target=nodes.ETCD,
            lasting=False,
        ),
        FaultKind(
            name="restart-apiserver",
            upstream="a kube-apiserver restart (systemctl restart, or its static pod restarted)",
            label={"en": "Restart the API server", "zh-hans": "重启 API 服务器"},
            clear_label=None,
            summary={
                "en": "Restarts the API server: its watch caches are filled anew from the store at "
                "the current revision and every watch is cut; each client watches again from its last "
                "resourceVersion, is answered 410 (too old resource version) and lists again.",
                "zh-hans": "重启 API 服务器：它的监听缓存从存储的当前修订版本重新填充，所有监听都被切断；"
                "每个客户端从它最后的 resourceVersion 重新监听，得到 410（资源版本过旧）后重新列举。",
            },
            target=nodes.APISERVER,
            lasting=False,
        ),
        FaultKind(
            name="stop-kubelet",
            upstream="a node's kubelet stopped (systemctl stop kubelet): no Lease renewals, no status",
            label={"en": "Stop the kubelet on {node}", "zh-hans": "停止 {node} 上的 kubelet"},
            clear_label={
                "en": "Start the kubelet on {node} again",
                "zh-hans": "重新启动 {node} 上的 kubelet",
            },
            summary={
                "en": "Stops the node's kubelet: its Lease is no longer renewed and its status no "
                "longer reported, so the node lifecycle controller marks the node Unknown, taints it "
                "unreachable:NoExecute, and its pods are evicted after their tolerationSeconds. "
                "Clearing it starts the kubelet again.",
                "zh-hans": "停止该节点的 kubelet：它的 Lease 不再续约，状态不再上报，于是节点生命周期控制器"
                "把节点标为 Unknown，加上 unreachable:NoExecute 污点，Pod 在 tolerationSeconds 之后被驱逐。"
                "清除故障会重新启动 kubelet。",
            },
            target=nodes.kubelet("{node}"),
            parameters=(NODE,),
        ),
        FaultKind(
            name="stop-kube-proxy",
            upstream="a node's kube-proxy stopped: the rules it wrote stay, but are synced no more",
            label={"en": "Stop kube-proxy on {node}", "zh-hans": "停止 {node} 上的 kube-proxy"},
            clear_label={
                "en": "Start kube-proxy on {node} again",
                "zh-hans": "重新启动 {node} 上的 kube-proxy",
            },
            summary={
                "en": "Stops the node's kube-proxy: the rules it last wrote stay in the node, but no "
                "change of a Service or an EndpointSlice reaches them any more (no proxy.sync from it). "
                "Clearing it starts kube-proxy again: it lists Services and EndpointSlices and syncs "
                "the node's rules.",
                "zh-hans": "停止该节点的 kube-proxy：它最后写下的规则仍留在节点上，但 Service 和 "
                "EndpointSlice 的变化不再同步到这些规则（它不再发出 proxy.sync）。清除故障会重新启动 "
                "kube-proxy：它重新列举 Service 和 EndpointSlice，并同步该节点的规则。",
            },
            target=nodes.kube_proxy("{node}"),
            parameters=(NODE,),
        ),
        FaultKind(
            name="stop-scheduler",
            upstream="kube-scheduler stopped (systemctl stop, or its static pod's manifest moved away)",
            label={"en": "Stop the scheduler", "zh-hans": "停止调度器"},
            clear_label={"en": "Start the scheduler again", "zh-hans": "重新启动调度器"},
            summary={
                "en": "Stops kube-scheduler, which gives its Lease up as it exits: new pods stay "
                "Pending, bound to no node. Clearing it starts a new scheduler: it lists pods and "
                "nodes again, takes the Lease and binds the pods that waited.",
                "zh-hans": "停止 kube-scheduler，它退出时交还自己的 Lease：新建的 Pod 一直处于 Pending，"
                "不会被绑定到任何节点。清除故障会启动一个新的调度器：它重新列举 Pod 和节点，获得 Lease，"
                "并绑定一直在等待的 Pod。",
            },
            target=nodes.SCHEDULER,
        ),
        FaultKind(
            name="stop-controller-manager",
            upstream="kube-controller-manager stopped (systemctl stop, or its static pod's manifest moved)",
            label={"en": "Stop the controller manager", "zh-hans": "停止控制器管理器"},
            clear_label={"en": "Start the controller manager again", "zh-hans": "重新启动控制器管理器"},
            summary={
                "en": "Stops kube-controller-manager: no controller reacts any more (a new Deployment "
                "gets no ReplicaSet, a ReplicaSet no pods), and its Lease stays held, as upstream's "
                "does not give it up. Clearing it starts a new one: it lists everything again, takes "
                "the Lease once the old one has expired and catches up.",
                "zh-hans": "停止 kube-controller-manager：所有控制器都不再响应（新的 Deployment 不会得到 "
                "ReplicaSet，ReplicaSet 也不会创建 Pod），它的 Lease 仍被占着，因为上游的控制器管理器"
                "退出时不交还 Lease。清除故障会启动一个新的控制器管理器：它重新列举所有对象，等旧的 Lease "
                "过期后获得 Lease，再补上落下的工作。",
            },
            target=nodes.CONTROLLER_MANAGER,
        ),
        FaultKind(
            name="crash-loop",
            upstream="a component in CrashLoopBackOff: it crashes after each start, its kubelet restarts it",
            label={"en": "Make {component} crash-loop", "zh-hans": "让 {component} 陷入崩溃循环"},
            clear_label={
                "en": "Let {component} run normally again",
                "zh-hans": "让 {component} 恢复正常运行",
            },
            summary={
                "en": "The component crashes a few seconds after each start, and its kubelet starts it "
                "again with CrashLoopBackOff: at once the first time, then after 10 s, 20 s, 40 s ... "
                "up to 5 minutes. Each start lists and watches again. A crash leaves a leader's Lease "
                "held, so a crash-looping scheduler or controller manager waits for it to expire at "
                "each start and never gets to work. Clearing it lets the component run normally.",
                "zh-hans": "该组件每次启动几秒后就崩溃，它的 kubelet 按 CrashLoopBackOff 重新启动它："
                "第一次立即重启，之后等待 10 秒、20 秒、40 秒……最长 5 分钟。每次启动都会重新列举和监听。"
                "崩溃不会交还领导者的 Lease，所以陷入崩溃循环的调度器或控制器管理器每次启动都要等它过期，"
                "始终无法开始工作。清除故障后，组件恢复正常运行。",
            },
            target="{component}",
            parameters=(COMPONENT,),
        ),
        FaultKind(
            name="hot-loop-client",
            upstream="a controller stuck in a hot loop, throttled by API Priority and Fairness",
            label={
                "en": "Start a controller that hot-loops (user hot-loop)",
                "zh-hans": "启动一个陷入热循环的控制器（用户 hot-loop）",
            },
            clear_label={"en": "Stop the hot-looping controller", "zh-hans": "停止陷入热循环的控制器"},
            summary={
                "en": "Runs a controller in the cluster, as the user hot-loop, that patches its "
                "ConfigMap in kube-system in bursts of many requests at once, five times a second, with "
                "no client-side rate limit, ignoring Retry-After: API Priority and Fairness queues it in "
                "a priority level of its own and answers it 429 once that level's queue is full, while "
                "everyone else's requests go on as before.",
                "zh-hans": "在集群中以用户 hot-loop 运行一个控制器：它不做客户端限速，也不理会 Retry-After，"
                "每秒五次、每次同时发出许多请求，修补它在 kube-system 中的 ConfigMap。API 优先级与公平性把它"
                "放进自己的优先级队列，队列满后对它返回 429，而其他人的请求照常进行。",
            },
            target=nodes.user("hot-loop"),
            # It costs the lab's CPU while it runs: five minutes at most, whatever ``for`` says.
            max_duration=300.0,
        ),
    )
}


@dataclass(frozen=True)
class FaultSpec:
    """A fault as written down, checked: its kind, its parameters' values, its duration.

    ``duration`` is seconds of the cluster's clock for a lasting fault (None: until cleared, at most
    the kind's ``max_duration``); always None for a fault that happens at once. Two specs with the same
    kind and parameters are the same fault (``key``), whatever their durations.
    """

    kind: str
    params: tuple[tuple[str, str | int], ...] = ()
    duration: float | None = None

    @property
    def definition(self) -> FaultKind:
        return CATALOGUE[self.kind]

    @property
    def key(self) -> tuple[str, tuple[tuple[str, str | int], ...]]:
        """What tells one fault from another: its kind and its parameters."""
        return self.kind, self.params

    def parameters(self) -> dict[str, str | int]:
        return dict(self.params)

    @property
    def target(self) -> str:
        """The diagram node it hits (``kubelet:node-2``)."""
        return self.definition.target.format(**self.parameters())

    def label(self, lang: str | None = None) -> str:
        """What a button applying it says, in Django language ``lang`` (English if not written in it)."""
        text = _in(self.definition.label, lang).format(**self.parameters())
        if self.duration is not None:
            seconds = f"{self.duration:g}"
            text += f"，持续 {seconds} 秒" if _language(lang) == "zh-hans" else f" for {seconds} s"
        return text

    def clear_label(self, lang: str | None = None) -> str:
        """What a button clearing it says; ``InvalidFault`` for a fault that happens at once."""
        labels = self.definition.clear_label
        if labels is None:
            raise InvalidFault(f"{self.kind} happens at once: there is nothing to clear")
        return _in(labels, lang).format(**self.parameters())

    def as_written(self) -> dict[str, Any]:
        """As a chapter or the command writes it: ``{"fault": kind, <param>: value, "for": seconds}``."""
        written: dict[str, Any] = {"fault": self.kind, **self.parameters()}
        if self.duration is not None:
            written[DURATION] = self.duration
        return written


def _language(lang: str | None) -> str:
    code = (lang or "en").lower()
    return "zh-hans" if code.startswith("zh") else "en"


def _in(texts: Mapping[str, str], lang: str | None) -> str:
    return texts.get(_language(lang)) or texts["en"]


def kind(name: Any) -> FaultKind:
    """The kind called ``name``; ``InvalidFault`` naming the known ones if there is none."""
    found = CATALOGUE.get(name) if isinstance(name, str) else None
    if found is None:
        raise InvalidFault(f"{name!r} is not a fault kind (known: {', '.join(CATALOGUE)})")
    return found


def _duration(value: Any, definition: FaultKind) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidFault(f"{DURATION} is a number of seconds, not {value!r}", parameter=DURATION)
    if not 1 <= value <= definition.max_duration:
        raise InvalidFault(
            f"{DURATION} must be from 1 to {definition.max_duration:g} seconds, not {value:g}",
            parameter=DURATION,
        )
    return float(value)


def check(
    name: Any, values: Mapping[str, Any], *, nodes: int | None = None, clearing: bool = False
) -> FaultSpec:
    """The fault ``name`` with the parameters ``values`` (and ``for``, its duration), checked.

    ``nodes`` is the node count of the cluster it is for, when known (a chapter's ``nodes:``), so
    ``node: node-4`` is refused for a three-node sandbox. ``clearing``: the fault is named to be
    cleared, so it takes no duration, and a kind that happens at once cannot be named at all.
    Raises ``InvalidFault`` for the first problem found.
    """
    definition = kind(name)
    if clearing and not definition.lasting:
        raise InvalidFault(f"{definition.name} happens at once: there is nothing to clear")
    known = {p.name for p in definition.parameters}
    for key in values:
        if key == DURATION and definition.lasting and not clearing:
            continue
        if key == DURATION:
            why = "it is cleared, not applied" if clearing else "it happens at once"
            raise InvalidFault(f"{definition.name} takes no {DURATION}: {why}", parameter=DURATION)
        if key not in known:
            takes = ", ".join(sorted(known)) or "none"
            raise InvalidFault(
                f"{definition.name} has no parameter {key!r} (its parameters: {takes})", parameter=str(key)
            )
    params: list[tuple[str, str | int]] = []
    for parameter in definition.parameters:
        if parameter.name not in values:
            raise InvalidFault(f"{definition.name} needs {parameter.name!r}", parameter=parameter.name)
        params.append((parameter.name, parameter.check(values[parameter.name], nodes)))
    duration = _duration(values[DURATION], definition) if DURATION in values else None
    return FaultSpec(definition.name, tuple(params), duration)


__all__ = [
    "CATALOGUE",
    "COMPONENT",
    "CRASHING_COMPONENTS",
    "DURATION",
    "LANGUAGES",
    "MAX_DURATION",
    "NODE",
    "FaultKind",
    "FaultSpec",
    "InvalidFault",
    "Parameter",
    "check",
    "kind",
]
