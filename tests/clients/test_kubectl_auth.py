"""kubectl 1.37 and authorization: ``auth can-i`` (and ``--list``, ``--as``), 403s, impersonation, RBAC."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.lab import KUBECTL, ROOT, LiveLab

STUDENT = "student:ada"


@pytest.fixture(scope="module")
def student_kubeconfig(lab: LiveLab) -> Path:
    """A kubeconfig for ``student:ada`` (a bearer token, no groups but system:authenticated)."""
    command = [sys.executable, "manage.py", "kubeconfig", "--cluster", "demo", "--user", STUDENT]
    command += ["--server", f"https://127.0.0.1:{lab.api}", "--data-dir", str(lab.data_dir)]
    made = subprocess.run(
        command,
        cwd=ROOT,
        env=lab.env,
        capture_output=True,
        text=True,
        check=True,
    )
    path = lab.data_dir / "student-kubeconfig"
    path.write_text(made.stdout)
    return path


def as_student(lab: LiveLab, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(lab.cache_dir / "student"), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_can_i_answers_for_the_admin_and_for_whom_it_impersonates(lab: LiveLab) -> None:
    assert lab.kubectl("auth", "can-i", "create", "pods").stdout.strip() == "yes"
    assert lab.kubectl("auth", "can-i", "get", "/metrics").stdout.strip() == "yes"
    refused = lab.kubectl("auth", "can-i", "create", "pods", "--as", STUDENT, check=False)
    assert (refused.returncode, refused.stdout.strip()) == (1, "no")
    lab.kubectl("create", "namespace", "ada-space")
    lab.kubectl(
        "create", "rolebinding", "ada-edit", "--clusterrole=edit", f"--user={STUDENT}", "-n", "ada-space"
    )
    assert (
        lab.kubectl("auth", "can-i", "create", "pods", "--as", STUDENT, "-n", "ada-space").stdout.strip()
        == "yes"
    )
    assert (
        lab.kubectl(
            "auth", "can-i", "create", "pods", "--as", STUDENT, "-n", "default", check=False
        ).returncode
        == 1
    )
    whoami = lab.kubectl("auth", "whoami", "--as", STUDENT, "--as-group", "devs").stdout
    assert STUDENT in whoami and "devs" in whoami and "system:authenticated" in whoami


def test_can_i_list_prints_the_rules_that_apply(lab: LiveLab, student_kubeconfig: Path) -> None:
    admin = lab.kubectl("auth", "can-i", "--list", "-n", "default").stdout
    assert "*.*" in admin and "[*]" in admin
    listed = as_student(lab, student_kubeconfig, "auth", "can-i", "--list", "-n", "default")
    assert listed.returncode == 0, listed.stderr
    assert "selfsubjectaccessreviews.authorization.k8s.io" in listed.stdout
    assert "[/version]" in listed.stdout
    assert "pods" not in listed.stdout.split()


def test_a_student_is_refused_with_upstreams_message(lab: LiveLab, student_kubeconfig: Path) -> None:
    refused = as_student(lab, student_kubeconfig, "get", "pods", "-n", "default")
    assert refused.returncode == 1
    assert (
        'Error from server (Forbidden): pods is forbidden: User "student:ada" cannot list resource "pods" '
        'in API group "" in the namespace "default"'
    ) in refused.stderr
    impersonating = as_student(lab, student_kubeconfig, "get", "pods", "--as", "admin")
    assert impersonating.returncode == 1
    assert (
        'users "admin" is forbidden: User "student:ada" cannot impersonate resource "users" in API group "" '
        "at the cluster scope"
    ) in impersonating.stderr
    assert as_student(lab, student_kubeconfig, "auth", "can-i", "create", "pods").stdout.strip() == "no"


def test_a_student_cannot_grant_themselves_cluster_admin(lab: LiveLab, student_kubeconfig: Path) -> None:
    lab.kubectl(
        "create", "clusterrole", "binding-writer", "--verb=create,get", "--resource=clusterrolebindings"
    )
    lab.kubectl(
        "create",
        "clusterrolebinding",
        "ada-writes-bindings",
        "--clusterrole=binding-writer",
        f"--user={STUDENT}",
    )
    grab = as_student(
        lab,
        student_kubeconfig,
        "create",
        "clusterrolebinding",
        "ada-root",
        "--clusterrole=cluster-admin",
        f"--user={STUDENT}",
    )
    assert grab.returncode == 1
    assert (
        'clusterrolebindings.rbac.authorization.k8s.io "ada-root" is forbidden: user "student:ada" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:'
    ) in grab.stderr
    assert lab.kubectl("get", "clusterrolebinding", "ada-root", check=False).returncode == 1
