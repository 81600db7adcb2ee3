"""The book of faults: what is in force, pending, renewed, due and expired, with time passed in."""

from __future__ import annotations

from controlplane.faults.book import FaultBook, Outcome
from controlplane.faults.catalogue import check

T = 1_000.0


def test_a_lasting_fault_ends_at_its_duration_and_never_after_its_maximum() -> None:
    book = FaultBook()
    timed, outcome = book.add("a", check("stop-kubelet", {"node": "node-1", "for": 60}), now=T)
    assert outcome is Outcome.APPLIED and (timed.starts_at, timed.ends_at) == (T, T + 60)
    forever, _ = book.add("a", check("stop-kubelet", {"node": "node-2"}), now=T)
    assert forever.ends_at == T + 1800, "until cleared is 30 minutes at most"
    loop, _ = book.add("a", check("hot-loop-client", {}), now=T)
    assert loop.ends_at == T + 300, "a kind may have a shorter maximum"
    assert book.next_deadline() == T + 60
    assert book.expired(T + 59.9) == []
    assert [f.id for f in book.expired(T + 60)] == [timed.id]
    assert [f.id for f in book.in_force("a")] == [forever.id, loop.id]


def test_the_same_fault_again_starts_its_time_anew_and_others_stack() -> None:
    book = FaultBook()
    first, _ = book.add("a", check("stop-kubelet", {"node": "node-1", "for": 60}), now=T, reason="one")
    again, outcome = book.add("a", check("stop-kubelet", {"node": "node-1", "for": 30}), now=T + 50)
    assert outcome is Outcome.RENEWED and again.id == first.id
    assert (again.starts_at, again.ends_at, again.reason) == (T, T + 80, "one")
    other, outcome = book.add("a", check("stop-kubelet", {"node": "node-2"}), now=T)
    assert outcome is Outcome.APPLIED and other.id != first.id
    _elsewhere, outcome = book.add("b", check("stop-kubelet", {"node": "node-1"}), now=T)
    assert outcome is Outcome.APPLIED
    assert len(book.in_force()) == 3 and len(book.in_force("a")) == 2


def test_a_fault_that_happens_at_once_is_not_started_twice() -> None:
    book = FaultBook()
    restart, outcome = book.add("a", check("restart-apiserver", {}), now=T)
    assert outcome is Outcome.APPLIED and restart.ends_at is None
    same, outcome = book.add("a", check("restart-apiserver", {}), now=T + 1)
    assert outcome is Outcome.UNDER_WAY and same.id == restart.id
    assert book.next_deadline() is None, "it ends when its effect is done, not at a time"
    assert book.remove(restart.id) == restart and book.in_force() == []


def test_a_delayed_fault_waits_then_starts() -> None:
    book = FaultBook()
    later, outcome = book.add("a", check("stop-kubelet", {"node": "node-1", "for": 10}), now=T, delay=30)
    assert outcome is Outcome.PENDING and (later.starts_at, later.ends_at) == (T + 30, T + 40)
    assert book.in_force() == [] and book.pending("a") == [later]
    assert book.next_deadline() == T + 30
    assert book.due(T + 29) == []
    assert book.due(T + 30) == [later]
    assert book.in_force("a") == [later] and book.pending() == []
    assert book.next_deadline() == T + 40


def test_clearing_by_kind_parameters_and_cluster() -> None:
    book = FaultBook()
    one, _ = book.add("a", check("stop-kubelet", {"node": "node-1"}), now=T)
    two, _ = book.add("a", check("stop-kubelet", {"node": "node-2"}), now=T)
    loop, _ = book.add("a", check("hot-loop-client", {}), now=T)
    waiting, _ = book.add("a", check("hot-loop-client", {"for": 5}), now=T, delay=9)
    theirs, _ = book.add("b", check("stop-kubelet", {"node": "node-1"}), now=T)
    assert book.matching("a", "stop-kubelet", {"node": "node-2"}) == [two]
    assert book.matching("a", "stop-kubelet") == [one, two]
    # The same hot loop, applied again for later, renews the one in force: it ends 5 s after the delay.
    assert waiting.id == loop.id and waiting.ends_at == T + 14
    assert [f.id for f in book.matching("a")] == [one.id, two.id, loop.id]
    assert [f.id for f in book.drop_cluster("a")] == [one.id, two.id, loop.id]
    assert book.in_force() == [theirs] and book.get(one.id) is None
