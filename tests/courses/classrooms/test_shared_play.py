"""A chapter played in a classroom's shared cluster, against a real lab (``manage.py runlab``).

An instructor switches the classroom's chapters to the shared cluster; a student then does chapter
1's "Follow a ConfigMap to etcd" there: the form applies the ConfigMap in their namespace, and the
check, which the chapter writes for the namespace ``default``, follows it there and passes. The step
before it needs to read Leases in ``kube-system``, which the student may not in the shared cluster:
its solution is refused, with the API server's 403 in words.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.lab import ROOT, LiveLab
from tests.support.student import Student, chapter_socket, sign_up

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PASSWORD = "a-long-Password-42"
#: The instructor and their classroom, made in the lab's own database as an admin would.
SETUP = f"""
from django.contrib.auth.models import Permission, User
from courses.classrooms import services
user = User.objects.create_user("teacher", password={PASSWORD!r})
user.user_permissions.add(Permission.objects.get(codename="teach_classroom"))
user = User.objects.get(pk=user.pk)
room = services.create_classroom(user=user, name="K8s", course="control-plane", chapters=["one-hub"])
print(room.slug, room.join_code)
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  color: blue\n"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(Path(tmp_path_factory.mktemp("shared-play")))
    try:
        yield live
    finally:
        live.stop()


def _setup(lab: LiveLab) -> tuple[str, str]:
    env = {**lab.env, "KUBELAB_DATA_DIR": str(lab.data_dir)}
    made = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SETUP],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    slug, code = made.stdout.split()[-2:]
    return slug, code


def _post(person: Student, path: str, form: str, data: dict[str, str]) -> httpx.Response:
    token = person.csrf(form)
    return person.client.post(
        path,
        data={"csrfmiddlewaretoken": token, **data},
        headers={"Referer": person.base + form, "HX-Request": "true"},
        timeout=120,
    )


def _sign_in(lab: LiveLab, username: str) -> Student:
    client = httpx.Client(base_url=f"http://127.0.0.1:{lab.web}", follow_redirects=False, timeout=30)
    person = Student(lab, username, client)
    signed = _post(
        person, "/accounts/sign-in/", "/accounts/sign-in/", {"username": username, "password": PASSWORD}
    )
    assert signed.status_code == 302, signed.text[:500]
    return person


async def test_a_student_does_a_step_in_their_namespace_of_the_shared_cluster(lab: LiveLab) -> None:
    slug, code = _setup(lab)
    ada = sign_up(lab, "ada")
    joined = _post(ada, "/classrooms/join/", "/classrooms/join/", {"code": code})
    assert joined.status_code == 302, joined.text[:500]
    teacher = _sign_in(lab, "teacher")
    switched = _post(teacher, f"/classrooms/{slug}/chapters-use/", f"/classrooms/{slug}/", {"use": "shared"})
    assert switched.status_code == 200 and "1 student has a namespace" in switched.text, switched.text

    async with chapter_socket(ada, "control-plane", "one-hub") as page:
        ready = await page.until(
            lambda m: m.get("type") == "sandbox" and m.get("state") != "starting", "ready"
        )
        assert ready["state"] == "ready" and ready["namespace"] == "student-ada", ready
        assert ready["cluster"].startswith("classroom-")

        # Reading kube-system's Leases is not hers to do there: the solution says the 403.
        await page.send(action="open", step="find-the-hub")
        await page.verdict("find-the-hub", {"failing"})
        await page.send(action="solve")
        refused = await page.until(lambda m: m.get("type") == "progress" and m.get("ended") is True, "solved")
        assert refused["state"] == "error" and "Forbidden" in refused["text"], refused

        # The ConfigMap goes to her namespace, and the check follows it there.
        await page.send(action="open", step="configmap-to-etcd")
        await page.verdict("configmap-to-etcd", {"failing"})
        result = ada.submit(CONFIGMAP, course="control-plane", chapter="one-hub")
        assert result.status_code == 200 and "student-ada" in result.text, result.text[:2000]
        await page.verdict("configmap-to-etcd", {"passed"}, seconds=45)
