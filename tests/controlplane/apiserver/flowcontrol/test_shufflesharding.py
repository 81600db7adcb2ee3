"""Shuffle sharding: upstream's deal (mixed radix, skipping dealt cards) and its limits."""

from __future__ import annotations

import itertools

import pytest

from controlplane.apiserver.flowcontrol.shufflesharding import Dealer, InvalidDeal, hash_flow


def test_a_deal_reads_the_hash_in_mixed_radix_and_skips_the_cards_already_dealt() -> None:
    # hash = 5 + 8 * (3 + 7 * 4): digits 5 (of 8), 3 (of 7), 4 (of 6).
    # Card 1 is 5; card 2 is the 3rd of the 7 left (3); card 3 is the 4th of the 6 left: 0 1 2 4 [6] 7.
    assert Dealer(8, 3).deal(5 + 8 * (3 + 7 * 4)) == [5, 3, 6]


def test_every_hash_below_the_deck_permutations_deals_a_different_full_hand() -> None:
    dealer = Dealer(6, 6)
    hands = {tuple(dealer.deal(h)) for h in range(720)}
    assert hands == set(itertools.permutations(range(6)))


def test_hands_are_distinct_cards_of_the_deck() -> None:
    dealer = Dealer(128, 6)
    for flow in ("alice", "bob", "system:node:node-1", ""):
        hand = dealer.deal(hash_flow("global-default", flow))
        assert len(hand) == len(set(hand)) == 6
        assert all(0 <= card < 128 for card in hand)


def test_a_flow_always_gets_the_same_hand_and_other_flows_other_hands() -> None:
    dealer = Dealer(128, 6)
    alice = dealer.deal(hash_flow("global-default", "alice"))
    assert dealer.deal(hash_flow("global-default", "alice")) == alice
    assert dealer.deal(hash_flow("global-default", "bob")) != alice
    assert dealer.deal(hash_flow("service-accounts", "alice")) != alice


def test_the_flow_hash_separates_schema_and_distinguisher() -> None:
    assert hash_flow("ab", "c") != hash_flow("a", "bc")
    assert 0 <= hash_flow("a", "b") < 2**64


@pytest.mark.parametrize(
    ("deck", "hand", "problem"),
    [
        (0, 1, "not positive"),
        (4, 0, "not positive"),
        (4, 5, "greater than deckSize"),
        (1 << 27, 1, "impractically"),
        (1 << 20, 4, "entropy"),
    ],
)
def test_impossible_deals_are_refused(deck: int, hand: int, problem: str) -> None:
    with pytest.raises(InvalidDeal, match=problem):
        Dealer(deck, hand)


def test_a_remembered_hand_is_the_dealt_one() -> None:
    dealer = Dealer(64, 8)
    for flow in (0, 1, 12345, 2**64 - 1, hash_flow("workload-low", "ns")):
        assert dealer.hand(flow) == tuple(dealer.deal(flow))
        assert dealer.hand(flow) is dealer.hand(flow)
