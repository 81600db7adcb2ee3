"""``manage.py fault``: the fault catalogue, and faults applied to or cleared from a running lab's cluster.

What an instructor (or an author trying a chapter) does from a shell; the instructor's console will
do the same from the browser, through the same fault service (``controlplane/faults``, docs/faults.md)::

    manage.py fault list                                    # every kind: parameters, target, chapters
    manage.py fault list --cluster demo                     # and the faults in force on demo
    manage.py fault apply stop-kubelet --cluster demo --target node-2 --for 5m
    manage.py fault apply restart-apiserver --cluster demo --after 30s
    manage.py fault apply hot-loop-client --cluster demo --for 90
    manage.py fault clear stop-kubelet --cluster demo --target node-2
    manage.py fault apply crash-loop --cluster demo --target scheduler
    manage.py fault clear --cluster demo --all              # every fault, then heal what is broken

``list`` reads the catalogue and the course content (the chapters whose steps use each kind) and
needs no lab. ``apply`` and ``clear`` need ``runlab`` to serve the cluster: a fault is done inside the
lab's process, so the command writes a request into the lab's data directory, the lab does it and
answers (``controlplane/faults/spool.py``), and the command prints the answer. ``--target`` sets the
kind's one parameter (``--target node-2``, or the diagram's ``kubelet:node-2``; crash-loop's is a
diagram id, ``--target kube-proxy:node-2``); ``--param k=v`` sets any. Durations are seconds, or
``90s``, ``5m``, ``1h``.
"""

from __future__ import annotations

import datetime as dt
import getpass
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from controlplane.faults import catalogue, spool
from courses import gateway
from courses.engine import content

#: How long the command waits for the lab's answer (a restart waits for the new API server).
ANSWER_SECONDS = 90.0
_DURATION = re.compile(r"(?P<number>\d+(?:\.\d+)?)(?P<unit>[smh]?)")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600}


def parse_duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``5m`` or ``1h``; ``CommandError`` otherwise."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise CommandError(f"{text!r} is no duration: say 90, 90s, 5m or 1h")
    return float(match["number"]) * _UNITS[match["unit"]]


def chapters_using(courses: Iterable[content.Course]) -> dict[str, list[str]]:
    """For each fault kind, the chapters (``course/NN-slug``) whose steps apply or clear it."""
    found: dict[str, list[str]] = {name: [] for name in catalogue.CATALOGUE}
    for course in courses:
        for chapter in course.chapters:
            kinds = {
                fault.spec.kind
                for step in chapter.steps
                for fault in (
                    *(a.fault for a in step.actions if a.fault is not None),
                    *step.solution.faults,
                )
            }
            for kind in sorted(kinds):
                found[kind].append(f"{course.slug}/{chapter.number:02d}-{chapter.slug}")
    return found


class Command(BaseCommand):
    help = "List the fault kinds; apply or clear a fault on a cluster of the running lab."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["list", "apply", "clear"])
        parser.add_argument("kind", nargs="?", help="the fault kind (manage.py fault list names them)")
        parser.add_argument("--cluster", metavar="NAME", help="the cluster (apply, clear; list: its faults)")
        parser.add_argument(
            "--target",
            help="the kind's one parameter: the node of stop-kubelet (node-2), the component of crash-loop",
        )
        parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="a parameter")
        parser.add_argument("--for", dest="duration", metavar="DURATION", help="how long it lasts (5m)")
        parser.add_argument("--after", metavar="DURATION", help="start it this long from now (30s)")
        parser.add_argument(
            "--all", action="store_true", help="clear: every fault of the cluster, then heal it"
        )
        parser.add_argument("--reason", default="", help="why, on the trace (default: who ran the command)")
        parser.add_argument("--data-dir", metavar="DIR", help="the lab's data directory (default: settings)")

    def handle(self, *args: Any, **options: Any) -> None:
        # manage.py turned --data-dir into the settings' data directory before Django started.
        given = options.get("data_dir")
        if given and Path(given).expanduser().resolve() != settings.KUBELAB_DATA_DIR:
            raise CommandError(f"--data-dir {given} differs from the settings' {settings.KUBELAB_DATA_DIR}")
        if options["action"] == "list":
            self.list(options["cluster"])
            return
        cluster = self._cluster(options["cluster"])
        actor = getpass.getuser()
        reason = options["reason"] or f"manage.py fault, by {actor}"
        kind = options["kind"]
        if options["action"] == "apply":
            if not kind:
                raise CommandError("apply names the fault kind: manage.py fault apply stop-kubelet ...")
            values = self._values(kind, options)
            if options["duration"]:
                values[catalogue.DURATION] = parse_duration(options["duration"])
            after = parse_duration(options["after"]) if options["after"] else 0.0
            self._check(kind, values)
            request = spool.Request("apply", cluster, kind, values, after, reason, actor=actor)
        elif options["all"] or not kind:
            if kind:
                raise CommandError("clear --all clears every fault: name no kind")
            request = spool.Request("clear-all", cluster, reason=reason, actor=actor)
        else:
            given = self._values(kind, options)
            self._check(kind, given, clearing=True, partial=not given)
            # Without parameters: every fault of the kind on the cluster.
            request = spool.Request("clear", cluster, kind, given or None, reason=reason, actor=actor)
        self._ask(request)

    # -- list ----------------------------------------------------------------------------------------

    def list(self, cluster: str | None) -> None:
        try:
            using = chapters_using(content.courses())
        except content.ContentError as error:
            self.stderr.write(f"the course content has problems ({len(error.problems)}): chapters not listed")
            using = {}
        for kind in catalogue.CATALOGUE.values():
            how = "lasts until cleared (at most" if kind.lasting else "happens at once"
            how += f" {kind.max_duration:g} s)" if kind.lasting else ""
            self.stdout.write(f"{kind.name}  (target {kind.target}; {how})")
            self.stdout.write(f"  {kind.summary['en']}")
            self.stdout.write(f"  upstream: {kind.upstream}")
            for parameter in kind.parameters:
                self.stdout.write(
                    f"  --target {parameter.shape} (or --param {parameter.name}=...): "
                    f"{parameter.description['en']}"
                )
            if kind.lasting:
                self.stdout.write(f"  --for DURATION: how long it lasts (1 s to {kind.max_duration:g} s)")
            chapters = using.get(kind.name) or []
            self.stdout.write(f"  chapters: {', '.join(chapters) if chapters else 'none yet'}")
        if cluster is not None:
            self._ask(spool.Request("status", self._cluster(cluster)))

    # -- apply and clear -----------------------------------------------------------------------------

    def _cluster(self, name: str | None) -> str:
        if not name:
            raise CommandError("name the cluster: --cluster NAME")
        data_dir = settings.KUBELAB_DATA_DIR
        try:
            gateway.check_cluster_name(name=name)
        except gateway.InvalidClusterName as error:
            raise CommandError(str(error)) from error
        if name not in gateway.cluster_names(data_dir=data_dir, store_url=settings.KUBELAB_STORE):
            raise CommandError(f"the lab in {data_dir} has no cluster {name!r}")
        if not gateway.lab_serves(data_dir=data_dir, cluster=name):
            raise CommandError(
                f"no running lab serves cluster {name!r}: faults are applied inside `manage.py runlab`"
            )
        return name

    def _values(self, kind: str, options: dict[str, Any]) -> dict[str, Any]:
        try:
            definition = catalogue.kind(kind)
        except catalogue.InvalidFault as error:
            raise CommandError(str(error)) from error
        values: dict[str, Any] = {}
        for item in options["param"]:
            name, sep, value = item.partition("=")
            if not sep:
                raise CommandError(f"--param {item!r}: say NAME=VALUE")
            values[name] = value
        if options["target"]:
            if len(definition.parameters) != 1:
                raise CommandError(f"{kind} has no one parameter --target could set: use --param")
            parameter, target = definition.parameters[0], options["target"]
            try:  # a diagram id is the value itself for some (crash-loop's kube-proxy:node-2) ...
                parameter.check(target, None)
            except catalogue.InvalidFault:  # ... and names the node for others (kubelet:node-2)
                target = target.rpartition(":")[2]
            values[parameter.name] = target
        return values

    def _check(
        self, kind: str, values: dict[str, Any], *, clearing: bool = False, partial: bool = False
    ) -> None:
        """The catalogue's check, before anything is sent (the lab checks again, with the node count)."""
        try:
            if partial:
                catalogue.kind(kind)
                if clearing and not catalogue.kind(kind).lasting:
                    raise catalogue.InvalidFault(f"{kind} happens at once: there is nothing to clear")
            else:
                catalogue.check(kind, values, clearing=clearing)
        except catalogue.InvalidFault as error:
            raise CommandError(str(error)) from error

    def _ask(self, request: spool.Request) -> None:
        data_dir = settings.KUBELAB_DATA_DIR
        spool.submit(data_dir, request)
        answer = spool.wait_for_answer(data_dir, request, seconds=ANSWER_SECONDS)
        if answer is None:
            raise CommandError(f"the lab did not answer within {ANSWER_SECONDS:g} s (is runlab running?)")
        if not answer.ok:
            raise CommandError(answer.message)
        self.stdout.write(answer.message)
        for fault in answer.faults:
            parameters = ", ".join(
                f"{k}={v}"
                for k, v in fault.items()
                if k not in ("id", "cluster", "fault", "target", "starts_at", "ends_at", "reason", "for")
            )
            ends = fault.get("ends_at")
            until = (
                f"  until {dt.datetime.fromtimestamp(ends):%H:%M:%S}" if isinstance(ends, int | float) else ""
            )
            self.stdout.write(
                f"  {fault['id']}  {fault['fault']}  {fault['target']}"
                + (f"  ({parameters})" if parameters else "")
                + until
            )
