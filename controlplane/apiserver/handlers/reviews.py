"""Reviews: resources that are questions, answered and never stored.

``SelfSubjectAccessReview`` ("may I do this?", ``kubectl auth can-i``), ``SubjectAccessReview`` (may
*they*?), ``SelfSubjectRulesReview`` (what may I do here?), ``TokenReview`` (whose token is this?) and
``SelfSubjectReview`` (who am I? ``kubectl auth whoami``). A POST returns the object with ``status``
filled in.

PLACEHOLDER (issue 3): answers come from the placeholder authorizer (everything allowed for an
authenticated user); the security issue answers them from RBAC.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controlplane.api.resources import ResourceType
from controlplane.apiserver import errors
from controlplane.apiserver.filters import authentication
from controlplane.apiserver.handlers.resources import Reply
from controlplane.apiserver.http import Request, decode_body, dumps

if TYPE_CHECKING:
    from controlplane.apiserver.server import APIServer


async def handle(server: APIServer, request: Request, rtype: ResourceType) -> Reply:
    body: Any = decode_body(await request.read_body(), request.content_type)  # JSON, YAML or protobuf
    if not isinstance(body, dict):
        raise errors.bad_request(f"the body of the request must be a {rtype.kind} object")
    body["apiVersion"] = rtype.api_version
    body["kind"] = rtype.kind
    body.setdefault("metadata", {})
    user = request.user
    assert user is not None
    if rtype.kind in ("SelfSubjectAccessReview", "SubjectAccessReview"):
        body["status"] = {
            "allowed": True,
            "reason": "placeholder authorizer: every authenticated user is allowed",
        }
    elif rtype.kind == "SelfSubjectRulesReview":
        body["status"] = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    elif rtype.kind == "SelfSubjectReview":
        body["status"] = {"userInfo": user.to_json()}
    elif rtype.kind == "TokenReview":
        body["status"] = await authentication.review_token(server.authenticator, body.get("spec"))
    return Reply(201, dumps(body))
