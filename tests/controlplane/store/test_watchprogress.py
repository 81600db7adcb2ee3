"""Watch progress: a watch owed none of the store's own writes has seen up to the newest revision."""

from __future__ import annotations

from dataclasses import dataclass

from controlplane.store.watchprogress import WatchProgress


@dataclass(eq=False)
class FakeWatch:
    prefix: str
    progress_revision: int = 0


def test_a_watch_owed_nothing_has_seen_the_newest_revision_heard_of() -> None:
    progress, pods = WatchProgress(), FakeWatch("/registry/pods/")
    progress.watching(pods, 10)
    progress.wrote(11, ["/registry/configmaps/default/a"])
    progress.heard(14)  # another cluster sharing the etcd wrote 12 to 14
    progress.advance([pods])
    assert pods.progress_revision == 14


def test_a_write_under_the_prefix_is_owed_until_its_event_arrives() -> None:
    progress, pods = WatchProgress(), FakeWatch("/registry/pods/")
    progress.watching(pods, 10)
    progress.wrote(11, ["/registry/pods/default/web"])
    progress.heard(12)
    progress.advance([pods])
    assert pods.progress_revision == 0, "progress past a write whose event has not come"
    progress.delivered(pods, 11)
    progress.advance([pods])
    assert pods.progress_revision == 12


def test_an_event_that_came_before_the_writes_answer_owes_nothing() -> None:
    progress, pods = WatchProgress(), FakeWatch("/registry/pods/")
    progress.watching(pods, 10)
    progress.delivered(pods, 11)  # etcd's watch stream was faster than the write's answer
    progress.wrote(11, ["/registry/pods/default/web"])
    progress.advance([pods])
    assert pods.progress_revision == 11


def test_nobody_progresses_while_a_write_is_on_its_way() -> None:
    progress, pods = WatchProgress(), FakeWatch("/registry/pods/")
    progress.watching(pods, 10)
    progress.writing += 1
    progress.heard(12)  # maybe the revision of the write in flight, under the prefix
    progress.advance([pods])
    assert pods.progress_revision == 0
    progress.writing -= 1
    progress.wrote(12, ["/registry/leases/kube-system/a"])
    progress.advance([pods])
    assert pods.progress_revision == 12


def test_a_watch_from_the_past_is_owed_the_writes_after_its_start() -> None:
    progress = WatchProgress()
    progress.wrote(11, ["/registry/pods/default/web"])
    progress.wrote(12, ["/registry/services/default/web"])
    pods, services = FakeWatch("/registry/pods/"), FakeWatch("/registry/services/")
    progress.watching(pods, 10)  # listed at 10: the write at 11 will be replayed to it
    progress.watching(services, 12)
    progress.advance([pods, services])
    assert (pods.progress_revision, services.progress_revision) == (0, 12)
    progress.delivered(pods, 11)
    progress.advance([pods])
    assert pods.progress_revision == 12


def test_a_watch_from_before_what_is_remembered_waits_for_an_event_as_new_as_the_last_write() -> None:
    progress = WatchProgress(remembered=2)
    for revision in (11, 12, 13):
        progress.wrote(revision, [f"/registry/configmaps/default/c{revision}"])
    pods = FakeWatch("/registry/pods/")
    progress.watching(pods, 10)  # the write at 11 is forgotten: was it a pod? assume so
    progress.advance([pods])
    assert pods.progress_revision == 0
    progress.delivered(pods, 13)
    progress.advance([pods])
    assert pods.progress_revision == 13


def test_a_forgotten_watch_is_no_longer_advanced() -> None:
    progress, pods = WatchProgress(), FakeWatch("/registry/pods/")
    progress.watching(pods, 10)
    progress.forget(pods)
    progress.heard(20)
    progress.advance([pods])
    assert pods.progress_revision == 0
