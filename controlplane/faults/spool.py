"""The fault spool: how a command in another process asks the running lab to apply or clear a fault.

``manage.py runlab`` is one process; ``manage.py fault apply`` is another, and a fault must be applied
inside the lab (it stops a kubelet task, restarts an API server object). The lab's other commands
reach a running lab through files in its data directory, which the lab reads again when they change
(tokens, the revocation list, the encryption configuration); this is the same, both ways, under
``<data dir>/faults/``:

1. the command writes a **request**, ``requests/<id>.json`` (atomically: written aside, then renamed),
   ``{"version": 1, "id": ..., "action": "apply", "cluster": "demo", "fault": "stop-kubelet",
   "values": {"node": "node-2", "for": 300}, "after": 0, "reason": "..."}``;
2. the lab (``inbox.py``, a task of ``runlab``) takes it, does it through the one ``FaultService``,
   and writes the **answer**, ``answers/<id>.json``: ``{"version": 1, "id": ..., "ok": true,
   "message": "...", "faults": [...]}``; then removes the request;
3. the command reads the answer, removes it, and prints it.

Actions: ``apply`` (a fault, its values and a delay), ``clear`` (the faults of a kind, those with the
given values if any), ``clear-all`` (every fault of the cluster, and heal it), ``status`` (the faults
in force). This module is the protocol and the command's side; it does nothing with a lab.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

VERSION: Final = 1
ACTIONS: Final = ("apply", "clear", "clear-all", "status")
#: Under the lab's data directory.
DIRECTORY: Final = "faults"


class SpoolError(ValueError):
    """A request or an answer that is not what the protocol says (the message says how)."""


@dataclass(frozen=True)
class Request:
    """What a command asks of the running lab."""

    action: str
    cluster: str
    fault: str | None = None
    values: Mapping[str, Any] | None = None
    #: Seconds before an applied fault starts.
    after: float = 0.0
    reason: str = ""
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    #: Who asked (the account that ran the command), as the cluster's audit log names them.
    actor: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "id": self.id,
            "action": self.action,
            "cluster": self.cluster,
            "fault": self.fault,
            "values": dict(self.values) if self.values is not None else None,
            "after": self.after,
            "reason": self.reason,
            "actor": self.actor,
        }

    @classmethod
    def from_json(cls, document: Any) -> Request:
        if not isinstance(document, dict) or document.get("version") != VERSION:
            raise SpoolError(f"not a version {VERSION} fault request")
        action, cluster, fault = document.get("action"), document.get("cluster"), document.get("fault")
        values, after, reason = document.get("values"), document.get("after", 0), document.get("reason", "")
        if action not in ACTIONS:
            raise SpoolError(f"unknown action {action!r} (known: {', '.join(ACTIONS)})")
        if not isinstance(cluster, str) or not cluster:
            raise SpoolError("a request names its cluster")
        if fault is not None and not isinstance(fault, str):
            raise SpoolError("fault is a kind's name")
        if action == "apply" and fault is None:
            raise SpoolError("apply names a fault")
        if values is not None and not isinstance(values, dict):
            raise SpoolError("values is a mapping")
        if isinstance(after, bool) or not isinstance(after, int | float) or after < 0:
            raise SpoolError("after is a number of seconds")
        if not isinstance(reason, str):
            raise SpoolError("reason is a text")
        actor = document.get("actor", "")
        if not isinstance(actor, str):
            raise SpoolError("actor is a text")
        identity = str(document.get("id") or "")
        return cls(action, cluster, fault, values, float(after), reason, identity, actor)


@dataclass(frozen=True)
class Answer:
    """What the lab answered: whether it did it, in words, and the faults in force afterwards."""

    id: str
    ok: bool
    message: str
    faults: tuple[Mapping[str, Any], ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "id": self.id,
            "ok": self.ok,
            "message": self.message,
            "faults": [dict(f) for f in self.faults],
        }

    @classmethod
    def from_json(cls, document: Any) -> Answer:
        if not isinstance(document, dict) or document.get("version") != VERSION:
            raise SpoolError(f"not a version {VERSION} fault answer")
        faults = tuple(document.get("faults") or [])
        return cls(str(document.get("id")), bool(document.get("ok")), str(document.get("message")), faults)


def directory(data_dir: Path, which: str) -> Path:
    """``<data dir>/faults/requests`` or ``.../answers``, made if missing (private to the lab's user)."""
    path = data_dir / DIRECTORY / which
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def write_json(path: Path, document: Mapping[str, Any]) -> None:
    """Write ``document`` to ``path`` atomically: a reader sees the whole file or none."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(document, indent=2) + "\n")
    os.replace(tmp, path)


def submit(data_dir: Path, request: Request) -> Path:
    """Put ``request`` in the spool for the running lab; the path of the request file."""
    path = directory(data_dir, "requests") / f"{request.id}.json"
    write_json(path, request.as_json())
    return path


def wait_for_answer(data_dir: Path, request: Request, *, seconds: float, poll: float = 0.1) -> Answer | None:
    """The lab's answer to ``request`` (the file is removed once read), waiting ``seconds`` at most;
    None if none came (the request is withdrawn then, if the lab has not taken it yet)."""
    path = directory(data_dir, "answers") / f"{request.id}.json"
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            answer = Answer.from_json(json.loads(path.read_text()))
            path.unlink(missing_ok=True)
            return answer
        time.sleep(poll)
    (directory(data_dir, "requests") / f"{request.id}.json").unlink(missing_ok=True)
    return None


__all__ = [
    "ACTIONS",
    "DIRECTORY",
    "VERSION",
    "Answer",
    "Request",
    "SpoolError",
    "directory",
    "submit",
    "wait_for_answer",
    "write_json",
]
