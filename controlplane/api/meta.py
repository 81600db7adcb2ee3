"""ObjectMeta: what every Kubernetes object says about itself, and the few helpers that read it.

Every object the API serves has the same envelope: ``apiVersion`` and ``kind`` (what it is),
``metadata`` (who it is), and usually ``spec`` (what its owner wants) and ``status`` (what the
cluster reports). ``metadata`` is an **ObjectMeta** (apimachinery ``pkg/apis/meta/v1/types.go``), the
same for a Pod, a Node or a ConfigMap::

    metadata:
      name: web-7c5ddbdf54-x2kq9        # unique among its kind in its namespace
      namespace: default                 # absent for cluster-scoped kinds (Nodes, Namespaces)
      uid: 0b4c...                       # unique forever: a new object of the same name is another
      resourceVersion: "4212"            # the store revision of its last write (optimistic locking)
      generation: 3                      # bumped by the API server when the spec changes
      creationTimestamp: "2024-05-01T12:00:00Z"
      deletionTimestamp: ...             # set when deletion starts; it is gone once finalizers are
      finalizers: [...]                  # ... empty
      labels: {app: web}                 # what selectors match
      annotations: {...}                 # free-form notes for tools
      ownerReferences: [...]             # who it belongs to (the garbage collector follows these)
      managedFields: [...]               # which manager set which field (server-side apply)

Kubelab handles objects as JSON decodes them: an ``Object`` is a ``dict[str, Any]``, declared here
once and imported wherever objects pass. The helpers below read what every component needs:

- ``object_meta(obj)``: the ``metadata`` section, or an empty one;
- ``object_key(obj)``: the key a client cache files the object under, ``<namespace>/<name>``, or
  ``<name>`` for a cluster-scoped object (client-go ``cache.MetaNamespaceKeyFunc``,
  ``tools/cache/store.go``). Workqueues, caches and the scheduler's queue all pass objects by this key;
- ``parse_time`` / ``parse_timestamp`` and ``format_time`` / ``format_micro_time``: the times in
  objects.

**Times.** A ``metav1.Time`` (``creationTimestamp``, a condition's ``lastTransitionTime``) is written
in RFC 3339, in UTC, to the second: ``"2024-05-01T12:00:00Z"``; a ``metav1.MicroTime`` (a Lease's
``renewTime``, an ``events.k8s.io`` Event's ``eventTime``) adds microseconds:
``"2024-05-01T12:00:00.123456Z"``. The API server always writes UTC (apimachinery
``pkg/apis/meta/v1/time.go``: ``MarshalJSON`` formats ``t.UTC()`` with ``time.RFC3339``). Reading, a
time with an offset (``+02:00``) is honoured; a time with no offset at all is not RFC 3339, and
upstream refuses it, but here it is read as **UTC**, the only zone the API server writes, so that it
means the same instant on every machine whatever its local time zone. Go's zero time
(``0001-01-01T00:00:00Z``) is "unset" (``Time.IsZero``; upstream writes it as ``null``), and so is
anything that is not a time: both read as None.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Final

#: A Kubernetes object as decoded JSON.
Object = dict[str, Any]

_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})

#: Go's zero ``time.Time``: an unset ``metav1.Time``.
ZERO_TIME: Final = datetime(1, 1, 1, tzinfo=UTC)


def object_meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj.metadata``, or an empty (read-only) mapping when the object has none."""
    meta = obj.get("metadata")
    # Decoded JSON objects are dicts (the informers' frozen copies too): the cheap check suffices.
    return meta if isinstance(meta, dict) else _EMPTY


def object_key(obj: Mapping[str, Any]) -> str:
    """``MetaNamespaceKeyFunc``: ``<namespace>/<name>``, or ``<name>`` for a cluster-scoped object."""
    meta = object_meta(obj)
    name = str(meta.get("name") or "")
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


# -- times ------------------------------------------------------------------------------------------


def parse_time(value: object) -> datetime | None:
    """A ``metav1.Time`` or ``MicroTime`` from JSON as an aware ``datetime``; None if unset.

    Without an offset the time is read as UTC (see the module's docstring); digits beyond the
    microsecond are dropped.
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return None if parsed == ZERO_TIME else parsed


def parse_timestamp(value: object) -> float | None:
    """``parse_time`` as seconds since the Unix epoch, the unit of the cluster clock."""
    parsed = parse_time(value)
    return None if parsed is None else parsed.timestamp()


def _format_second(second: int) -> str:
    return datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")


#: The last whole second formatted: components write their times in bursts, many within one second.
_last_second: tuple[int, str] = (0, _format_second(0))


def _second(second: int) -> str:
    global _last_second
    if _last_second[0] != second:
        _last_second = (second, _format_second(second))
    return _last_second[1]


def format_time(timestamp: float) -> str:
    """``metav1.Time`` as JSON: RFC 3339 in UTC, whole seconds (``2006-01-02T15:04:05Z``)."""
    second = int(timestamp)
    # Well inside a second, the whole second is what the string shows (``datetime`` rounds to the
    # microsecond first, so the last microsecond of a second may show the next one: not cached).
    if not 0.0 <= timestamp - second < 0.999999:
        return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{_second(second)}Z"


def format_micro_time(timestamp: float) -> str:
    """``metav1.MicroTime`` as JSON: RFC 3339 in UTC with microseconds (``2006-01-02T15:04:05.000000Z``)."""
    second = int(timestamp)
    micros = round((timestamp - second) * 1e6)
    if not 0 <= micros < 1_000_000:  # rounded into the next second, or before 1970
        return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{_second(second)}.{micros:06d}Z"


__all__ = [
    "ZERO_TIME",
    "Object",
    "format_micro_time",
    "format_time",
    "object_key",
    "object_meta",
    "parse_time",
    "parse_timestamp",
]
