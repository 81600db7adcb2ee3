"""OpenAPI v3: the schema documents kubectl reads for ``apply`` validation and ``explain``.

Placeholder until the schemas issue lands: the index lists no paths, so kubectl's server-side
validation detection finds nothing and ``kubectl apply --validate=false`` is needed.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.resources import ResourceRegistry


def document(types: ResourceRegistry, parts: list[str]) -> dict[str, Any] | None:
    if not parts:
        return {"paths": {}}
    return None
