"""The controller manager: every controller it runs holds its RBAC role, and the root CA certificate
publisher publishes the bundle it is given, else the CA the controller manager's own client trusts."""

from __future__ import annotations

from pathlib import Path

import pytest

from controlplane.apiserver.authz.bootstrap import CONTROLLER_PREFIX, KCM_CONTROLLER_ROLES, controller_roles
from controlplane.components.controllermanager import CONTROLLERS, ControllerManager
from controlplane.components.controllers.rootcacertpublisher import ROOT_CA_CONFIGMAP_NAME
from controlplane.identity import UserInfo
from tests.support.inprocess import in_process_cluster, wait_for

CONTROLLER_MANAGER = UserInfo.create("system:kube-controller-manager")
PUBLISHER = "root-ca-certificate-publisher-controller"
CLIENT_CA = b"-----BEGIN CERTIFICATE-----\nclient's\n-----END CERTIFICATE-----\n"
ROOT_CA_FILE = b"-----BEGIN CERTIFICATE-----\nroot-ca-file\n-----END CERTIFICATE-----\n"


def test_every_controller_it_runs_is_granted_its_upstream_role() -> None:
    roles = {role["metadata"]["name"] for role in controller_roles()}
    assert set(KCM_CONTROLLER_ROLES) == set(CONTROLLERS), "KCM_CONTROLLER_ROLES and CONTROLLERS disagree"
    missing = {
        name: role for name, role in KCM_CONTROLLER_ROLES.items() if CONTROLLER_PREFIX + role not in roles
    }
    assert not missing, f"no such system:controller: roles: {missing}"
    assert KCM_CONTROLLER_ROLES[PUBLISHER] == "root-ca-cert-publisher"


def test_an_unknown_controller_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown controllers"):
        ControllerManager(object(), controllers=["root-ca-cert-publisher-typo"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("root_ca", "published"),
    [(None, CLIENT_CA), (ROOT_CA_FILE, ROOT_CA_FILE)],
    ids=["the client's CA", "--root-ca-file"],
)
async def test_the_publisher_publishes_the_root_ca_else_the_clients_ca(
    tmp_path: Path, root_ca: bytes | None, published: bytes
) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        # In-process the CA is not used to connect; it stands for a kubeconfig's certificate-authority.
        client = cluster.client_for(CONTROLLER_MANAGER, ca_data=CLIENT_CA)
        manager = ControllerManager(client, controllers=[PUBLISHER], root_ca=root_ca)
        await manager.start()
        try:
            items = await wait_for(
                cluster.resource("", "v1", "configmaps", "default"),
                lambda items: any(cm["metadata"]["name"] == ROOT_CA_CONFIGMAP_NAME for cm in items),
            )
        finally:
            await manager.stop()
        [configmap] = [cm for cm in items if cm["metadata"]["name"] == ROOT_CA_CONFIGMAP_NAME]
        assert configmap["data"] == {"ca.crt": published.decode()}
