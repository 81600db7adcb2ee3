"""Presenter mode's fault controls: the faults an instructor applies to one cluster from its presenter
page (``/lab/<name>/present/``, static/topology/present.js), and clears.

Thin over ``courses.gateway`` (apply, clear all, the cluster's node count) and the fault catalogue
(``controlplane.faults.catalogue``, the one check of a fault). What it adds is for a person at a page:

- ``fault_panel``: the panel's choices in the page's language, each kind with its digit, and the values
  each parameter takes on this cluster (``node-2``, ``kube-proxy:node-1``), a digit each: those of the
  cluster's nodes and parts that the catalogue's own check accepts (``parameter_values``);
- ``read_fault``: the posted form as a checked ``FaultSpec``; ``BadFaultRequest`` says what is wrong
  in the user's language (the catalogue speaks English, as the control plane does);
- ``apply`` and ``clear_all``: apply a fault (now or after a delay), or clear every fault of the
  cluster (and heal it), and say what happened; ``ClusterNotHere`` and ``FaultNotDone`` when the lab
  could not. The classroom dashboard applies faults to its students' sandboxes with these too;
- ``perform``: the presenter's form, applied or cleared;
- ``record``, ``record_refusal``: an action on a classroom's cluster (``ClassroomCluster``) goes to that
  classroom's log, as the dashboard's own do; a sandbox or a cluster of no classroom has no log, and
  nothing is written.

Who may: the view asks ``courses.classrooms.access.auser_may_break`` before any of this.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from django.utils.translation import gettext, ngettext

from controlplane.faults import catalogue
from controlplane.trace import nodes as diagram
from courses import gateway
from courses.classrooms import services
from courses.classrooms.models import Classroom
from courses.sandboxes.identities import sandbox_owner

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser
    from django.contrib.auth.models import AnonymousUser

#: The keys that pick a kind, then a value of each of its parameters, in the panel: the first nine of each.
DIGITS = "123456789"
#: The form's ``action``: apply the chosen fault, or clear every fault of the cluster.
APPLY = "apply"
CLEAR_ALL = "clear-all"


class FaultActionError(Exception):
    """The presenter's fault action was not done; the message says why, in the user's language."""


class BadFaultRequest(FaultActionError):
    """The form names no fault the catalogue accepts, or no action (the request is wrong: 400)."""


class ClusterNotHere(FaultActionError):
    """This process runs no lab serving the cluster (``gateway.NotServedHere``)."""


class FaultNotDone(FaultActionError):
    """The lab refused the fault (``gateway.FaultRefused``: the cluster hibernates, failed ...)."""


# -- the panel ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Choice:
    """One value a parameter may take on this cluster (``node-2``, ``kube-proxy:node-1``)."""

    value: str
    #: The digit that picks it ("" past the ninth).
    key: str


@dataclass(frozen=True, slots=True)
class ParameterChoices:
    """A parameter some kind takes, and the values it may take on this cluster."""

    name: str
    #: What it is, in the page's language (the catalogue's description).
    description: str
    choices: tuple[Choice, ...]


@dataclass(frozen=True, slots=True)
class KindChoice:
    name: str
    key: str
    #: What it does, as a button says it, its parameters shown as "…" (they are chosen beside it).
    label: str
    #: The same with its parameters left in (``{node}``), for the page to fill in once chosen.
    template: str
    summary: str
    #: The names of its parameters (``node``), in order: the page asks for each before it applies.
    parameters: tuple[str, ...]
    lasting: bool


@dataclass(frozen=True, slots=True)
class FaultPanel:
    cluster: str
    kinds: tuple[KindChoice, ...]
    #: Every parameter a kind takes, once each, with its values on this cluster.
    parameters: tuple[ParameterChoices, ...]
    #: Whether this process runs the cluster: faults can be applied from here.
    served: bool


def _in_language(texts: Mapping[str, str], lang: str | None) -> str:
    code = "zh-hans" if (lang or "").lower().startswith("zh") else "en"
    return texts.get(code) or texts["en"]


def node_count(*, cluster: str) -> int | None:
    """How many nodes the cluster simulates; None when this process does not run it."""
    try:
        return gateway.cluster_facts(cluster=cluster).nodes
    except gateway.NotServedHere:
        return None


def _candidates(nodes: int | None) -> list[str]:
    """What a parameter could name on a cluster of ``nodes`` nodes: its nodes and its parts' diagram ids."""
    names = [f"node-{n}" for n in range(1, (nodes or 0) + 1)]
    parts = [diagram.APISERVER, diagram.ETCD, diagram.SCHEDULER, diagram.CONTROLLER_MANAGER]
    return names + parts + [diagram.kubelet(n) for n in names] + [diagram.kube_proxy(n) for n in names]


def parameter_values(parameter: catalogue.Parameter, *, nodes: int | None) -> tuple[str, ...]:
    """The values ``parameter`` takes on a cluster of ``nodes`` nodes: those of the cluster's nodes and
    parts that the catalogue's own check accepts, then its own suggestions (a number of milliseconds)
    (none when the node count is not known)."""
    if nodes is None:
        return ()
    values = []
    for candidate in (*_candidates(nodes), *parameter.suggestions):
        try:
            checked = parameter.check(candidate, nodes)
        except ValueError:  # InvalidFault: not one of its values
            continue
        if str(checked) == candidate:
            values.append(candidate)
    return tuple(values)


def _digit(index: int) -> str:
    return DIGITS[index] if index < len(DIGITS) else ""


def fault_panel(*, cluster: str, lang: str | None) -> FaultPanel:
    """The presenter's fault panel for ``cluster``: every kind of the catalogue, and the values its
    parameters take on the cluster."""
    kinds = []
    parameters: dict[str, catalogue.Parameter] = {}
    for index, kind in enumerate(catalogue.CATALOGUE.values()):
        template = _in_language(kind.label, lang)
        kinds.append(
            KindChoice(
                name=kind.name,
                key=_digit(index),
                label=template.format(**{p.name: "…" for p in kind.parameters}),
                template=template,
                summary=_in_language(kind.summary, lang),
                parameters=tuple(p.name for p in kind.parameters),
                lasting=kind.lasting,
            )
        )
        parameters.update((p.name, p) for p in kind.parameters)
    nodes = node_count(cluster=cluster)
    choices = tuple(
        ParameterChoices(
            name=parameter.name,
            description=_sentence(_in_language(parameter.description, lang)),
            choices=tuple(
                Choice(value, _digit(i)) for i, value in enumerate(parameter_values(parameter, nodes=nodes))
            ),
        )
        for parameter in parameters.values()
    )
    return FaultPanel(cluster=cluster, kinds=tuple(kinds), parameters=choices, served=nodes is not None)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


# -- the form ----------------------------------------------------------------------------------------


def _problem(
    problem: catalogue.InvalidFault,
    kind: catalogue.FaultKind,
    values: Mapping[str, Any],
    cluster: str,
    nodes: int | None,
) -> str:
    """What the catalogue refused, said in the user's language."""
    if problem.parameter == catalogue.DURATION:
        return gettext("The duration is a number of seconds, from 1 to %(most)s.") % {
            "most": f"{kind.max_duration:g}"
        }
    parameter = kind.parameter(problem.parameter or "")
    if parameter is None:
        return str(problem)
    choices = ", ".join(parameter_values(parameter, nodes=nodes))
    value = values.get(parameter.name, "")
    if not choices:
        return gettext("%(value)s is not a %(parameter)s of cluster %(cluster)s.") % {
            "value": repr(value),
            "parameter": parameter.name,
            "cluster": cluster,
        }
    if not value:
        return gettext("%(kind)s needs a %(parameter)s: one of %(choices)s.") % {
            "kind": kind.name,
            "parameter": parameter.name,
            "choices": choices,
        }
    return gettext("%(value)s is not a %(parameter)s of cluster %(cluster)s: one of %(choices)s.") % {
        "value": repr(value),
        "parameter": parameter.name,
        "cluster": cluster,
        "choices": choices,
    }


def read_fault(form: Mapping[str, Any], *, cluster: str, nodes: int | None) -> catalogue.FaultSpec:
    """The fault the form asks for (``kind``, its parameters such as ``node``, and ``for`` seconds),
    checked by the catalogue against the cluster's node count; ``BadFaultRequest`` if it is not one."""
    name = form.get("kind", "")
    try:
        kind = catalogue.kind(name)
    except catalogue.InvalidFault:
        raise BadFaultRequest(
            gettext("%(kind)s is not a kind of fault (known: %(known)s).")
            % {"kind": repr(name), "known": ", ".join(catalogue.CATALOGUE)}
        ) from None
    values: dict[str, Any] = {p.name: form.get(p.name, "") for p in kind.parameters}
    seconds = str(form.get(catalogue.DURATION, "")).strip()
    if seconds:
        if not kind.lasting:
            raise BadFaultRequest(
                gettext("%(kind)s happens at once: it takes no duration.") % {"kind": kind.name}
            )
        try:
            values[catalogue.DURATION] = float(seconds)
        except ValueError:
            values[catalogue.DURATION] = seconds  # the catalogue says what a duration is
    try:
        return catalogue.check(kind.name, values, nodes=nodes)
    except catalogue.InvalidFault as problem:
        raise BadFaultRequest(_problem(problem, kind, values, cluster, nodes)) from None


# -- doing it ----------------------------------------------------------------------------------------

#: What ``gateway.apply_fault`` did (``FaultDone.outcome``), in words.
_OUTCOMES = {
    "applied": lambda: gettext("%(fault)s: done."),
    "renewed": lambda: gettext("%(fault)s: it was already in force; its time starts again."),
    "pending": lambda: gettext("%(fault)s: it starts shortly."),
    "under way": lambda: gettext("%(fault)s: it is already under way."),
}


async def apply(
    *,
    cluster: str,
    fault: catalogue.FaultSpec,
    reason: str,
    lang: str | None,
    delay: float = 0.0,
    actor: str = "",
) -> str:
    """Apply ``fault`` to ``cluster``, now or ``delay`` seconds from now, for the user ``actor`` (whom
    the cluster's audit log names); what happened, in words."""
    try:
        done = await gateway.apply_fault(
            cluster=cluster, fault=fault, reason=reason, delay=delay, actor=actor
        )
    except gateway.NotServedHere:
        raise ClusterNotHere(gettext("Cluster %(name)s does not run here.") % {"name": cluster}) from None
    except gateway.FaultRefused as refused:
        raise FaultNotDone(gettext("The lab did not apply it: %(reason)s") % {"reason": refused}) from None
    said = _OUTCOMES.get(done.outcome)
    label = fault.label(lang)
    return said() % {"fault": label} if said else f"{label}: {done.outcome}"


async def clear_all(*, cluster: str, reason: str, actor: str = "") -> str:
    """Clear every fault of ``cluster`` (and heal it) for the user ``actor``; what happened, in words."""
    try:
        count = await gateway.clear_all_faults(cluster=cluster, reason=reason, actor=actor)
    except gateway.NotServedHere:
        raise ClusterNotHere(gettext("Cluster %(name)s does not run here.") % {"name": cluster}) from None
    if not count:
        return gettext("No fault was in force on %(name)s; it runs as it should.") % {"name": cluster}
    return ngettext(
        "Cleared %(count)d fault of %(name)s; it runs as it should again.",
        "Cleared %(count)d faults of %(name)s; it runs as it should again.",
        count,
    ) % {"count": count, "name": cluster}


async def perform(
    *, cluster: str, form: Mapping[str, Any], actor: AbstractBaseUser | AnonymousUser, lang: str | None
) -> str:
    """Do what the form asks (``action``: ``apply``, the default, or ``clear-all``) to ``cluster`` for
    ``actor``, who may break it; what happened, in words. The action is written to the cluster's
    classroom's log, if it has one. Raises a ``FaultActionError``."""
    action = form.get("action") or APPLY
    reason = f"{actor.get_username()} in presenter mode"
    if action == CLEAR_ALL:
        message = await clear_all(cluster=cluster, reason=reason, actor=actor.get_username())
        await database_sync_to_async(record)(
            cluster=cluster, actor=actor, action="faults-cleared", detail=cluster
        )
        return message
    if action != APPLY:
        raise BadFaultRequest(
            gettext("%(action)s is not an action: apply or clear-all.") % {"action": repr(action)}
        )
    fault = read_fault(form, cluster=cluster, nodes=node_count(cluster=cluster))
    message = await apply(cluster=cluster, fault=fault, reason=reason, lang=lang, actor=actor.get_username())
    written = ", ".join(f"{k}={v}" for k, v in fault.as_written().items())
    await database_sync_to_async(record)(
        cluster=cluster, actor=actor, action="fault-applied", detail=f"{written} -> {cluster}"
    )
    return message


# -- the classroom's log -----------------------------------------------------------------------------


def _owner(cluster: str) -> Classroom | None:
    """The classroom whose cluster ``cluster`` is; never one for a sandbox, which belongs to none
    whatever a classroom claims (``courses.classrooms.access``)."""
    if sandbox_owner(cluster) is not None:
        return None
    return Classroom.objects.filter(clusters__cluster=cluster).first()


def record(*, cluster: str, actor: AbstractBaseUser | AnonymousUser, action: str, detail: str) -> None:
    """Write ``action`` to the log of the classroom ``cluster`` belongs to; nothing if it belongs to none."""
    classroom = _owner(cluster)
    if classroom is not None:
        services.log(classroom=classroom, actor=actor, action=action, detail=detail)


def record_refusal(*, cluster: str, actor: AbstractBaseUser | AnonymousUser, path: str) -> None:
    """A signed-in user was refused the cluster's faults: said in its classroom's log, as the dashboard
    says its refusals (an anonymous visitor's are not written)."""
    if actor.is_authenticated:
        record(cluster=cluster, actor=actor, action="refused", detail=path)


__all__ = [
    "APPLY",
    "CLEAR_ALL",
    "BadFaultRequest",
    "Choice",
    "ClusterNotHere",
    "FaultActionError",
    "FaultNotDone",
    "FaultPanel",
    "KindChoice",
    "ParameterChoices",
    "fault_panel",
    "node_count",
    "parameter_values",
    "perform",
    "read_fault",
    "record",
    "record_refusal",
]
