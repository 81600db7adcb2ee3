"""Audit: a record of who did what, written before and after the request is served.

PLACEHOLDER (issue 3): the stage reports itself on the trace and records nothing. The security issue
adds the audit policy (None, Metadata, Request, RequestResponse) and audit.k8s.io/v1 events.
"""

from __future__ import annotations

from controlplane.apiserver import pipeline
from controlplane.apiserver.http import Request


def record_received(request: Request) -> None:
    pipeline.stage("audit", "pass", "placeholder: no audit policy yet")
