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
    #: Values a form offers to pick from when they are not the cluster's nodes and parts (a number of
    #: milliseconds: ``100``, ``200`` ...), written as a form sends them.
    suggestions: tuple[str, ...] = ()
    #: The value a fault written without this parameter gets (None: the parameter is needed).
    default: str | int | None = None
    #: How a label says a value, in a language (None: as it is): ``*`` is "every webhook".
    spoken: Callable[[str | int, str], str] | None = None


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


def _certified(value: Any, nodes_in_cluster: int | None) -> str:
    """A component with a client certificate of its own: the control plane's two, each node's two."""
    if value in CRASHING_COMPONENTS:
        return str(value)
    kind, _, node = value.partition(":") if isinstance(value, str) else ("", "", "")
    if kind in ("kubelet", "kube-proxy"):
        try:
            return f"{kind}:{_node(node, nodes_in_cluster)}"
        except InvalidFault as error:
            raise InvalidFault(str(error), parameter="component") from None
    raise InvalidFault(
        f"{value!r} is not a component with a client certificate: scheduler, controller-manager, "
        "kubelet:node-N or kube-proxy:node-N",
        parameter="component",
    )


#: A component of ``revoke-component-certificate``: any that authenticates with a client certificate.
CERTIFIED_COMPONENT: Final = Parameter(
    "component",
    {
        "en": "the component: scheduler, controller-manager, kubelet:node-N or kube-proxy:node-N "
        "(its diagram id)",
        "zh-hans": "组件：scheduler、controller-manager、kubelet:node-N 或 kube-proxy:node-N"
        "（它在拓扑图中的 id）",
    },
    _certified,
    "scheduler | controller-manager | kubelet:node-N | kube-proxy:node-N",
)

#: The largest clock skew ``clock-skew`` sets, either way, in seconds: an hour.
MAX_SKEW: Final = 3600


def _skew(value: Any, nodes_in_cluster: int | None) -> int:
    seconds: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    elif isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value.strip()):
        seconds = int(value.strip())
    if seconds is None or seconds == 0 or abs(seconds) > MAX_SKEW:
        raise InvalidFault(
            f"{value!r}: seconds is a whole number of seconds the clock is off, from -{MAX_SKEW} to "
            f"+{MAX_SKEW}, not 0 (-60: a minute behind)",
            parameter="seconds",
        )
    return seconds


SKEW: Final = Parameter(
    "seconds",
    {
        "en": "how far the node's clock is off, in seconds: -60 a minute behind, +120 two minutes ahead",
        "zh-hans": "节点时钟的偏差（秒）：-60 表示慢一分钟，+120 表示快两分钟",
    },
    _skew,
    f"-{MAX_SKEW} ... +{MAX_SKEW}, not 0",
)


#: The components whose link to the API server a fault can cut or slow (besides each node's kubelet
#: and kube-proxy): every in-process client of the cluster's plan has one (``APIEndpoint.link``).
LINKED_COMPONENTS: Final = (nodes.SCHEDULER, nodes.CONTROLLER_MANAGER)


def _linked(value: Any, nodes_in_cluster: int | None) -> str:
    if value in LINKED_COMPONENTS:
        return str(value)
    kind, _, node = value.partition(":") if isinstance(value, str) else ("", "", "")
    if kind in ("kubelet", "kube-proxy"):
        try:
            checked = _node(node, nodes_in_cluster)
        except InvalidFault as error:
            raise InvalidFault(str(error), parameter="component") from None
        return nodes.kubelet(checked) if kind == "kubelet" else nodes.kube_proxy(checked)
    raise InvalidFault(
        f"{value!r} is not a component with a link to the API server: scheduler, controller-manager, "
        "kubelet:node-N or kube-proxy:node-N",
        parameter="component",
    )


LINKED_COMPONENT: Final = Parameter(
    "component",
    {
        "en": "the component: scheduler, controller-manager, kubelet:node-N or kube-proxy:node-N "
        "(its diagram id)",
        "zh-hans": "组件：scheduler、controller-manager、kubelet:node-N 或 kube-proxy:node-N"
        "（它在拓扑图中的 id）",
    },
    _linked,
    "scheduler | controller-manager | kubelet:node-N | kube-proxy:node-N",
)


def _milliseconds(name: str, low: int, high: int) -> Callable[[Any, int | None], str | int]:
    """The check of a number of milliseconds from ``low`` to ``high`` (a number, or its digits as
    ``manage.py fault --param`` writes them)."""

    def check(value: Any, nodes_in_cluster: int | None) -> int:
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidFault(f"{name} is a whole number of milliseconds, not {value!r}", parameter=name)
        if not low <= value <= high:
            raise InvalidFault(f"{name} must be from {low} to {high} ms, not {value}", parameter=name)
        return value

    return check


STORE_DELAY: Final = Parameter(
    "delay",
    {"en": "milliseconds each commit takes longer (200)", "zh-hans": "每次提交多花的毫秒数（200）"},
    _milliseconds("delay", 1, 10_000),
    "1 ... 10000 (ms)",
    ("100", "200", "500", "1000", "2000"),
)
LINK_MS: Final = Parameter(
    "ms",
    {"en": "milliseconds each request is delayed (100)", "zh-hans": "每个请求被延迟的毫秒数（100）"},
    _milliseconds("ms", 1, 10_000),
    "1 ... 10000 (ms)",
    ("50", "100", "200", "500", "1000"),
)
LINK_JITTER: Final = Parameter(
    "jitter",
    {
        "en": "up to how many milliseconds more or less, at random (0: none)",
        "zh-hans": "随机多出或少掉的最大毫秒数（0：没有）",
    },
    _milliseconds("jitter", 0, 10_000),
    "0 ... 10000 (ms)",
    ("0", "20", "50", "100"),
)

#: The ``webhook`` parameter's value for every admission webhook of the cluster (its default).
EVERY_WEBHOOK: Final = "*"
#: A webhook's name: a DNS subdomain, as ``webhooks[].name`` of a Validating or Mutating
#: WebhookConfiguration (upstream also wants three segments, ``IsFullyQualifiedName``; the lab's
#: configurations are not held to that, so neither is the fault).
WEBHOOK_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _webhook(value: Any, nodes_in_cluster: int | None) -> str:
    if value in (EVERY_WEBHOOK, ""):  # "": a form's field left empty
        return EVERY_WEBHOOK
    if isinstance(value, str) and value.startswith("webhook:"):  # its diagram id
        value = value.removeprefix("webhook:")
    if not isinstance(value, str) or len(value) > 253 or WEBHOOK_NAME.fullmatch(value) is None:
        raise InvalidFault(
            f"{value!r} is not an admission webhook's name (webhooks[].name of a Validating or Mutating "
            f"WebhookConfiguration, no-latest.kubelab.example), nor {EVERY_WEBHOOK} for every webhook",
            parameter="webhook",
        )
    return value


def _webhook_spoken(value: str | int, lang: str) -> str:
    if value == EVERY_WEBHOOK:
        return "所有准入 webhook" if lang == "zh-hans" else "every admission webhook"
    return f"webhook {value}"


#: The webhook of ``webhook-down`` and ``webhook-slow``, by name; every webhook when not given.
WEBHOOK: Final = Parameter(
    "webhook",
    {
        "en": "the admission webhook, by its name in its configuration (no-latest.kubelab.example), "
        "or * for every webhook of the cluster (the default)",
        "zh-hans": "准入 webhook：它在配置中的名字（no-latest.kubelab.example），或 *，表示集群的所有 "
        "webhook（默认）",
    },
    _webhook,
    "<webhook name> | * (every webhook, the default)",
    (EVERY_WEBHOOK,),
    default=EVERY_WEBHOOK,
    spoken=_webhook_spoken,
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
    #: For a kind that hits a link rather than a box: the diagram node at the link's other end
    #: (``apiserver``); its ``fault.applied`` and ``fault.cleared`` go from ``target`` to there.
    link_to: str | None = None

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
        FaultKind(
            name="partition-component",
            upstream="a network partition between a component and kube-apiserver: connects fail",
            label={
                "en": "Cut {component} off from the API server",
                "zh-hans": "切断 {component} 与 API 服务器之间的网络",
            },
            clear_label={
                "en": "Reconnect {component} to the API server",
                "zh-hans": "恢复 {component} 与 API 服务器之间的网络",
            },
            summary={
                "en": "Cuts the network between the component and the API server: each of its requests "
                "fails to connect (network is unreachable, no HTTP answer) and its watches break and "
                "fail again when it retries, while the component itself keeps running. A partitioned "
                "kubelet stops renewing its Lease, so its node becomes Unknown (NotReady) though its "
                "pods still run. Clearing it restores the link: the component connects again and "
                "watches (or lists) again.",
                "zh-hans": "切断该组件与 API 服务器之间的网络：它的每个请求都无法建立连接（网络不可达，没有 "
                "HTTP 应答），它的监听中断，重试时再次失败，而组件本身仍在运行。被隔离的 kubelet 不再续约"
                "它的 Lease，于是它的节点变为 Unknown（NotReady），尽管其上的 Pod 仍在运行。清除故障会恢复"
                "连接：组件重新连接，重新监听（或重新列举）。",
            },
            target="{component}",
            parameters=(LINKED_COMPONENT,),
            link_to=nodes.APISERVER,
        ),
        FaultKind(
            name="slow-store",
            upstream="etcd on a slow disk: every commit waits longer for its write-ahead log's fsync",
            label={
                "en": "Slow etcd's commits down by {delay} ms",
                "zh-hans": "让 etcd 的每次提交变慢 {delay} 毫秒",
            },
            clear_label={"en": "Give etcd a fast disk again", "zh-hans": "让 etcd 的磁盘恢复正常速度"},
            summary={
                "en": "Every commit of the store takes the given number of milliseconds longer, as on "
                "a slow disk (etcd's fsync latency): every write request of the API server waits for it "
                "while it holds its seat, so request latency grows (request.completed's duration), "
                "and reads served from the watch cache do not. Clearing it restores the disk's speed.",
                "zh-hans": "存储的每次提交都多花给定的毫秒数，就像磁盘很慢时（etcd 的 fsync 延迟）：API "
                "服务器的每个写请求都要占着席位等待它，于是请求延迟变长（request.completed 的 duration），"
                "而从监听缓存读取的请求不受影响。清除故障会恢复磁盘速度。",
            },
            target=nodes.ETCD,
            parameters=(STORE_DELAY,),
        ),
        FaultKind(
            name="store-unavailable",
            upstream="etcd unreachable from kube-apiserver (its members down or cut off)",
            label={"en": "Make etcd unreachable", "zh-hans": "让 etcd 无法访问"},
            clear_label={"en": "Make etcd reachable again", "zh-hans": "让 etcd 恢复可访问"},
            summary={
                "en": "The API server cannot reach the store: every write, and every read not served "
                'from its watch cache, fails with 500 "etcdserver: request timed out", and /readyz '
                "reports [-]etcd failed; reads and watches served from the watch cache go on. "
                "Clearing it makes the store reachable again.",
                "zh-hans": "API 服务器无法访问存储：每个写请求，以及每个不从监听缓存读取的请求，都以 500 "
                '"etcdserver: request timed out" 失败，/readyz 报告 [-]etcd failed；从监听缓存提供的'
                "读取和监听照常进行。清除故障后存储恢复可访问。",
            },
            target=nodes.ETCD,
        ),
        FaultKind(
            name="link-latency",
            upstream="network latency (with jitter) between a component and kube-apiserver",
            label={
                "en": "Delay {component}'s requests by {ms} ms (± {jitter} ms)",
                "zh-hans": "让 {component} 的请求延迟 {ms} 毫秒（± {jitter} 毫秒）",
            },
            clear_label={
                "en": "Give {component} a fast link again",
                "zh-hans": "让 {component} 的网络恢复正常速度",
            },
            summary={
                "en": "Every request of the component to the API server is delayed by the given "
                "milliseconds, give or take the jitter, before it reaches the server, as over a slow "
                "network: its work (a scheduler's bindings, a kubelet's status) lags behind. Clearing "
                "it restores the link's speed.",
                "zh-hans": "该组件发往 API 服务器的每个请求在到达服务器前都被延迟给定的毫秒数（上下浮动 "
                "jitter），就像网络很慢时：它的工作（调度器的绑定、kubelet 的状态上报）随之滞后。清除故障"
                "会恢复网络速度。",
            },
            target="{component}",
            parameters=(LINKED_COMPONENT, LINK_MS, LINK_JITTER),
            link_to=nodes.APISERVER,
        ),
        FaultKind(
            name="revoke-component-certificate",
            upstream="a component's client certificate no longer trusted by the API server's x509 "
            "authenticator; an operator then issues it a new one (kubeadm certs renew) and restarts it",
            label={
                "en": "Revoke the client certificate of {component}",
                "zh-hans": "吊销 {component} 的客户端证书",
            },
            clear_label={
                "en": "Issue {component} a new certificate and restart it",
                "zh-hans": "为 {component} 签发新证书并重启它",
            },
            summary={
                "en": "Adds the serial number of the component's client certificate to the cluster's "
                "revocation list: every request it makes is answered 401 Unauthorized, so it can no "
                "longer read, watch or write anything (a kubelet renews no Lease and its node goes "
                "Unknown; a scheduler loses its leader Lease and binds nothing). Clearing it issues the "
                "component a new certificate and restarts it: it lists everything again and recovers.",
                "zh-hans": "把该组件客户端证书的序列号加入集群的吊销列表：它发出的每个请求都得到 "
                "401 Unauthorized，于是它再也无法读取、监听或写入任何对象（kubelet 无法续约 Lease，"
                "节点变为 Unknown；调度器失去领导者 Lease，不再绑定 Pod）。清除故障会为组件签发新证书"
                "并重启它：它重新列举所有对象，恢复正常。",
            },
            target="{component}",
            parameters=(CERTIFIED_COMPONENT,),
        ),
        FaultKind(
            name="clock-skew",
            upstream="a node's clock stepped off the others' (NTP failing, or set by hand with date -s)",
            label={
                "en": "Skew the clock of {node} by {seconds} s",
                "zh-hans": "把 {node} 的时钟调偏 {seconds} 秒",
            },
            clear_label={
                "en": "Set the clock of {node} right again",
                "zh-hans": "把 {node} 的时钟调回正确时间",
            },
            summary={
                "en": "Steps the clock the node's kubelet reads by the given seconds: the renewTime of "
                "its Lease and the heartbeats of its status are off by that much. The node lifecycle "
                "controller counts a Lease as renewed only when its renewTime moves past the last one it "
                "saw, so a clock set back by more than the grace period makes the node Unknown while the "
                "kubelet runs, until its clock passes its last renewTime again. The kubelet puts Ready "
                "back at its next status update, which the controller takes as one heartbeat: the node "
                "flaps between Unknown and Ready. Clearing it steps the "
                "clock back right (a clock that was ahead then goes back in time, with the same effect).",
                "zh-hans": "把该节点 kubelet 读取的时钟调偏给定的秒数：它的 Lease 的 renewTime 和状态心跳"
                "都偏差同样多。节点生命周期控制器只有在 Lease 的 renewTime 超过它上次看到的值时才认为"
                "Lease 已续约，所以时钟往回调超过宽限期时，即使 kubelet 仍在运行，节点也会变为 Unknown，"
                "直到它的时钟再次超过上次的 renewTime。kubelet 在下一次状态更新时把 Ready 改回来，"
                "控制器把这算作一次心跳，于是节点在 Unknown 和 Ready 之间反复切换。"
                "清除故障会把时钟调回正确时间（原先调快的时钟因此倒退，效果相同）。",
            },
            target=nodes.kubelet("{node}"),
            parameters=(NODE, SKEW),
        ),
        FaultKind(
            name="kill-node",
            upstream="a node powered off: its kubelet and kube-proxy die at once, without a word",
            label={"en": "Power off {node}", "zh-hans": "关闭 {node} 的电源"},
            clear_label={"en": "Boot {node} again", "zh-hans": "重新启动 {node}"},
            summary={
                "en": "The node dies as a machine losing power: its kubelet and kube-proxy stop at once, "
                "with no last status update, so its Lease is no longer renewed, the node lifecycle "
                "controller marks it Unknown and taints it unreachable:NoExecute, and its pods are "
                "evicted after their tolerationSeconds. Clearing it boots the node: its kubelet and "
                "kube-proxy start again.",
                "zh-hans": "该节点像断电的机器一样死去：它的 kubelet 和 kube-proxy 立即停止，不再做最后一次"
                "状态上报，于是它的 Lease 不再续约，节点生命周期控制器把节点标为 Unknown，加上 "
                "unreachable:NoExecute 污点，Pod 在 tolerationSeconds 之后被驱逐。清除故障会重新启动该"
                "节点：它的 kubelet 和 kube-proxy 重新运行。",
            },
            target=nodes.kubelet("{node}"),
            parameters=(NODE,),
        ),
        FaultKind(
            name="rotate-encryption-key",
            upstream="a rotation of the encryption-at-rest key of Secrets (Encrypting Confidential Data "
            "at Rest: new key first, API server reloaded, every Secret rewritten)",
            label={"en": "Rotate the encryption key of Secrets", "zh-hans": "轮换 Secret 的加密密钥"},
            clear_label=None,
            summary={
                "en": "Adds a new key first in the provider list of the cluster's EncryptionConfiguration, "
                "has the API server reload its transformers, then replaces every Secret unchanged, as "
                "kubectl get secrets -A -o json | kubectl replace -f - does: each is written again "
                "encrypted with the new key, and the etcd panel shows its new key prefix. The old key "
                "stays in the list, so anything not yet rewritten can still be read.",
                "zh-hans": "在集群 EncryptionConfiguration 的提供者列表最前面加入一个新密钥，让 API 服务器"
                "重新加载它的转换器，然后原样替换每个 Secret，就像 kubectl get secrets -A -o json | "
                "kubectl replace -f - 那样：每个 Secret 都用新密钥重新加密写入，etcd 面板显示它新的密钥"
                "前缀。旧密钥仍留在列表中，尚未重写的对象依然可读。",
            },
            target=nodes.APISERVER,
            lasting=False,
        ),
        FaultKind(
            name="webhook-down",
            upstream="an admission webhook's server down or unreachable from kube-apiserver (connection "
            "refused); its failurePolicy decides what each call that fails means",
            label={
                "en": "Take {webhook} down",
                "zh-hans": "让 {webhook} 宕机",
            },
            clear_label={
                "en": "Bring {webhook} back up",
                "zh-hans": "让 {webhook} 恢复运行",
            },
            summary={
                "en": "Every call of the API server to the webhook (or to every webhook) fails as if "
                'nothing listened there: failed calling webhook "<name>": failed to call webhook: Post '
                '"https://...": dial tcp ...: connect: connection refused. With failurePolicy Fail the '
                "request the webhook should admit is refused (500 InternalError with that message); with "
                "Ignore it goes through as if the webhook were not configured. Clearing it lets the "
                "API server reach the webhook again.",
                "zh-hans": "API 服务器对该 webhook（或所有 webhook）的每次调用都像那里没有服务在监听"
                '一样失败：failed calling webhook "<name>": failed to call webhook: Post '
                '"https://...": dial tcp ...: connect: connection refused。'
                "failurePolicy 为 Fail 时，需要该 webhook 准入的请求被拒绝（500 InternalError，"
                "带上述消息）；为 Ignore 时请求照常通过，就像没有配置该 webhook。"
                "清除故障后 API 服务器重新能访问该 webhook。",
            },
            target=nodes.webhook("{webhook}"),
            parameters=(WEBHOOK,),
            link_to=nodes.APISERVER,
        ),
        FaultKind(
            name="webhook-slow",
            upstream="a slow network (or an overloaded server) between kube-apiserver and an admission "
            "webhook: calls beyond the webhook's timeoutSeconds fail, and its failurePolicy decides",
            label={
                "en": "Delay calls to {webhook} by {ms} ms",
                "zh-hans": "让对 {webhook} 的调用延迟 {ms} 毫秒",
            },
            clear_label={
                "en": "Give {webhook} a fast link again",
                "zh-hans": "让 {webhook} 的网络恢复正常速度",
            },
            summary={
                "en": "Every call of the API server to the webhook (or to every webhook) waits the "
                "given milliseconds first, within the webhook's timeoutSeconds: a request the webhook "
                "admits takes that much longer (request.completed's duration). A delay that reaches "
                'timeoutSeconds makes the call fail with failed calling webhook "<name>": failed to '
                'call webhook: Post "https://...": context deadline exceeded, and failurePolicy '
                "decides: Fail refuses the request (500 InternalError), Ignore lets it through. "
                "Clearing it restores the link's speed.",
                "zh-hans": "API 服务器对该 webhook（或所有 webhook）的每次调用都先等待给定的毫秒数，这段时间"
                "计入该 webhook 的 timeoutSeconds：需要它准入的请求因此变慢这么多（request.completed 的 "
                'duration）。延迟达到 timeoutSeconds 时调用失败：failed calling webhook "<name>": '
                'failed to call webhook: Post "https://...": context deadline exceeded，由 '
                "failurePolicy 决定结果：Fail 拒绝请求（500 InternalError），Ignore 让请求通过。清除故障"
                "会恢复网络速度。",
            },
            target=nodes.webhook("{webhook}"),
            parameters=(WEBHOOK, LINK_MS),
            link_to=nodes.APISERVER,
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
        text = _in(self.definition.label, lang).format(**self._spoken(lang))
        if self.duration is not None:
            seconds = f"{self.duration:g}"
            text += f"，持续 {seconds} 秒" if _language(lang) == "zh-hans" else f" for {seconds} s"
        return text

    def clear_label(self, lang: str | None = None) -> str:
        """What a button clearing it says; ``InvalidFault`` for a fault that happens at once."""
        labels = self.definition.clear_label
        if labels is None:
            raise InvalidFault(f"{self.kind} happens at once: there is nothing to clear")
        return _in(labels, lang).format(**self._spoken(lang))

    def _spoken(self, lang: str | None) -> dict[str, str | int]:
        """Its parameters' values as its labels say them, in ``lang``."""
        values = self.parameters()
        for parameter in self.definition.parameters:
            if parameter.spoken is not None and parameter.name in values:
                values[parameter.name] = parameter.spoken(values[parameter.name], _language(lang))
        return values

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
        if parameter.name not in values and parameter.default is not None:
            params.append((parameter.name, parameter.default))
            continue
        if parameter.name not in values:
            raise InvalidFault(f"{definition.name} needs {parameter.name!r}", parameter=parameter.name)
        params.append((parameter.name, parameter.check(values[parameter.name], nodes)))
    duration = _duration(values[DURATION], definition) if DURATION in values else None
    return FaultSpec(definition.name, tuple(params), duration)


__all__ = [
    "CATALOGUE",
    "CERTIFIED_COMPONENT",
    "COMPONENT",
    "CRASHING_COMPONENTS",
    "DURATION",
    "EVERY_WEBHOOK",
    "LANGUAGES",
    "LINKED_COMPONENT",
    "LINKED_COMPONENTS",
    "LINK_JITTER",
    "LINK_MS",
    "MAX_DURATION",
    "MAX_SKEW",
    "NODE",
    "SKEW",
    "STORE_DELAY",
    "WEBHOOK",
    "FaultKind",
    "FaultSpec",
    "InvalidFault",
    "Parameter",
    "check",
    "kind",
]
