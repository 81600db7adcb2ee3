"""Deleting an account deletes its sandbox: stopped, its data gone, forgotten by the lab."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from controlplane.runtime import LabConfig, cluster_dir
from courses import gateway
from courses.sandboxes.identities import sandbox_name
from tests.support.lab import active_lab


@pytest.mark.django_db(transaction=True)
async def test_deleting_an_account_deletes_its_sandbox(tmp_path: Path) -> None:
    async with active_lab(LabConfig(data_dir=tmp_path, components=(), nodes=0)) as lab:
        student = await User.objects.acreate(username="leaving")
        keeper = await User.objects.acreate(username="staying")
        mine, theirs = sandbox_name(user_id=student.pk), sandbox_name(user_id=keeper.pk)
        await lab.ensure_cluster(mine)
        await lab.ensure_cluster(theirs)

        await student.adelete()
        # The receiver ran on Django's thread and handed the deletion to the lab's loop.
        await asyncio.wait_for(asyncio.gather(*list(gateway._BACKGROUND)), timeout=30)
        assert mine not in lab.names(), "the account's sandbox is gone from the lab"
        assert not cluster_dir(tmp_path, mine).exists(), "and its data from the disk"
        assert theirs in lab.names(), "another account's sandbox is untouched"
