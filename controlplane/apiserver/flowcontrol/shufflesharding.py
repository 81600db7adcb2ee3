"""Shuffle sharding: dealing each flow a small hand of queues out of many.

A priority level has, say, 128 queues. Putting each flow in one queue chosen by hashing it would let
a heavy flow ruin the queue of every flow that hashes to the same one. Shuffle sharding instead deals
each flow a *hand* of ``handSize`` distinct queues (6 of 128), derived from the flow's hash; the
request goes to the shortest queue of its hand. Two flows collide completely only if their hands are
the same (1 in C(128, 6), about 1 in 5 billion), so a heavy flow fills its own six queues and a light
flow almost always finds one of its six empty.

The deal is upstream's (``k8s.io/apiserver/pkg/util/shufflesharding/shufflesharding.go``): the hash
is read as a number in mixed radix (deckSize, deckSize-1, ...), each digit picking one of the cards
not yet dealt. The flow's hash is the first 8 bytes, little-endian, of SHA-256 over the FlowSchema's
name, a zero byte and the flow distinguisher (``apf_controller.go``, ``hashFlowID``).
"""

from __future__ import annotations

import hashlib
import math

#: The most hash bits a deal may need (upstream's ``MaxHashBits``).
MAX_HASH_BITS = 60
#: Hands a dealer remembers at most (one per flow: a flow is a FlowSchema and a user or namespace).
HAND_CACHE_SIZE = 4096


class InvalidDeal(ValueError):
    """A deck and hand size that cannot be dealt (upstream's ``NewDealer`` errors)."""


def required_entropy_bits(deck_size: int, hand_size: int) -> int:
    """Bits of hash a deal of ``hand_size`` cards from ``deck_size`` uses."""
    return math.ceil(math.log2(deck_size) * hand_size)


class Dealer:
    """Deals hands of ``hand_size`` distinct cards (queue indexes) out of ``deck_size``."""

    __slots__ = ("_hands", "deck_size", "hand_size")

    def __init__(self, deck_size: int, hand_size: int) -> None:
        if deck_size <= 0 or hand_size <= 0:
            raise InvalidDeal(f"deckSize {deck_size} or handSize {hand_size} is not positive")
        if hand_size > deck_size:
            raise InvalidDeal(f"handSize {hand_size} is greater than deckSize {deck_size}")
        if deck_size > 1 << 26:
            raise InvalidDeal(f"deckSize {deck_size} is impractically large")
        if required_entropy_bits(deck_size, hand_size) > MAX_HASH_BITS:
            raise InvalidDeal(
                f"required entropy bits of deckSize {deck_size} and handSize {hand_size} "
                f"is greater than {MAX_HASH_BITS}"
            )
        self.deck_size = deck_size
        self.hand_size = hand_size
        #: Hands already dealt, by hash: a server sees the same few flows again and again.
        self._hands: dict[int, tuple[int, ...]] = {}

    def hand(self, hash_value: int) -> tuple[int, ...]:
        """``deal(hash_value)``, remembered (at most ``HAND_CACHE_SIZE`` hands, then dealt afresh)."""
        hand = self._hands.get(hash_value)
        if hand is None:
            if len(self._hands) >= HAND_CACHE_SIZE:
                self._hands.clear()
            hand = self._hands[hash_value] = tuple(self.deal(hash_value))
        return hand

    def deal(self, hash_value: int) -> list[int]:
        """The hand for ``hash_value`` (a 64-bit unsigned integer), in dealing order."""
        remainders: list[int] = []
        for i in range(self.hand_size):
            hash_value, remainder = divmod(hash_value, self.deck_size - i)
            remainders.append(remainder)
        hand: list[int] = []
        for i, card in enumerate(remainders):
            # Skip over the cards already dealt: the i-th digit indexes the cards still in the deck.
            for j in range(i, 0, -1):
                if card >= remainders[j - 1]:
                    card += 1
            hand.append(card)
        return hand


def hash_flow(flow_schema: str, distinguisher: str) -> int:
    """Upstream's ``hashFlowID``: 64 bits of SHA-256 over the FlowSchema name, NUL, the distinguisher."""
    digest = hashlib.sha256(flow_schema.encode() + b"\x00" + distinguisher.encode()).digest()
    return int.from_bytes(digest[:8], "little")
