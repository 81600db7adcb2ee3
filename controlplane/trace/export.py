"""Saving a run and loading it back: a recorder as JSON lines.

An instructor records a scenario (a rollout, a node failing) and replays it in class; a bug report
attaches the trace of what went wrong. The file is JSON lines, one object per line, so it streams,
diffs and greps well:

    {"format":"kubelab-trace","version":1,"v":1,"cluster":"demo","first_seq":1,"last_seq":3,"count":3}
    {"v":1,"cluster":"demo","seq":1,"ts":1700000000.0,"type":"request.received","id":"9c0e...",...}
    ...

The first line is the **header**: ``format`` and ``version`` name this file format, ``v`` the trace
schema version of the events (``schema.SCHEMA_VERSION``), then the cluster and the seq range. Each
following line is one event, its envelope first (``v, cluster, seq, ts, type, id, from, to``), then its
fields, every object's keys in sorted order, so that the same run always exports to the same bytes.

Exports never hold a Secret's data: every event goes through ``redaction.redact`` on its way out.

Loading checks the header and every line (valid JSON, a known version, seqs in order without gaps)
and says which line is wrong (``ExportError``); ``Run.recorder()`` puts the events back in a
``Recorder``, where the same queries and the same ``CausalGraph`` work as on the live cluster.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from controlplane.trace.recorder import Event, OutOfOrder, Recorder
from controlplane.trace.redaction import redact
from controlplane.trace.schema import ENVELOPE, ENVELOPE_ORDER, SCHEMA_VERSION

#: This file format's name and version (the header's ``format`` and ``version``).
FORMAT = "kubelab-trace"
FORMAT_VERSION = 1


class ExportError(ValueError):
    """A file that is not a readable trace export; ``line`` is its 1-based line number (0: none)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_canonical(v) for v in value), key=repr)
    return value


def encode_event(event: Mapping[str, Any]) -> str:
    """One event as its export line (without the newline): redacted, envelope first, keys sorted."""
    safe = redact(event)
    ordered = {k: safe[k] for k in ENVELOPE_ORDER if k in safe}
    ordered.update((k, _canonical(safe[k])) for k in sorted(safe) if k not in ordered)
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"), default=str)


def header(events: Iterable[Mapping[str, Any]] | Recorder, *, cluster: str = "") -> dict[str, Any]:
    """The header line's object for ``events``."""
    listed = list(events)
    if not cluster and isinstance(events, Recorder):
        cluster = events.cluster
    if not cluster and listed:
        cluster = str(listed[0].get("cluster", ""))
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "v": SCHEMA_VERSION,
        "cluster": cluster,
        "first_seq": listed[0]["seq"] if listed else None,
        "last_seq": listed[-1]["seq"] if listed else None,
        "count": len(listed),
    }


def export_lines(events: Iterable[Mapping[str, Any]] | Recorder, *, cluster: str = "") -> Iterator[str]:
    """The export, line by line (each ending in a newline): the header, then every event."""
    listed = list(events)
    if not cluster and isinstance(events, Recorder):
        cluster = events.cluster
    yield json.dumps(header(listed, cluster=cluster), separators=(",", ":")) + "\n"
    for event in listed:
        yield encode_event(event) + "\n"


def dump(events: Iterable[Mapping[str, Any]] | Recorder, fp: IO[str], *, cluster: str = "") -> int:
    """Write the export to ``fp``; returns the number of events written."""
    listed = list(events)
    if not cluster and isinstance(events, Recorder):
        cluster = events.cluster
    fp.writelines(export_lines(listed, cluster=cluster))
    return len(listed)


def dumps(events: Iterable[Mapping[str, Any]] | Recorder, *, cluster: str = "") -> str:
    return "".join(export_lines(events, cluster=cluster))


@dataclass
class Run:
    """A loaded export: its header and its events."""

    header: dict[str, Any]
    events: list[Event] = field(default_factory=list)

    @property
    def cluster(self) -> str:
        return str(self.header.get("cluster", ""))

    def recorder(self, capacity: int | None = None) -> Recorder:
        """A recorder holding the run (by default just big enough for it)."""
        recorder = Recorder(capacity or max(len(self.events), 1), cluster=self.cluster)
        recorder.extend(self.events)
        return recorder


def _parse(line: str, number: int) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError as error:
        raise ExportError(number, f"not JSON: {error}") from None
    if not isinstance(value, dict):
        raise ExportError(number, f"expected a JSON object, got {type(value).__name__}")
    return value


def load(lines: Iterable[str]) -> Run:
    """Read an export (an open file, or its lines). ``ExportError`` says what and where is wrong."""
    run: Run | None = None
    last_seq: int | None = None
    number = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        obj = _parse(line, number)
        if run is None:
            if obj.get("format") != FORMAT:
                raise ExportError(number, f"not a {FORMAT} file: the first line has no format {FORMAT!r}")
            if obj.get("version") != FORMAT_VERSION:
                raise ExportError(number, f"unsupported {FORMAT} version {obj.get('version')!r}")
            if obj.get("v") != SCHEMA_VERSION:
                raise ExportError(number, f"unsupported trace schema version {obj.get('v')!r}")
            run = Run(header=obj)
            continue
        for name, spec in ENVELOPE.items():
            if name not in obj:
                raise ExportError(number, f"event without {name!r}")
            if (problem := spec.problem(name, obj[name])) is not None:
                raise ExportError(number, problem)
        if last_seq is not None and obj["seq"] != last_seq + 1:
            raise ExportError(number, f"seq {obj['seq']} does not follow seq {last_seq}")
        last_seq = obj["seq"]
        run.events.append(obj)
    if run is None:
        raise ExportError(number, "empty file: no header")
    count = run.header.get("count")
    if isinstance(count, int) and count != len(run.events):
        raise ExportError(number, f"the header announces {count} events, the file holds {len(run.events)}")
    return run


def loads(text: str) -> Run:
    return load(text.splitlines())


def load_recorder(lines: Iterable[str], capacity: int | None = None) -> Recorder:
    """Read an export straight into a recorder."""
    run = load(lines)
    try:
        return run.recorder(capacity)
    except OutOfOrder as error:  # load already checks; kept for a recorder given other events
        raise ExportError(0, str(error)) from None


__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ExportError",
    "Run",
    "dump",
    "dumps",
    "encode_event",
    "export_lines",
    "header",
    "load",
    "load_recorder",
    "loads",
]
