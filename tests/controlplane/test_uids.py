"""UIDs: version 4 UUIDs cut from a pool of random bytes, never the same bytes twice."""

from __future__ import annotations

import os
import threading
import uuid

from controlplane import uids
from controlplane.uids import ALPHANUMS, POOL_BYTES, new_uid, random_string


def test_a_uid_is_a_random_version_4_uuid_as_uuid4_writes_it() -> None:
    for _ in range(3 * POOL_BYTES // 16):  # across several refills of the pool
        text = new_uid()
        parsed = uuid.UUID(text)
        assert parsed.version == 4, f"{text} is not a version 4 UUID"
        assert parsed.variant == uuid.RFC_4122, f"{text} lacks RFC 9562's variant bits"
        assert str(parsed) == text, f"{text} is not written as str(uuid4()) writes it"


def test_threads_never_cut_the_same_bytes() -> None:
    made: list[list[str]] = [[] for _ in range(4)]

    def make(out: list[str]) -> None:
        out.extend(new_uid() for _ in range(2000))

    threads = [threading.Thread(target=make, args=(out,)) for out in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [u for out in made for u in out]
    assert len(set(every)) == len(every), "two threads were given the same UUID"


def test_a_forked_child_draws_from_a_pool_of_its_own() -> None:
    new_uid()  # the parent's pool holds unused bytes now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send its next UUID and leave at once
        os.write(write, new_uid().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert uids._offset > 0
    assert child != new_uid(), "the child cut the parent's next UUID from the parent's pool"


def test_random_strings_use_upstreams_alphabet_and_vary() -> None:
    drawn = [random_string(5) for _ in range(200)]
    assert all(len(s) == 5 and set(s) <= set(ALPHANUMS) for s in drawn), drawn[:5]
    assert not set("aeiou013") & set(ALPHANUMS)
    assert len(set(drawn)) > 190, "random_string repeats itself"


def test_a_forked_child_draws_other_names_than_its_parent() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, random_string(20).encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert child != random_string(20), "the child draws the parent's next name"
