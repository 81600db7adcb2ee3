"""The sandbox pages: the student's own cluster, their kubeconfig, and a reset that asks first."""

from __future__ import annotations

import pytest
import yaml
from django.contrib.auth.models import User
from django.test import AsyncClient
from django.urls import reverse

from courses import gateway
from courses.sandboxes.models import Sandbox
from tests.courses.sandboxes.conftest import LabFactory

pytestmark = pytest.mark.django_db(transaction=True)


async def test_the_pages_ask_for_a_sign_in(sandbox_lab: LabFactory) -> None:
    anonymous = AsyncClient()
    for name in ("courses:sandbox", "courses:sandbox-kubeconfig", "courses:sandbox-reset"):
        answer = await anonymous.get(reverse(name))
        assert answer.status_code == 302
        assert answer["Location"].startswith(reverse("courses:sign-in"))
    assert await Sandbox.objects.acount() == 0


async def test_the_sandbox_page_the_download_and_the_reset(sandbox_lab: LabFactory) -> None:
    alice = await User.objects.acreate_user("alice", password="pw-alice-1")
    client = AsyncClient()
    await client.aforce_login(alice)
    cluster = f"sb-{alice.pk}"
    async with sandbox_lab():
        page = await client.get(reverse("courses:sandbox"))
        assert page.status_code == 200
        html = page.content.decode()
        assert f'data-sandbox="{cluster}"' in html
        assert 'class="state state-running">running<' in html
        assert "data-sandbox-timing>classroom<" in html
        assert "student:alice" in html
        assert reverse("courses:sandbox-kubeconfig") in html and reverse("courses:sandbox-reset") in html
        assert reverse("courses:cluster", args=[cluster]) in html

        download = await client.get(reverse("courses:sandbox-kubeconfig"))
        assert download.status_code == 200
        assert download["Content-Disposition"] == f'attachment; filename="kubeconfig-{cluster}.yaml"'
        assert download["Cache-Control"] == "no-store"
        kubeconfig = yaml.safe_load(download.content)
        token = kubeconfig["users"][0]["user"]["token"]
        assert kubeconfig["clusters"][0]["cluster"]["server"].endswith(f"/clusters/{cluster}")

        # The question first: nothing is reset by looking at it.
        question = await client.get(reverse("courses:sandbox-reset"))
        assert question.status_code == 200
        form = question.content.decode()
        assert 'method="post"' in form and "csrfmiddlewaretoken" in form
        partial = await client.get(reverse("courses:sandbox-reset"), headers={"HX-Request": "true"})
        assert partial.content.decode().lstrip().startswith("<form")
        assert (await Sandbox.objects.aget(user=alice)).resets == 0

        # Without the CSRF token a POST is refused; with it, the sandbox is made anew.
        strict = AsyncClient(enforce_csrf_checks=True)
        await strict.aforce_login(alice)
        assert (await strict.post(reverse("courses:sandbox-reset"))).status_code == 403
        done = await client.post(reverse("courses:sandbox-reset"))
        assert done.status_code == 303
        assert done["Location"] == reverse("courses:sandbox") + "?reset=done"
        assert (await Sandbox.objects.aget(user=alice)).resets == 1
        async with gateway.api_client(cluster=cluster, token=token) as old:
            assert (await old.get("/api/v1/namespaces")).status_code == 401  # the old kubeconfig is void
        after = await client.get(done["Location"])
        assert 'class="state state-running">running<' in after.content.decode()
        assert 'role="status"' in after.content.decode()

        by_htmx = await client.post(reverse("courses:sandbox-reset"), headers={"HX-Request": "true"})
        assert by_htmx.status_code == 204
        assert by_htmx["HX-Redirect"] == reverse("courses:sandbox") + "?reset=done"


async def test_without_a_lab_the_page_says_so() -> None:
    from controlplane.runtime import activate

    activate(None)
    bob = await User.objects.acreate_user("bob", password="pw-bob-1")
    client = AsyncClient()
    await client.aforce_login(bob)
    answer = await client.get(reverse("courses:sandbox"))
    assert answer.status_code == 503
    assert "not running in this server process" in answer.content.decode()
