"""No fault outlives its classroom: deleting a classroom clears what its instructors applied to its
clusters, and only that (a fault a student's chapter applied stays until it ends)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Permission, User

from controlplane.faults.service import FaultService
from courses.classrooms import services
from courses.classrooms.models import Classroom, ClassroomCluster
from tests.courses.sandboxes.conftest import LabFactory

pytestmark = pytest.mark.django_db(transaction=True)


async def test_deleting_a_classroom_clears_its_instructors_faults_and_no_others(
    sandbox_lab: LabFactory,
) -> None:
    teacher = await User.objects.acreate_user("teacher", password="pw-teacher-12345")
    await teacher.user_permissions.aadd(await Permission.objects.aget(codename="teach_classroom"))

    def make() -> Classroom:
        classroom = services.create_classroom(user=teacher, name="K8s", course="control-plane", chapters=[])
        ClassroomCluster.objects.create(classroom=classroom, cluster="room", shared=True)
        return classroom

    classroom = await sync_to_async(make)()
    async with sandbox_lab(components=("kubelet",)) as lab:
        await lab.ensure_cluster("room")
        await lab.settled("room")  # its kubelets started: a fault applies to a running cluster
        faults = FaultService.of(lab)
        ours = await faults.apply(
            "room",
            "stop-kubelet",
            {"node": "node-1"},
            reason=services.fault_reason(user=teacher, classroom=classroom),
            actor="teacher",
        )
        theirs = await faults.apply(
            "room", "stop-kubelet", {"node": "node-2"}, reason="chapter tiny/01, step x"
        )
        assert {f.id for f in faults.in_force("room")} == {ours.fault.id, theirs.fault.id}
        cleared = lab.trace_bus("room").subscribe()

        await sync_to_async(Classroom.objects.filter(pk=classroom.pk).delete)()

        async with asyncio.timeout(10):
            seen: list[dict[str, Any]] = []
            while not any(e["type"] == "fault.cleared" for e in seen):
                batch = await cleared.next_batch()
                assert batch is not None
                seen.extend(batch.events)
        (event,) = [e for e in seen if e["type"] == "fault.cleared"]
        assert (event["target"], event["reason"]) == ("kubelet:node-1", "classroom k8s deleted")
        assert [f.id for f in faults.in_force("room")] == [theirs.fault.id]
