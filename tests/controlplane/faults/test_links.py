"""The pure cores of the network and store kinds: ``LinkBook``, ``storefaults.combined``, their checks."""

from __future__ import annotations

import random

import pytest

from controlplane.endpoint import LinkCondition
from controlplane.faults import catalogue
from controlplane.faults.catalogue import InvalidFault
from controlplane.faults.links import Latency, LinkBook
from controlplane.faults.storefaults import combined
from controlplane.store.conditions import StoreConditions


def test_a_sound_link_has_no_condition_and_an_empty_book_says_so() -> None:
    book = LinkBook()
    assert book.empty and book.condition("scheduler") is None


def test_a_cut_link_is_cut_until_its_last_fault_ends() -> None:
    book = LinkBook()
    book.cut("f1", "kubelet:node-2")
    book.cut("f2", "kubelet:node-2")
    assert book.condition("kubelet:node-2") == LinkCondition(cut=True)
    assert book.condition("kubelet:node-1") is None
    book.remove("f1")
    assert book.is_cut("kubelet:node-2")
    book.remove("f2")
    assert book.empty and book.condition("kubelet:node-2") is None


def test_a_cut_wins_over_latency_and_latencies_add_up() -> None:
    book = LinkBook()
    book.slow("f1", "scheduler", Latency(0.1))
    book.slow("f2", "scheduler", Latency(0.2))
    slowed = book.condition("scheduler")
    assert slowed is not None and not slowed.cut and slowed.delay == pytest.approx(0.3)
    book.cut("f3", "scheduler")
    assert book.condition("scheduler") == LinkCondition(cut=True)


def test_jitter_stays_within_its_bounds_and_never_below_zero() -> None:
    book = LinkBook(random.Random(7))
    book.slow("f1", "scheduler", Latency(0.1, 0.05))
    delays = [c.delay for c in (book.condition("scheduler") for _ in range(200)) if c is not None]
    assert len(delays) == 200 and all(0.05 <= d <= 0.15 for d in delays)
    assert len(set(delays)) > 1, "it varies"
    book.slow("f2", "controller-manager", Latency(0.01, 0.5))
    assert all((c := book.condition("controller-manager")) and c.delay >= 0 for _ in range(200))


def test_store_conditions_of_several_faults_at_once() -> None:
    assert combined([]) is None
    both = combined(
        [
            StoreConditions(commit_delay=0.2),
            StoreConditions(commit_delay=0.5),
            StoreConditions(unreachable=True),
        ]
    )
    assert both == StoreConditions(commit_delay=0.5, unreachable=True)


def test_the_new_kinds_checks() -> None:
    spec = catalogue.check("partition-component", {"component": "kubelet:node-2"}, nodes=3)
    assert spec.target == "kubelet:node-2"
    assert catalogue.check("partition-component", {"component": "scheduler"}).target == "scheduler"
    with pytest.raises(InvalidFault, match="node-1 to node-3") as beyond:
        catalogue.check("partition-component", {"component": "kubelet:node-4"}, nodes=3)
    assert beyond.value.parameter == "component"
    with pytest.raises(InvalidFault, match="link to the API server"):
        catalogue.check("partition-component", {"component": "etcd"})
    # Milliseconds: a number, or its digits as ``manage.py fault --param delay=200`` writes them.
    assert catalogue.check("slow-store", {"delay": "200"}).parameters() == {"delay": 200}
    with pytest.raises(InvalidFault, match="from 1 to 10000 ms") as zero:
        catalogue.check("slow-store", {"delay": 0})
    assert zero.value.parameter == "delay"
    with pytest.raises(InvalidFault, match="whole number"):
        catalogue.check("slow-store", {"delay": 1.5})
    assert catalogue.check("store-unavailable", {"for": 60}).target == "etcd"
    latency = catalogue.check("link-latency", {"component": "kube-proxy:node-1", "ms": 100, "jitter": 0})
    assert latency.target == "kube-proxy:node-1"
    assert latency.label() == "Delay kube-proxy:node-1's requests by 100 ms (± 0 ms)"
    assert latency.label("zh-hans") == "让 kube-proxy:node-1 的请求延迟 100 毫秒（± 0 毫秒）"  # noqa: RUF001
    with pytest.raises(InvalidFault, match="needs 'jitter'"):
        catalogue.check("link-latency", {"component": "scheduler", "ms": 100})


@pytest.mark.parametrize("name", ["partition-component", "slow-store", "store-unavailable", "link-latency"])
def test_each_new_kind_speaks_every_language(name: str) -> None:
    kind = catalogue.CATALOGUE[name]
    assert kind.lasting and kind.clear_label is not None
    for texts in (kind.label, kind.clear_label, kind.summary):
        assert set(texts) == set(catalogue.LANGUAGES)
    for parameter in kind.parameters:
        assert set(parameter.description) == set(catalogue.LANGUAGES)
