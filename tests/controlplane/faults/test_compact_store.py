"""compact-store: etcd's history before the current revision is gone, as after a compaction upstream.

kube-apiserver asks etcd to compact every ``--etcd-compaction-interval`` (5 minutes); this fault does
it now. A read at an older revision that goes to the store (``resourceVersionMatch=Exact``) is then
answered 410 Gone, "too old", and a watch of the store from an older revision (the API server's own,
or ``etcdctl watch --rev``) is refused: etcd's ``mvcc: required revision has been compacted``.
"""

from __future__ import annotations

import pytest

from controlplane.client.errors import ResourceExpired
from controlplane.faults.book import Outcome
from controlplane.store.errors import Compacted
from tests.controlplane.faults.conftest import Running


async def test_reads_and_watches_at_older_revisions_are_refused_after_a_compaction(running: Running) -> None:
    cluster, trace = running.cluster, running.trace
    configmaps = running.admin.resource("", "v1", "configmaps", "default")
    created = await configmaps.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"color": "blue"}}
    )
    old = created["metadata"]["resourceVersion"]
    await configmaps.patch("app", {"data": {"color": "green"}})
    exact = {"resource_version": old, "resource_version_match": "Exact"}
    before = await configmaps.list(**exact)
    colors = [c["data"]["color"] for c in before["items"] if c["metadata"]["name"] == "app"]
    assert colors == ["blue"], "history is there before"
    start = len(trace.events)

    applied = await running.faults.apply(cluster.name, "compact-store", reason="test")

    assert applied.outcome is Outcome.APPLIED and running.faults.in_force() == []
    # Compacted at the revision current when it was applied (the cluster's components write on: a
    # Lease renewal may already have moved the store past it).
    mark = await cluster.store.compact_revision()
    assert int(old) < mark <= await cluster.store.current_revision()
    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    compacted = await trace.until(lambda e: e["type"] == "store.compact", after=start)
    off = await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    assert (on["fault"], on["target"], compacted["revision"], off["reason"]) == (
        "compact-store",
        "etcd",
        mark,
        "done",
    )
    assert trace.index(on) < trace.index(compacted) < trace.index(off)

    with pytest.raises(ResourceExpired) as expired:
        await configmaps.list(**exact)
    assert expired.value.code == 410 and "too old" in expired.value.message
    with pytest.raises(Compacted):
        await cluster.store.watch("/registry/configmaps/", from_revision=int(old))
    # What is current still reads, and the cluster goes on: a write after the compaction.
    assert (await configmaps.get("app"))["data"] == {"color": "green"}
    await configmaps.patch("app", {"data": {"color": "red"}})
