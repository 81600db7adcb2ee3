"""Describing what a check waits for, in words a student reads: the pieces of failure messages.

A failure says what was expected and what was seen, so the evaluator needs a name for every thing a
check can name: an object ("deployment web"), a list ("pods labelled app=web"), a field
("available replicas"), an event ("create request for configmaps by student:alice", "store
transaction writing /registry/configmaps/*/app-config"). Each is a ``failures.Phrase``: a template
marked for translation and the values that fill it, rendered only when a page shows it.

Event descriptions are built from the fields the check names, most telling first (a request's verb,
resource and user; a watch event's kind and receiver; a store transaction's key), and whatever else
the step names follows in parentheses as ``field=value``, so that nothing the check asks for is left
out of the message. Descriptions carry no article ("create request ...", not "a create request ..."):
the message templates put one where their language wants it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.api.selectors import DOES_NOT_EXIST, SelectorError, parse_label_selector
from courses.engine.checks.failures import Param, Phrase, gettext_noop, show
from courses.engine.checks.paths import FieldPath
from courses.engine.checks.spec import Condition, Count, EventMatcher, Target


def field_label(path: FieldPath) -> str:
    """How a message names a field: its path as written (``status.phase``), the exact API name."""
    return path.text


#: The count fields a message says in words ("3 available replicas"), by the last key of their path,
#: each marked for translation so that a Chinese page says them in Chinese. A number at any other
#: path is named by the path itself ("spec.minReadySeconds"), which reads the same in every language.
_COUNT_WORDS: Mapping[str, str] = {
    "replicas": gettext_noop("replicas"),
    "availableReplicas": gettext_noop("available replicas"),
    "readyReplicas": gettext_noop("ready replicas"),
    "updatedReplicas": gettext_noop("updated replicas"),
    "unavailableReplicas": gettext_noop("unavailable replicas"),
    "fullyLabeledReplicas": gettext_noop("fully labeled replicas"),
    "currentReplicas": gettext_noop("current replicas"),
}


def is_count_field(path: FieldPath, operand: Any) -> bool:
    """Whether a number compared at ``path`` reads as a count of things ("3 available replicas"): a
    path of plain keys whose last is a count the messages have words for (``status.availableReplicas``,
    ``spec.replicas``)."""
    return (
        path.plain
        and isinstance(operand, int)
        and not isinstance(operand, bool)
        and path.last_name in _COUNT_WORDS
    )


def count_label(path: FieldPath) -> Phrase:
    """``availableReplicas`` -> "available replicas", in the active language when rendered: the last
    key of a count field (``is_count_field``) in words."""
    return Phrase(_COUNT_WORDS[path.last_name])


def object_phrase(target: Target, name: str | None = None, namespace: str | None = None) -> Phrase:
    """One object: "deployment web", "pod web-1 in namespace kube-system" (``default`` goes unsaid)."""
    name = name if name is not None else target.name or ""
    namespace = namespace if namespace is not None else target.namespace
    kind = target.kind.lower()
    if target.namespaced and namespace and namespace != "default":
        return Phrase(
            gettext_noop("%(kind)s %(name)s in namespace %(namespace)s"),
            {"kind": kind, "name": name, "namespace": namespace},
        )
    return Phrase(gettext_noop("%(kind)s %(name)s"), {"kind": kind, "name": name})


def item_phrase(target: Target, item: Any) -> Phrase:
    """An item of a list, by the name and namespace in its metadata."""
    metadata = item.get("metadata") if isinstance(item, Mapping) else None
    metadata = metadata if isinstance(metadata, Mapping) else {}
    name = metadata.get("name")
    namespace = metadata.get("namespace")
    return object_phrase(
        target,
        name if isinstance(name, str) else "?",
        namespace if isinstance(namespace, str) else None,
    )


def objects_phrase(target: Target) -> Param:
    """A list: "pods labelled app=web", "pods in every namespace with fields spec.nodeName=node-1"."""
    what: Param = target.resource
    absent = _absent_labels(target.label_selector)
    if len(absent) == 1:
        what = Phrase(gettext_noop("%(what)s without the label %(keys)s"), {"what": what, "keys": absent[0]})
    elif absent:
        what = Phrase(
            gettext_noop("%(what)s without the labels %(keys)s"), {"what": what, "keys": ", ".join(absent)}
        )
    elif target.label_selector:
        what = Phrase(
            gettext_noop("%(what)s labelled %(selector)s"), {"what": what, "selector": target.label_selector}
        )
    if target.field_selector:
        what = Phrase(
            gettext_noop("%(what)s with fields %(selector)s"),
            {"what": what, "selector": target.field_selector},
        )
    if target.namespaced:
        if target.namespace is None:
            return Phrase(gettext_noop("%(what)s in every namespace"), {"what": what})
        if target.namespace != "default":
            what = Phrase(
                gettext_noop("%(what)s in namespace %(namespace)s"),
                {"what": what, "namespace": target.namespace},
            )
    return what


def _absent_labels(selector: str | None) -> list[str]:
    """The keys of a selector made only of ``!key`` requirements ("!a,!b" -> a, b), else none:
    "nodes labelled !node-role..." reads as if the label were there."""
    try:
        requirements = parse_label_selector(selector or "").requirements
    except SelectorError:  # checks are validated when the content loads; never here
        return []
    if not requirements or any(r.operator != DOES_NOT_EXIST for r in requirements):
        return []
    return [r.key for r in requirements]


def bound_phrase(count: Count) -> Phrase:
    """How many: "at least 3", "one or more", "exactly 0", "between 1 and 3"."""
    if count.equals is not None:
        return Phrase(gettext_noop("exactly %(n)s"), {"n": count.equals})
    if count.at_least is not None and count.at_most is not None:
        return Phrase(
            gettext_noop("between %(low)s and %(high)s"), {"low": count.at_least, "high": count.at_most}
        )
    if count.at_most is not None:
        return Phrase(gettext_noop("at most %(n)s"), {"n": count.at_most})
    if count.at_least == 1:  # "at least 1 pods" is not English; the plural follows "one or more"
        return Phrase(gettext_noop("one or more"))
    return Phrase(gettext_noop("at least %(n)s"), {"n": count.at_least or 0})


_CONDITION_TEMPLATES = {
    "equals": gettext_noop("%(field)s = %(value)s"),
    "at_least": gettext_noop("%(field)s >= %(value)s"),
    "at_most": gettext_noop("%(field)s <= %(value)s"),
    "matches": gettext_noop('%(field)s like "%(value)s"'),
    "contains": gettext_noop("%(field)s containing %(value)s"),
}


def condition_phrase(condition: Condition) -> Phrase:
    """One condition, short: "status.phase = Running", "metadata.uid present"."""
    field = field_label(condition.path)
    if condition.op == "exists":
        template = gettext_noop("%(field)s present") if condition.operand else gettext_noop("no %(field)s")
        return Phrase(template, {"field": field})
    if condition.op == "matches" and condition.example is not None:
        return Phrase(_CONDITION_TEMPLATES["matches"], {"field": field, "value": condition.example})
    return Phrase(_CONDITION_TEMPLATES[condition.op], {"field": field, "value": show(condition.operand)})


# -- events --------------------------------------------------------------------------------------------

_HEADS = {
    "flowcontrol.decision": gettext_noop("flow control decision"),
    "admission.step": gettext_noop("admission step"),
    "store.compact": gettext_noop("store compaction"),
    "watch.opened": gettext_noop("opened watch"),
    "watch.closed": gettext_noop("closed watch"),
    "component.state": gettext_noop("component state change"),
    "proxy.sync": gettext_noop("kube-proxy sync"),
    "fault.applied": gettext_noop("applied fault"),
    "fault.cleared": gettext_noop("cleared fault"),
}


def _request(fields: dict[str, Any]) -> Phrase:
    """A request by what it asks: "create request for configmaps by student:alice"."""
    verb = fields.pop("verb", None)
    resource = fields.pop("resource", None)
    subresource = fields.pop("subresource", None)
    if resource is not None and subresource is not None:
        resource = f"{show(resource)}/{show(subresource)}"
    elif subresource is not None:
        fields["subresource"] = subresource
    what: Phrase
    if verb is not None and resource is not None:
        what = Phrase(
            gettext_noop("%(verb)s request for %(resource)s"),
            {"verb": show(verb), "resource": show(resource)},
        )
    elif verb is not None:
        what = Phrase(gettext_noop("%(verb)s request"), {"verb": show(verb)})
    elif resource is not None:
        what = Phrase(gettext_noop("request for %(resource)s"), {"resource": show(resource)})
    else:
        what = Phrase(gettext_noop("request"))
    if "name" in fields:
        what = Phrase(
            gettext_noop("%(what)s named %(name)s"), {"what": what, "name": show(fields.pop("name"))}
        )
    if "namespace" in fields:
        what = Phrase(
            gettext_noop("%(what)s in namespace %(namespace)s"),
            {"what": what, "namespace": show(fields.pop("namespace"))},
        )
    if "user" in fields:
        what = Phrase(gettext_noop("%(what)s by %(user)s"), {"what": what, "user": show(fields.pop("user"))})
    return what


def _event_head(type_name: str, fields: dict[str, Any]) -> Phrase:
    """The main words for an event of ``type_name``; the fields they say are taken out of ``fields``."""
    if type_name == "request.received":
        return _request(fields)
    if type_name == "request.completed":
        request = _request(fields)
        if "code" in fields:
            return Phrase(
                gettext_noop("%(code)s answer to the %(what)s"),
                {"code": show(fields.pop("code")), "what": request},
            )
        return Phrase(gettext_noop("answer to the %(what)s"), {"what": request})
    if type_name == "request.stage":
        stage = fields.pop("stage", None)
        outcome = fields.pop("outcome", None)
        request = _request(fields)
        if stage is None:
            return Phrase(gettext_noop("pipeline stage of the %(what)s"), {"what": request})
        if outcome == "deny":
            return Phrase(
                gettext_noop("refusal at the %(stage)s stage of the %(what)s"),
                {"stage": show(stage), "what": request},
            )
        if outcome == "pass":
            return Phrase(
                gettext_noop("passed %(stage)s stage of the %(what)s"),
                {"stage": show(stage), "what": request},
            )
        if outcome is not None:
            fields["outcome"] = outcome
        return Phrase(
            gettext_noop("%(stage)s stage of the %(what)s"), {"stage": show(stage), "what": request}
        )
    if type_name == "rbac.decision":
        allowed = fields.pop("allowed", None)
        request = _request(fields)
        if allowed is True:
            return Phrase(gettext_noop("authorization allowing the %(what)s"), {"what": request})
        if allowed is False:
            return Phrase(gettext_noop("authorization refusing the %(what)s"), {"what": request})
        return Phrase(gettext_noop("authorization of the %(what)s"), {"what": request})
    if type_name == "watch.event":
        event = fields.pop("event", None)
        what = (
            Phrase(gettext_noop("%(event)s watch event"), {"event": show(event)})
            if event is not None
            else Phrase(gettext_noop("watch event"))
        )
        about = fields.pop("kind", None) or fields.pop("resource", None)
        if about is not None:
            what = Phrase(gettext_noop("%(what)s for %(about)s"), {"what": what, "about": show(about)})
        if "name" in fields:
            what = Phrase(
                gettext_noop("%(what)s named %(name)s"), {"what": what, "name": show(fields.pop("name"))}
            )
        if "to" in fields:
            what = Phrase(gettext_noop("%(what)s to %(to)s"), {"what": what, "to": show(fields.pop("to"))})
        return what
    if type_name == "store.txn":
        writes = fields.get("writes")
        if isinstance(writes, dict) and isinstance(writes.get("key"), str):
            rest = {k: v for k, v in writes.items() if k not in ("key", "type")}
            if rest:
                fields["writes"] = rest
            else:
                del fields["writes"]
            template = gettext_noop("store transaction writing %(key)s")
            if writes.get("type") == "DELETE":
                template = gettext_noop("store transaction deleting %(key)s")
            elif writes.get("type") not in (None, "PUT"):
                fields["writes"] = {**rest, "type": writes["type"]}
            return Phrase(template, {"key": writes["key"]})
        if isinstance(fields.get("key"), str):
            return Phrase(gettext_noop("store transaction on %(key)s"), {"key": fields.pop("key")})
        return Phrase(gettext_noop("store transaction"))
    if type_name == "scheduler.decision":
        pod = fields.pop("pod", None) or fields.pop("name", None)
        what = (
            Phrase(gettext_noop("scheduling decision for pod %(pod)s"), {"pod": show(pod)})
            if pod is not None
            else Phrase(gettext_noop("scheduling decision"))
        )
        if "chosen" in fields:
            chosen = fields.pop("chosen")
            if chosen is None:
                return Phrase(gettext_noop("%(what)s that found no node"), {"what": what})
            return Phrase(gettext_noop("%(what)s choosing %(node)s"), {"what": what, "node": show(chosen)})
        return what
    if type_name == "reconcile":
        controller = fields.pop("controller", None)
        what = (
            Phrase(
                gettext_noop("reconcile by the %(controller)s controller"), {"controller": show(controller)}
            )
            if controller is not None
            else Phrase(gettext_noop("reconcile"))
        )
        about = fields.pop("key", None) or fields.pop("name", None)
        if about is not None:
            what = Phrase(gettext_noop("%(what)s of %(key)s"), {"what": what, "key": show(about)})
        return what
    return Phrase(_HEADS.get(type_name, type_name))


def _detail(name: str, value: Any) -> list[str]:
    """``name=value``; a map is spelled out one leaf at a time (``nodes.node-1.filters.TaintToleration
    .code=UnschedulableAndUnresolvable``), since its JSON would be cut short where the detail is."""
    if isinstance(value, Mapping) and value:
        return [detail for key, inner in value.items() for detail in _detail(f"{name}.{key}", inner)]
    shown = show(value)
    return [f"{name}={shown}" if isinstance(shown, str) else name]


def _details(fields: Mapping[str, Any]) -> tuple[Param, ...]:
    return tuple(detail for name, value in fields.items() for detail in _detail(name, value))


def matcher_phrase(matcher: EventMatcher) -> Phrase:
    """An event a trace leaf waits for, from the fields it names (``$student`` already bound)."""
    fields = dict(matcher.fields)
    what = _event_head(matcher.type, fields)
    if fields:
        return Phrase(gettext_noop("%(what)s (%(details)s)"), {"what": what, "details": _details(fields)})
    return what


def times_phrase(n: int) -> Phrase:
    """How many times: "once", "30 times". An event is always named in the singular ("the watch
    event for pods 30 times"), so no language has to make a plural of a phrase."""
    if n == 1:
        return Phrase(gettext_noop("once"))
    return Phrase(gettext_noop("%(n)s times"), {"n": n})


def counted_phrase(matcher: EventMatcher) -> Phrase:
    """A step with its count, when it waits for several events: "watch event for pods 30 times"."""
    what = matcher_phrase(matcher)
    if matcher.at_least == 1:
        return what
    return Phrase(gettext_noop("%(what)s %(times)s"), {"what": what, "times": times_phrase(matcher.at_least)})


STEP_BEGAN = Phrase(gettext_noop("this step began"))


def since_phrase(named: EventMatcher | None) -> Phrase:
    """Since when a trace leaf counts: "this step began", or "the <event that ended another leaf>"."""
    if named is None:
        return STEP_BEGAN
    return Phrase(gettext_noop("the %(what)s"), {"what": matcher_phrase(named)})


def limit_phrase(events: int | None, seconds: float | None) -> Phrase:
    """A ``within`` window: "30 seconds", "2000 events", "2000 events and 30 seconds"."""
    if events is not None and seconds is not None:
        return Phrase(
            gettext_noop("%(events)s events and %(seconds)s seconds"), {"events": events, "seconds": seconds}
        )
    if events is not None:
        return Phrase(gettext_noop("%(events)s events"), {"events": events})
    return Phrase(gettext_noop("%(seconds)s seconds"), {"seconds": seconds or 0.0})


__all__ = [
    "STEP_BEGAN",
    "bound_phrase",
    "condition_phrase",
    "count_label",
    "counted_phrase",
    "field_label",
    "is_count_field",
    "item_phrase",
    "limit_phrase",
    "matcher_phrase",
    "object_phrase",
    "objects_phrase",
    "since_phrase",
    "times_phrase",
]
