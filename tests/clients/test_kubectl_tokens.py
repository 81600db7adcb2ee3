"""kubectl 1.37 and ServiceAccount tokens: ``kubectl create token``, then using the token."""

from __future__ import annotations

import base64
import json
import textwrap
from typing import Any

from tests.support.lab import LiveLab


def claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return decoded


def default_service_account(lab: LiveLab) -> dict[str, Any]:
    """The ``default`` ServiceAccount of ``default``, once the serviceaccount controller made it."""

    def made() -> Any:
        result = lab.kubectl("get", "serviceaccount", "default", "-o", "json", check=False)
        return json.loads(result.stdout) if result.returncode == 0 else None

    found: dict[str, Any] = lab.eventually(made, "the default ServiceAccount")
    return found


def test_create_token_and_use_it(lab: LiveLab) -> None:
    sa = default_service_account(lab)
    token = lab.kubectl("create", "token", "default").stdout.strip()
    payload = claims(token)
    assert payload["sub"] == "system:serviceaccount:default:default"
    assert payload["kubernetes.io"]["serviceaccount"] == {"name": "default", "uid": sa["metadata"]["uid"]}
    assert payload["exp"] - payload["iat"] == 3600

    whoami = lab.kubectl("auth", "whoami", "--token", token).stdout
    assert "system:serviceaccount:default:default" in whoami
    assert "system:serviceaccounts:default" in whoami
    assert f"JTI={payload['jti']}" in whoami
    # The token works for ordinary requests too: RBAC knows the ServiceAccount by its user name.
    refused = lab.kubectl("get", "serviceaccounts", "--token", token, "-o", "name", check=False)
    assert refused.returncode != 0
    assert (
        'User "system:serviceaccount:default:default" cannot list resource "serviceaccounts"'
        in refused.stderr
    )
    lab.kubectl(
        "create", "rolebinding", "default-view", "--clusterrole=view", "--serviceaccount=default:default"
    )
    assert "default" in lab.kubectl("get", "serviceaccounts", "--token", token, "-o", "name").stdout


def test_create_token_bound_to_a_pod_for_another_audience(lab: LiveLab) -> None:
    default_service_account(lab)
    manifest = textwrap.dedent(
        """
        apiVersion: v1
        kind: Pod
        metadata: {name: token-holder}
        spec:
          serviceAccountName: default
          containers: [{name: c, image: nginx}]
        """
    )
    lab.kubectl("create", "-f", "-", "--validate=false", input=manifest)
    pod_uid = lab.kubectl_json("get", "pod", "token-holder")["metadata"]["uid"]
    token = lab.kubectl(
        "create", "token", "default", "--duration=10m", "--audience=foo",
        "--bound-object-kind=Pod", "--bound-object-name=token-holder",
    ).stdout.strip()  # fmt: skip
    payload = claims(token)
    assert payload["aud"] == ["foo"]
    assert payload["exp"] - payload["iat"] == 600
    assert payload["kubernetes.io"]["pod"] == {"name": "token-holder", "uid": pod_uid}
    # Made for "foo", not for the API server: kubectl is told it is not logged in.
    refused = lab.kubectl("auth", "whoami", "--token", token, check=False)
    assert refused.returncode == 1
    assert "Unauthorized" in refused.stderr


def test_create_token_refuses_short_durations_with_upstreams_message(lab: LiveLab) -> None:
    default_service_account(lab)
    result = lab.kubectl("create", "token", "default", "--duration=5m", check=False)
    assert result.returncode == 1
    assert "may not specify a duration less than 10 minutes" in result.stderr


def test_a_token_stops_working_when_its_pod_is_deleted(lab: LiveLab) -> None:
    default_service_account(lab)
    manifest = textwrap.dedent(
        """
        apiVersion: v1
        kind: Pod
        metadata: {name: short-lived}
        spec:
          serviceAccountName: default
          containers: [{name: c, image: nginx}]
        """
    )
    lab.kubectl("create", "-f", "-", "--validate=false", input=manifest)
    token = lab.kubectl(
        "create", "token", "default", "--bound-object-kind=Pod", "--bound-object-name=short-lived"
    ).stdout.strip()
    assert "system:serviceaccount:default:default" in lab.kubectl("auth", "whoami", "--token", token).stdout
    lab.kubectl("delete", "pod", "short-lived", "--grace-period=0", "--force", "--wait=true")

    def refused() -> bool:
        return lab.kubectl("auth", "whoami", "--token", token, check=False).returncode == 1

    lab.eventually(refused, "the deleted pod's token to be refused")
