"""What a fault caused, counted from trace events: each count moves only for what it names."""

from __future__ import annotations

from typing import Any

from controlplane.faults.consequences import Tally


def _done(seq: int, **fields: Any) -> dict[str, Any]:
    return {"type": "request.completed", "seq": seq, **fields}


def _closed(seq: int, to: str, reason: str, **fields: Any) -> dict[str, Any]:
    return {"type": "watch.closed", "seq": seq, "to": to, "reason": reason, "watch": f"w-{seq}", **fields}


def test_nothing_before_the_fault_counts() -> None:
    tally = Tally(since_seq=10)
    tally.offer(_done(9, code=500, verb="get", **{"from": "user:alice"}))
    tally.offer(_done(10, code=429, verb="get", **{"from": "user:alice"}))
    assert tally.as_json() == {
        "since_seq": 10, "failed": {}, "throttled": 0, "broken_watches": 0, "relists": 0, "pods_deleted": 0,
    }  # fmt: skip


def test_failed_requests_by_code_and_429s() -> None:
    tally = Tally(since_seq=0)
    for seq, code in enumerate((200, 500, 500, 429, 404, 201), start=1):
        tally.offer(_done(seq, code=code, verb="get", **{"from": "user:alice"}))
    assert tally.as_json()["failed"] == {"404": 1, "429": 1, "500": 2}
    assert tally.throttled == 1


def test_a_cut_watch_and_the_relist_that_follows() -> None:
    tally = Tally(since_seq=0)
    tally.offer(_closed(1, "scheduler", "the API server is shutting down"))
    tally.offer(_closed(2, "kubelet:node-1", "timeout"))  # its time was up: nothing broke
    tally.offer(_closed(3, "user:alice", "the client went away"))  # Ctrl+C
    tally.offer(_closed(4, "apiserver", "compacted", source="store"))  # the server's own watch on the store
    tally.offer(_done(5, code=200, verb="list", **{"from": "kubelet:node-1"}))  # an ordinary list
    tally.offer(_done(6, code=200, verb="list", **{"from": "scheduler"}))
    tally.offer(_done(7, code=200, verb="list", **{"from": "scheduler"}))  # one re-list per cut watch
    assert (tally.broken_watches, tally.relists) == (1, 1)


def test_pods_deleted_by_the_controller_manager() -> None:
    tally = Tally(since_seq=0)
    tally.offer(_done(1, code=200, verb="delete", resource="pods", **{"from": "controller-manager"}))
    tally.offer(_done(2, code=200, verb="delete", resource="pods", **{"from": "user:alice"}))
    tally.offer(_done(3, code=404, verb="delete", resource="pods", **{"from": "controller-manager"}))
    tally.offer(_done(4, code=200, verb="delete", resource="replicasets", **{"from": "controller-manager"}))
    assert tally.pods_deleted == 1


def _fault(seq: int, ts: float, kind: str, reason: str = "") -> dict[str, Any]:
    return {"type": kind, "seq": seq, "ts": ts, "fault": "stop-kubelet", "target": "kubelet:node-2",
            "params": {"node": "node-2"}, "reason": reason}  # fmt: skip


def test_an_episode_counts_from_its_fault_through_its_aftermath() -> None:
    from controlplane.faults.consequences import AFTERMATH, Episodes

    episodes = Episodes()
    episodes.offer(_done(1, ts=0.0, code=500, verb="get", **{"from": "user:a"}))  # before: not counted
    episodes.offer(_fault(2, 1.0, "fault.applied", "instructor bob"))
    episodes.offer(_fault(3, 2.0, "fault.applied"))  # applied again while in force: the same episode
    episodes.offer(_done(4, ts=3.0, code=500, verb="get", **{"from": "user:a"}))
    episodes.offer(_fault(5, 10.0, "fault.cleared", "cleared by bob"))
    episodes.offer(_done(6, ts=10.0 + AFTERMATH, code=503, verb="get", **{"from": "user:a"}))  # aftermath
    episodes.offer(_done(7, ts=11.0 + AFTERMATH, code=502, verb="get", **{"from": "user:a"}))  # after it
    episodes.offer(_done(7, ts=12.0 + AFTERMATH, code=504, verb="get", **{"from": "user:a"}))  # seen already
    (only,) = episodes.episodes()
    summary = only.as_json()
    assert summary["applied_seq"] == 2 and summary["reason"] == "instructor bob"
    assert summary["in_force"] is False and summary["cleared_reason"] == "cleared by bob"
    assert summary["caused"]["failed"] == {"500": 1, "503": 1}
    assert episodes.last_seq == 7


def test_episodes_are_newest_first_and_a_new_application_after_a_clear_is_a_new_one() -> None:
    from controlplane.faults.consequences import Episodes

    episodes = Episodes()
    episodes.offer(_fault(1, 1.0, "fault.applied"))
    episodes.offer(_fault(2, 2.0, "fault.cleared"))
    episodes.offer(_fault(3, 3.0, "fault.applied"))
    assert [e.applied_seq for e in episodes.episodes()] == [3, 1]
    assert episodes.episodes()[0].as_json()["in_force"] is True
