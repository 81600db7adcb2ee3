"""Admission: plugins that may change (mutating) or refuse (validating) a write after authorization.

Upstream runs mutating plugins, then the object's own validation, then validating plugins
(apiserver ``pkg/admission``). Each plugin reports an ``admission.step`` on the trace.

PLACEHOLDER (issue 3): no plugins are configured yet; the stages report that they ran. The security
issue adds NamespaceLifecycle, LimitRanger, ServiceAccount, NodeRestriction, DefaultTolerationSeconds,
PodSecurity, ResourceQuota, the SecretsPolicy plugin and webhooks.
"""

from __future__ import annotations

from typing import Any

from controlplane.apiserver import pipeline


def mutate(operation: str, obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    pipeline.stage("mutating-admission", "pass", "no mutating plugins configured")
    return obj


def validate(operation: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    pipeline.stage("validating-admission", "pass", "no validating plugins configured")
