"""Events in two versions: core ``v1`` and ``events.k8s.io/v1``, one object in the store.

The old Event (``/api/v1``) grew out of ``kubectl describe``: what happened (``reason``, ``message``),
to which object (``involvedObject``), who saw it (``source``), and how often (``firstTimestamp``,
``lastTimestamp``, ``count``). The newer API (``events.k8s.io/v1``) renamed fields to say what they mean
and added what a scalable recorder needs: ``regarding`` and ``note``; ``eventTime`` with microseconds;
``series`` (count and last time, updated in place of a new Event per occurrence);
``reportingController``/``reportingInstance``, ``action`` and ``related``. The old fields are still
there, marked ``deprecated*``.

Both APIs serve the same objects, so a Pod's "Scheduled" Event written by the scheduler through one is
listed by ``kubectl get events`` through the other. Upstream converts through its internal Event
(``pkg/apis/events/v1/conversion.go``: ``Convert_v1_Event_To_core_Event`` and
``Convert_core_Event_To_v1_Event``): the renamed fields are copied by hand, the rest by the generated
code. Note one more rename on the core side: the internal ``ReportingController`` is spelled
``reportingComponent`` in core/v1 JSON.

**The stored form is core/v1's.** That is upstream's storage version for events (so the lab's etcd
panel shows the keys and shapes a real cluster holds), and the core type needs no conversion at all:
only ``events.k8s.io/v1`` pays for it, and its conversion is a pair of renames with no information
lost in either direction (the two versions have exactly the same fields). The lab's components write
both, as upstream's do: the kubelet and the controller manager through core/v1 with the legacy
recorder (``controlplane/client/record.py``), the scheduler through events.k8s.io/v1 with the newer
one (``controlplane/client/events.py``).

Go serializes ``events.k8s.io/v1``'s ``eventTime`` even when it is zero (it has no ``omitempty``), as
``null``; so does this conversion. An Event written through core/v1 without ``eventTime`` therefore
reads as ``"eventTime": null`` through events.k8s.io/v1, exactly as from kube-apiserver (the official
Python client's ``EventsV1Event`` refuses that: kubernetes-client/python#1826).

The functions are pure and shallow: the result shares nested values (``metadata``, ``regarding``) with
its input, which neither side changes afterwards.
"""

from __future__ import annotations

from typing import Final

from controlplane.api.meta import Object
from controlplane.api.resources import StorageConversion

CORE_API_VERSION: Final = "v1"
EVENTS_API_VERSION: Final = "events.k8s.io/v1"

#: core/v1 JSON name -> events.k8s.io/v1 JSON name, for the fields whose names differ.
CORE_TO_EVENTS_V1: Final = {
    "involvedObject": "regarding",
    "message": "note",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
    "reportingComponent": "reportingController",
}
EVENTS_V1_TO_CORE: Final = {v1: core for core, v1 in CORE_TO_EVENTS_V1.items()}

#: Field order of each Go struct (``k8s.io/api/{core,events}/v1/types.go``), so output reads as upstream's.
_CORE_ORDER: Final = (
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "type",
    "eventTime",
    "series",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
)
_EVENTS_V1_ORDER: Final = (
    "eventTime",
    "series",
    "reportingController",
    "reportingInstance",
    "action",
    "reason",
    "regarding",
    "related",
    "note",
    "type",
    "deprecatedSource",
    "deprecatedFirstTimestamp",
    "deprecatedLastTimestamp",
    "deprecatedCount",
)
_TYPE_META: Final = ("apiVersion", "kind", "metadata")


def _convert(obj: Object, renames: dict[str, str], order: tuple[str, ...], api_version: str) -> Object:
    """Rename ``obj``'s fields into the other version, in that version's field order.

    A field of the *target* version's own spelling in the source (``regarding`` in a core Event) is
    unknown to the source version, so it is dropped, as Go's decoder would have dropped it; any other
    field is kept as it is.
    """
    foreign = set(renames.values())  # the target's spellings of the renamed fields
    fields: Object = {}
    for name, value in obj.items():
        if name in _TYPE_META or name in foreign:
            continue
        fields[renames.get(name, name)] = value
    out: Object = {"apiVersion": api_version, "kind": "Event"}
    if "metadata" in obj:
        out["metadata"] = obj["metadata"]
    for name in order:
        if name in fields:
            out[name] = fields.pop(name)
    out.update(fields)  # fields neither version knows stay as they were (strict decoding has run)
    return out


def core_to_events_v1(event: Object) -> Object:
    """``Convert_core_Event_To_v1_Event`` on core/v1 JSON: the events.k8s.io/v1 view of a stored Event."""
    if "eventTime" not in event:
        event = {**event, "eventTime": None}  # `json:"eventTime"`: always serialized, null when zero
    return _convert(event, CORE_TO_EVENTS_V1, _EVENTS_V1_ORDER, EVENTS_API_VERSION)


def events_v1_to_core(event: Object) -> Object:
    """``Convert_v1_Event_To_core_Event`` on events.k8s.io/v1 JSON: the stored (core/v1) form."""
    out = _convert(event, EVENTS_V1_TO_CORE, _CORE_ORDER, CORE_API_VERSION)
    if out.get("eventTime", "") is None:
        del out["eventTime"]  # the zero time: core writers leave it out
    return out


#: The conversion of the ``events.k8s.io/v1`` resource type (``controlplane.api.kinds``).
EVENTS_V1_CONVERSION: Final = StorageConversion(to_storage=events_v1_to_core, from_storage=core_to_events_v1)

__all__ = [
    "CORE_TO_EVENTS_V1",
    "EVENTS_V1_CONVERSION",
    "EVENTS_V1_TO_CORE",
    "core_to_events_v1",
    "events_v1_to_core",
]
