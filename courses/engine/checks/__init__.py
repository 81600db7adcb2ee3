"""Checks: how a step knows, by itself, that the student has done it.

A step's check is declarative (docs/course-format.md, "Checks"): conditions on objects read through
the API server (**state**), ordered patterns over the cluster's trace (**trace**), combined with
``all``, ``any`` and ``not``. It tests outcomes, not keystrokes: the form, the console and the
student's own kubectl all reach the same objects and make the same events, so any valid way passes.

This package is a pure core: no network, no database, no clock. Its modules, in the order a check
lives through them:

=================  =====================================================================================
``spec.py``        the check as a tree of frozen values (``Check``, its leaves and combinators)
``parsing.py``     ``parse_check``: from a chapter's YAML, validated loudly (``CheckSpecError``)
``paths.py``       field paths: ``status.conditions[type=Ready].status``
``reads.py``       which ``Read`` (an API GET) a state leaf needs, and which store keys make it old
``conditions.py``  equals, exists, at_least, at_most, matches, contains; counting a list's items
``tracepattern.py`` waiting for events in order, incrementally, with ``same_request``, ``within`` ...
``stability.py``   a check passes only after holding for a moment, and then stays passed
``evaluator.py``   ``Evaluator``: one check for one student, fed events and reads, asked for a verdict
``failures.py``    ``Failure`` and ``Unknown`` as values, rendered in the student's language
``describe.py``    the words for objects, fields and events inside those messages
``benchmark.py``   ``bench_offer``: the cost of one trace event for one check
=================  =====================================================================================

Typical use (the runner that does the I/O lives elsewhere)::

    check = parse_check(yaml_data, where="control-plane/01-one-hub/chapter.yaml, step create-configmap")
    evaluator = check.evaluator(student="student:alice", since_seq=1200)
    evaluator.give(read, ReadResult.ok(body))  # for each read in evaluator.reads()
    evaluator.offer(event)                     # for each trace event
    evaluator.verdict(now)                     # Verdict(status=..., failures=..., unknowns=...)
"""

from __future__ import annotations

from courses.engine.checks.evaluator import Evaluator, Status, Verdict
from courses.engine.checks.failures import Failure, Phrase, Unknown
from courses.engine.checks.parsing import parse_check
from courses.engine.checks.paths import FieldPath, PathError, parse_path, resolve
from courses.engine.checks.reads import Read, ReadResult
from courses.engine.checks.spec import Check, CheckSpecError

__all__ = [
    "Check",
    "CheckSpecError",
    "Evaluator",
    "Failure",
    "FieldPath",
    "PathError",
    "Phrase",
    "Read",
    "ReadResult",
    "Status",
    "Unknown",
    "Verdict",
    "parse_check",
    "parse_path",
    "resolve",
]
