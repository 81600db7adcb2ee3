"""The load of ``python -m bench trace``: which events are made, how fast, and how a raw frame looks.

Both servers of the benchmark make the same events at the same rate: Kubelab's served lab through its
cluster's real ``TraceBus`` (``bench._tracedrive``), and the raw ``websockets`` server by stamping
them itself (``bench._traceraw``). This module is what they share, with no I/O:

``EventSource``
    the events, in a fixed cycle that reads like a cluster writing pods: a store transaction
    (``apiserver`` -> ``etcd``), the store's watch event back to the API server, then the API
    server's watch events to the scheduler and to a kubelet. Each is a schema-valid payload for
    ``TraceBus.emit`` (``schema.validate(strict=True)`` passes once the bus stamps the envelope), the
    sizes of real ones (about 200 to 400 bytes as JSON).
``Schedule``
    an open-loop pace: ``due(now)`` says how many events should have been made by ``now`` and were
    not yet, so a producer woken late catches up in one burst and the rate holds over the run.
``stamp`` and ``raw_frame``
    the envelope the bus would add (``ts`` is the wall clock, as the lab's unscaled cluster clock
    gives it), and a frame in the stream's format (docs/trace.md, "Stream"), for the raw server.
"""

from __future__ import annotations

import json
import math
from typing import Any

#: The schema version the raw server stamps (``controlplane.trace.schema.SCHEMA_VERSION``; the raw
#: server does not import the control plane, and a test checks that the two agree).
SCHEMA_VERSION = 2

#: Nodes whose kubelets receive watch events, in turn.
NODES = ("node-1", "node-2", "node-3")
#: Events per simulated write: the transaction, the store's watch event, two API watch events.
CYCLE = 4


class EventSource:
    """Makes the ``i``-th event of the load: ``(type, fields)``, as an emitter passes them to ``emit``."""

    def __init__(self, cluster: str = "demo") -> None:
        self.cluster = cluster
        self.made = 0

    def next(self) -> tuple[str, dict[str, Any]]:
        event = self.event(self.made)
        self.made += 1
        return event

    @staticmethod
    def event(i: int) -> tuple[str, dict[str, Any]]:
        write, step = divmod(i, CYCLE)
        revision = 1000 + write
        name = f"web-{write % 50:02d}-7d4b9c6f5-{write % 7919:04x}"
        key = f"/registry/pods/default/{name}"
        audit_id = f"{write:08x}-9c0e-4b1e-8f3a-5e2d7c1b{write % 65536:04x}"
        if step == 0:
            return "store.txn", {
                "id": audit_id,
                "from": "apiserver",
                "to": "etcd",
                "op": "txn",
                "revision": revision,
                "succeeded": True,
                "compares": [{"key": key, "target": "mod_revision", "op": "=", "value": revision - 1}],
                "ops": [{"op": "put", "key": key}],
                "writes": [{"type": "PUT", "key": key}],
            }
        if step == 1:
            return "watch.event", {
                "from": "etcd",
                "to": "apiserver",
                "source": "store",
                "watch": 3,
                "event": "PUT",
                "key": key,
                "revision": revision,
            }
        watcher = "scheduler" if step == 2 else f"kubelet:{NODES[write % len(NODES)]}"
        return "watch.event", {
            "id": f"51d2{step:04d}-{watcher.replace(':', '-')}-watch",
            "from": "apiserver",
            "to": watcher,
            "source": "apiserver",
            "watch": f"{step:04d}-{watcher}",
            "event": "MODIFIED",
            "revision": revision,
            "key": key,
            "kind": "Pod",
            "namespace": "default",
            "name": name,
        }


class Schedule:
    """``rate`` events a second from ``start``: how many are due at ``now`` and not yet made."""

    def __init__(self, rate: float, start: float) -> None:
        if rate <= 0:
            raise ValueError(f"the rate must be positive, not {rate}")
        self.rate = rate
        self.start = start
        self.made = 0

    def due(self, now: float) -> int:
        """Events to make now (and counts them as made)."""
        owed = math.floor((now - self.start) * self.rate) - self.made
        if owed <= 0:
            return 0
        self.made += owed
        return owed


def stamp(cluster: str, seq: int, ts: float, type_: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The event as ``TraceBus.emit`` makes it: the envelope, then the emitter's fields."""
    return {"v": SCHEMA_VERSION, "cluster": cluster, "seq": seq, "ts": ts, "type": type_, **fields}


def encode(event: dict[str, Any]) -> str:
    """One event as the stream sends it (``framing.encode_event`` without the redaction pass)."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


def raw_frame(first: int, encoded: list[str]) -> str:
    """A frame of already-encoded events (``framing.render_frame``'s format, without a summary)."""
    last = first + len(encoded) - 1
    return f'{{"type":"frame","first":{first},"last":{last},"events":[{",".join(encoded)}]}}'


def hello(cluster: str, last_seq: int) -> str:
    """The raw server's first message (``framing.hello_message``'s fields)."""
    message = {"type": "hello", "cluster": cluster, "schema": SCHEMA_VERSION, "last_seq": last_seq}
    return json.dumps({**message, "timing": "raw"}, separators=(",", ":"))


__all__ = ["CYCLE", "SCHEMA_VERSION", "EventSource", "Schedule", "encode", "hello", "raw_frame", "stamp"]
