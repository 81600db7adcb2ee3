from __future__ import annotations

from typing import Any


def make_pod(*containers: dict[str, Any], restart_policy: str = "Always", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "default", "uid": "uid-1"},
        "spec": {"containers": list(containers), "restartPolicy": restart_policy, **spec},
        "status": {
            "phase": "Pending",
            "qosClass": "BestEffort",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "x"}],
        },
    }
