"""Flow control: deciding whether the server has room for this request now (API Priority and Fairness).

PLACEHOLDER (issue 3): every request is admitted. The security and flow-control issue adds
FlowSchemas, priority levels, shuffle-sharded fair queuing and 429s with Retry-After.
"""

from __future__ import annotations

from controlplane.apiserver import pipeline
from controlplane.apiserver.http import Request


def admit(request: Request) -> None:
    pipeline.stage("flowcontrol", "pass", "placeholder: no priority levels yet")
