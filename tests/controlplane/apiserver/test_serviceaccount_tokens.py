"""ServiceAccount tokens end to end through one API server: TokenRequest, authentication, TokenReview.

The server runs on a manual clock, so expiry is tested by moving time, not by waiting.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from controlplane.api.kinds import builtin_types
from controlplane.apiserver.server import APIServer
from controlplane.clock import ManualClock
from controlplane.identity import SYSTEM_MASTERS, UserInfo
from controlplane.serviceaccounttokens import DEFAULT_ISSUER, LEEWAY, TokenIssuer, key_id, new_claims
from controlplane.store.sqlite import SqliteStore
from tests.support.admission import WITHOUT_CONTROLLERS

ADMIN_TOKEN = "test-admin-token"
ADMIN = UserInfo.create("admin", uid="admin-uid", groups=[SYSTEM_MASTERS])
SA_PATH = "/api/v1/namespaces/default/serviceaccounts"


@pytest.fixture(scope="module")
def sa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class Lab:
    server: APIServer
    client: httpx.AsyncClient
    clock: ManualClock
    issuer: TokenIssuer

    async def post(self, path: str, body: Any, token: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return await self.client.post(path, json=body, headers=headers)

    async def make(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.post(path, body)
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    async def service_account(self, name: str = "builder") -> dict[str, Any]:
        return await self.make(
            SA_PATH, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
        )

    async def pod(self, name: str, service_account: str = "builder", node: str = "") -> dict[str, Any]:
        spec: dict[str, Any] = {
            "serviceAccountName": service_account,
            "containers": [{"name": "c", "image": "nginx"}],
        }
        if node:
            spec["nodeName"] = node
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
        return await self.make("/api/v1/namespaces/default/pods", pod)

    async def request_token(self, name: str = "builder", **spec: Any) -> httpx.Response:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        return await self.post(f"{SA_PATH}/{name}/token", body)

    async def token(self, name: str = "builder", **spec: Any) -> str:
        response = await self.request_token(name, **spec)
        assert response.status_code == 201, response.text
        token: str = response.json()["status"]["token"]
        return token

    async def whoami(self, token: str) -> httpx.Response:
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        return await self.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", review, token=token)

    async def review(self, token: str, audiences: list[str] | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"token": token}
        if audiences is not None:
            spec["audiences"] = audiences
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        response = await self.post("/apis/authentication.k8s.io/v1/tokenreviews", body)
        assert response.status_code == 201, response.text
        status: dict[str, Any] = response.json()["status"]
        return status


@pytest.fixture
async def lab(tmp_path: Path, sa_key: rsa.RSAPrivateKey) -> AsyncIterator[Lab]:
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    clock = ManualClock()
    issuer = TokenIssuer(sa_key)
    server = APIServer(
        "test",
        store,
        resource_types=builtin_types(),
        tokens=lambda token: ADMIN if token == ADMIN_TOKEN else None,
        clock=clock,
        service_account_issuer=issuer,
        admission_options=WITHOUT_CONTROLLERS,
    )
    await server.start()
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=server),
        base_url="http://test",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    )
    try:
        yield Lab(server, client, clock, issuer)
    finally:
        await client.aclose()
        await server.stop()
        await store.close()


def segments(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The JWT's header and payload, decoded without any check."""

    def part(text: str) -> dict[str, Any]:
        decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        return decoded

    header, payload, _ = token.split(".")
    return part(header), part(payload)


def unauthorized(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }


# -- TokenRequest --------------------------------------------------------------------------------------


async def test_token_request_returns_an_upstream_shaped_jwt(lab: Lab, sa_key: rsa.RSAPrivateKey) -> None:
    sa = await lab.service_account()
    response = await lab.request_token()
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["kind"] == "TokenRequest" and body["apiVersion"] == "authentication.k8s.io/v1"
    assert body["spec"] == {"audiences": [DEFAULT_ISSUER], "expirationSeconds": 3600}
    header, claims = segments(body["status"]["token"])
    assert header == {"alg": "RS256", "kid": key_id(sa_key.public_key())}
    now = int(lab.clock.now())
    assert claims == {
        "aud": [DEFAULT_ISSUER],
        "exp": now + 3600,
        "iat": now,
        "iss": DEFAULT_ISSUER,
        "jti": claims["jti"],
        "kubernetes.io": {
            "namespace": "default",
            "serviceaccount": {"name": "builder", "uid": sa["metadata"]["uid"]},
        },
        "nbf": now,
        "sub": "system:serviceaccount:default:builder",
    }
    assert uuid.UUID(claims["jti"])
    expected_expiry = datetime.fromtimestamp(now + 3600, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert body["status"]["expirationTimestamp"] == expected_expiry


async def test_every_token_has_its_own_id(lab: Lab) -> None:
    await lab.service_account()
    first, second = await lab.token(), await lab.token()
    assert segments(first)[1]["jti"] != segments(second)[1]["jti"]


async def test_audiences_and_duration_are_taken_from_the_request(lab: Lab) -> None:
    await lab.service_account()
    token = await lab.token(audiences=["vault", "ci"], expirationSeconds=600)
    claims = segments(token)[1]
    assert claims["aud"] == ["vault", "ci"]
    assert claims["exp"] - claims["iat"] == 600


async def test_a_token_shorter_than_ten_minutes_is_invalid(lab: Lab) -> None:
    await lab.service_account()
    response = await lab.request_token(expirationSeconds=599)
    assert response.status_code == 422
    status = response.json()
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: '
        "may not specify a duration less than 10 minutes"
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 599: may not specify a duration less than 10 minutes",
            "field": "spec.expirationSeconds",
        }
    ]


async def test_a_token_longer_than_two_to_the_32_seconds_is_invalid(lab: Lab) -> None:
    await lab.service_account()
    response = await lab.request_token(expirationSeconds=(1 << 32) + 1)
    assert response.status_code == 422
    assert "may not specify a duration larger than 2^32 seconds" in response.json()["message"]


async def test_the_server_caps_the_duration_at_its_maximum(tmp_path: Path, sa_key: rsa.RSAPrivateKey) -> None:
    store = SqliteStore("cap", path=tmp_path / "cap.sqlite3")
    await store.start()
    server = APIServer(
        "cap",
        store,
        resource_types=builtin_types(),
        tokens=lambda token: ADMIN if token == ADMIN_TOKEN else None,
        service_account_issuer=TokenIssuer(sa_key, max_expiration_seconds=1800),
        admission_options=WITHOUT_CONTROLLERS,
    )
    await server.start()
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=server), base_url="http://t", headers=headers
        ) as client:
            await client.post(SA_PATH, json={"metadata": {"name": "builder"}})
            body = {"spec": {"expirationSeconds": 7200}}
            response = await client.post(f"{SA_PATH}/builder/token", json=body)
            assert response.status_code == 201, response.text
            assert response.json()["spec"]["expirationSeconds"] == 1800
            claims = segments(response.json()["status"]["token"])[1]
            assert claims["exp"] - claims["iat"] == 1800
    finally:
        await server.stop()
        await store.close()


async def test_a_token_for_a_missing_service_account_is_not_found(lab: Lab) -> None:
    response = await lab.request_token("ghost")
    assert response.status_code == 404
    assert response.json()["message"] == 'serviceaccounts "ghost" not found'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "the body of the request must be a TokenRequest object"),
        ({"spec": {"expirationSeconds": "ten"}}, "cannot unmarshal string into Go struct field"),
        ({"spec": {"expirationSeconds": True}}, "cannot unmarshal bool into Go struct field"),
        ({"spec": {"audiences": "vault"}}, "of type []string"),
        ({"spec": {"audiences": [1]}}, "cannot unmarshal number"),
        ({"spec": []}, "v1.TokenRequestSpec"),
        ({"spec": {"boundObjectRef": "pod"}}, "v1.BoundObjectReference"),
        ({"spec": {"boundObjectRef": {"kind": "Pod", "name": 3}}}, "cannot unmarshal number"),
        ({"kind": "Pod"}, "the kind in the data (Pod) does not match the expected kind (TokenRequest)"),
        ({"apiVersion": "v1"}, "the API version in the data (v1) does not match"),
        ({"metadata": {"namespace": "other"}}, "does not match the namespace sent on the request"),
        (
            {"metadata": {"name": "other"}},
            "the name of the object (other) does not match the name on the URL",
        ),
        ({"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1"}}}, "Name parameter required."),
        (
            {"spec": {"boundObjectRef": {"kind": "Deployment", "apiVersion": "apps/v1", "name": "web"}}},
            "cannot bind token to object of type apps/v1, Kind=Deployment",
        ),
        (
            {"spec": {"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "web"}}},
            "cannot bind token to object of type /v1, Kind=ConfigMap",
        ),
    ],
)
async def test_a_malformed_token_request_is_a_bad_request(lab: Lab, body: Any, message: str) -> None:
    await lab.service_account()
    response = await lab.post(f"{SA_PATH}/builder/token", body)
    assert response.status_code == 400, response.text
    assert message in response.json()["message"]


async def test_a_token_request_body_that_is_not_json_is_a_bad_request(lab: Lab) -> None:
    await lab.service_account()
    response = await lab.client.post(
        f"{SA_PATH}/builder/token", content=b"{nope", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400


async def test_a_token_is_bound_to_a_pod_and_names_its_node(lab: Lab) -> None:
    sa = await lab.service_account()
    node = await lab.make(
        "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}
    )
    pod = await lab.pod("web", node="node-1")
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "web", "uid": pod["metadata"]["uid"]}
    token = await lab.token(boundObjectRef=ref)
    private = segments(token)[1]["kubernetes.io"]
    assert private == {
        "namespace": "default",
        "node": {"name": "node-1", "uid": node["metadata"]["uid"]},
        "pod": {"name": "web", "uid": pod["metadata"]["uid"]},
        "serviceaccount": {"name": "builder", "uid": sa["metadata"]["uid"]},
    }
    response = await lab.whoami(token)
    assert response.status_code == 201, response.text
    extra = response.json()["status"]["userInfo"]["extra"]
    assert extra == {
        "authentication.kubernetes.io/pod-name": ["web"],
        "authentication.kubernetes.io/pod-uid": [pod["metadata"]["uid"]],
        "authentication.kubernetes.io/credential-id": [f"JTI={segments(token)[1]['jti']}"],
        "authentication.kubernetes.io/node-name": ["node-1"],
        "authentication.kubernetes.io/node-uid": [node["metadata"]["uid"]],
    }


async def test_a_pod_of_another_service_account_cannot_be_bound(lab: Lab) -> None:
    await lab.service_account()
    await lab.pod("intruder", service_account="default")
    response = await lab.request_token(boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "intruder"})
    assert response.status_code == 400
    assert response.json()["message"] == (
        'cannot bind token for serviceaccount "builder" to pod running with different serviceaccount name.'
    )


async def test_binding_to_a_missing_pod_is_not_found(lab: Lab) -> None:
    await lab.service_account()
    response = await lab.request_token(boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "nope"})
    assert response.status_code == 404
    assert response.json()["message"] == 'pods "nope" not found'


async def test_a_stale_uid_in_the_bound_reference_is_a_conflict(lab: Lab) -> None:
    await lab.service_account()
    await lab.pod("web")
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "web", "uid": "0000-stale"}
    response = await lab.request_token(boundObjectRef=ref)
    assert response.status_code == 409
    assert response.json()["message"] == (
        'Operation cannot be fulfilled on Pod "web": the UID in the bound object reference (0000-stale) '
        "does not match the UID in record. The object might have been deleted and then recreated"
    )


async def test_an_api_server_without_a_service_account_key_serves_no_tokens(tmp_path: Path) -> None:
    store = SqliteStore("nokey", path=tmp_path / "nokey.sqlite3")
    await store.start()
    server = APIServer(
        "nokey",
        store,
        resource_types=builtin_types(),
        tokens=lambda token: ADMIN if token == ADMIN_TOKEN else None,
        admission_options=WITHOUT_CONTROLLERS,
    )
    await server.start()
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=server), base_url="http://t", headers=headers
        ) as client:
            await client.post(SA_PATH, json={"metadata": {"name": "builder"}})
            response = await client.post(f"{SA_PATH}/builder/token", json={})
            assert response.status_code == 404
    finally:
        await server.stop()
        await store.close()


# -- authenticating with the token ---------------------------------------------------------------------


async def test_the_token_authenticates_as_the_service_account(lab: Lab) -> None:
    sa = await lab.service_account()
    token = await lab.token()
    response = await lab.whoami(token)
    assert response.status_code == 201, response.text
    assert response.json()["status"]["userInfo"] == {
        "username": "system:serviceaccount:default:builder",
        "uid": sa["metadata"]["uid"],
        "groups": ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/credential-id": [f"JTI={segments(token)[1]['jti']}"]},
    }
    # ...and for ordinary requests too: RBAC knows it by that name.
    as_builder = {"Authorization": f"Bearer {token}"}
    refused = await lab.client.get(SA_PATH, headers=as_builder)
    assert refused.status_code == 403
    assert refused.json()["message"] == (
        'serviceaccounts is forbidden: User "system:serviceaccount:default:builder" cannot list resource'
        ' "serviceaccounts" in API group "" in the namespace "default"'
    )
    await lab.make(
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "builder-view"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "builder"}],
        },
    )
    listed = await lab.client.get(SA_PATH, headers=as_builder)
    assert listed.status_code == 200, listed.text


async def test_people_tokens_still_work_alongside(lab: Lab) -> None:
    response = await lab.whoami(ADMIN_TOKEN)
    assert response.status_code == 201
    assert response.json()["status"]["userInfo"]["username"] == "admin"


async def test_an_expired_token_is_refused_after_the_leeway(lab: Lab) -> None:
    await lab.service_account()
    token = await lab.token(expirationSeconds=600)
    await lab.clock.advance(600 + LEEWAY)  # expired, but within the leeway for clock skew
    assert (await lab.whoami(token)).status_code == 201
    await lab.clock.advance(1)
    unauthorized(await lab.whoami(token))
    review = await lab.review(token)
    assert review == {"authenticated": False, "user": {}, "error": "service account token has expired"}


async def test_a_token_for_another_audience_is_refused_by_the_api_server(lab: Lab) -> None:
    await lab.service_account()
    token = await lab.token(audiences=["vault"])
    unauthorized(await lab.whoami(token))
    review = await lab.review(token)
    assert review["authenticated"] is False
    assert review["error"] == (
        f'token audiences ["vault"] is invalid for the target audiences ["{DEFAULT_ISSUER}"]'
    )
    # ...but a TokenReview on vault's behalf accepts it.
    for_vault = await lab.review(token, audiences=["vault", "other"])
    assert for_vault["authenticated"] is True
    assert for_vault["audiences"] == ["vault"]
    assert for_vault["user"]["username"] == "system:serviceaccount:default:builder"


async def test_deleting_the_bound_pod_invalidates_the_token(lab: Lab) -> None:
    await lab.service_account()
    await lab.pod("web")  # unscheduled: deleted at once
    token = await lab.token(boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "web"})
    assert (await lab.whoami(token)).status_code == 201
    deleted = await lab.client.delete("/api/v1/namespaces/default/pods/web")
    assert deleted.status_code == 200, deleted.text
    unauthorized(await lab.whoami(token))
    review = await lab.review(token)
    assert review["error"] == "service account token has been invalidated"


async def test_a_pod_recreated_under_the_same_name_does_not_revive_the_token(lab: Lab) -> None:
    await lab.service_account()
    old = await lab.pod("web")
    token = await lab.token(boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "web"})
    await lab.client.delete("/api/v1/namespaces/default/pods/web")
    new = await lab.pod("web")
    unauthorized(await lab.whoami(token))
    review = await lab.review(token)
    assert review["error"] == (
        f"pod UID ({new['metadata']['uid']}) does not match service account pod ref claim "
        f"({old['metadata']['uid']})"
    )


async def test_a_service_account_recreated_under_the_same_name_does_not_revive_the_token(lab: Lab) -> None:
    old = await lab.service_account()
    token = await lab.token()
    assert (await lab.client.delete(f"{SA_PATH}/builder")).status_code == 200
    unauthorized(await lab.whoami(token))
    assert (await lab.review(token))["error"] == 'serviceaccounts "builder" not found'
    new = await lab.service_account()
    unauthorized(await lab.whoami(token))
    assert (await lab.review(token))["error"] == (
        f"service account UID ({new['metadata']['uid']}) does not match claim ({old['metadata']['uid']})"
    )


async def test_a_node_bound_token_dies_with_its_node(lab: Lab) -> None:
    await lab.service_account()
    await lab.make("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}})
    token = await lab.token(boundObjectRef={"kind": "Node", "apiVersion": "v1", "name": "node-1"})
    user = (await lab.whoami(token)).json()["status"]["userInfo"]
    assert user["extra"]["authentication.kubernetes.io/node-name"] == ["node-1"]
    assert (await lab.client.delete("/api/v1/nodes/node-1")).status_code == 200
    unauthorized(await lab.whoami(token))


async def test_a_secret_bound_token_dies_with_its_secret(lab: Lab) -> None:
    await lab.service_account()
    await lab.make(
        "/api/v1/namespaces/default/secrets",
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}},
    )
    token = await lab.token(boundObjectRef={"kind": "Secret", "apiVersion": "v1", "name": "s"})
    assert segments(token)[1]["kubernetes.io"]["secret"]["name"] == "s"
    assert (await lab.whoami(token)).status_code == 201
    assert (await lab.client.delete("/api/v1/namespaces/default/secrets/s")).status_code == 200
    unauthorized(await lab.whoami(token))


async def test_a_tampered_token_is_refused(lab: Lab) -> None:
    await lab.service_account()
    token = await lab.token()
    header, _, signature = token.split(".")
    claims = segments(token)[1]
    claims["sub"] = "system:serviceaccount:kube-system:admin"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    tampered = f"{header}.{forged}.{signature}"
    unauthorized(await lab.whoami(tampered))
    review = await lab.review(tampered)
    assert review["authenticated"] is False
    assert review["error"] == "go-jose/go-jose: error in cryptographic primitive"


async def test_a_token_signed_by_another_key_is_refused(lab: Lab) -> None:
    sa = await lab.service_account()
    impostor = TokenIssuer(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    claims = new_claims(
        issuer=DEFAULT_ISSUER,
        service_account=sa,
        audiences=[DEFAULT_ISSUER],
        expiration_seconds=3600,
        now=lab.clock.now(),
    )
    unauthorized(await lab.whoami(impostor.sign(claims)))


async def test_a_token_of_another_issuer_is_not_ours(lab: Lab, sa_key: rsa.RSAPrivateKey) -> None:
    sa = await lab.service_account()
    elsewhere = TokenIssuer(sa_key, issuer="https://elsewhere")  # even signed with our key
    claims = new_claims(
        issuer="https://elsewhere",
        service_account=sa,
        audiences=[DEFAULT_ISSUER],
        expiration_seconds=3600,
        now=lab.clock.now(),
    )
    token = elsewhere.sign(claims)
    unauthorized(await lab.whoami(token))
    assert (await lab.review(token)) == {"authenticated": False, "user": {}, "error": "invalid bearer token"}


@pytest.mark.parametrize(
    "token",
    [
        "not-a-jwt",
        "a.b.c",
        "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2t1YmVybmV0ZXMuZGVmYXVsdC5zdmMuY2x1c3Rlci5sb2NhbCJ9.@@@",
        # Our issuer, an unsigned token ("alg": "none"): never accepted.
        "eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL2t1YmVybmV0ZXMuZGVmYXVsdC5zdmMuY2x1c3Rlci5sb2NhbCJ9.",
        "x" * 20_000,
        "a." + base64.urlsafe_b64encode(b"[" * 5000 + b"]" * 5000).decode() + ".c",  # too deep to parse
    ],
)
async def test_garbage_bearer_tokens_are_unauthorized_never_a_crash(lab: Lab, token: str) -> None:
    unauthorized(await lab.whoami(token))
    review = await lab.review(token)
    assert review["authenticated"] is False and review["error"]


# -- TokenReview -----------------------------------------------------------------------------------------


async def test_token_review_of_a_service_account_token(lab: Lab) -> None:
    sa = await lab.service_account()
    token = await lab.token()
    review = await lab.review(token)
    assert review == {
        "authenticated": True,
        "user": {
            "username": "system:serviceaccount:default:builder",
            "uid": sa["metadata"]["uid"],
            "groups": ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"],
            "extra": {"authentication.kubernetes.io/credential-id": [f"JTI={segments(token)[1]['jti']}"]},
        },
        "audiences": [DEFAULT_ISSUER],
    }


async def test_token_review_of_a_people_token_is_for_the_api_server_only(lab: Lab) -> None:
    review = await lab.review(ADMIN_TOKEN)
    assert review["authenticated"] is True
    assert review["user"]["username"] == "admin"
    assert review["audiences"] == [DEFAULT_ISSUER]
    assert (await lab.review(ADMIN_TOKEN, audiences=["vault"]))["authenticated"] is False


async def test_token_review_needs_a_token(lab: Lab) -> None:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {}}
    response = await lab.post("/apis/authentication.k8s.io/v1/tokenreviews", body)
    assert response.status_code == 400
    assert response.json()["message"] == "token is required for TokenReview in authentication"
    body["spec"] = {"token": "x", "audiences": "vault"}
    assert (await lab.post("/apis/authentication.k8s.io/v1/tokenreviews", body)).status_code == 400
