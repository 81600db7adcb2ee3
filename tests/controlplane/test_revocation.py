"""The revocation list: serials in, serials out, shared between processes through one file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controlplane.clusterfiles import RECHECK_SECONDS, Recheck
from controlplane.revocation import REVOCATION_FILE, RevocationList, format_serial, parse_serial


def test_a_revoked_serial_is_known_to_another_process_within_a_recheck(tmp_path: Path) -> None:
    server = RevocationList.load(tmp_path)  # the lab's copy
    clock = [0.0]
    server.recheck = Recheck(monotonic=lambda: clock[0])
    assert not server.is_revoked(0x3F2A)
    assert RevocationList.load(tmp_path).revoke(0x3F2A, "CN=alice")  # manage.py revokecert's
    clock[0] += RECHECK_SECONDS
    assert server.is_revoked(0x3F2A), "a revocation by another process was not seen after a recheck interval"
    assert not server.is_revoked(0x3F2B)
    (entry,) = server.entries()
    assert (entry.serial, entry.subject) == (0x3F2A, "CN=alice")
    assert json.loads((tmp_path / REVOCATION_FILE).read_text())["revoked"][0]["serial"] == "3F2A"


def test_revoking_twice_keeps_one_entry(tmp_path: Path) -> None:
    revocations = RevocationList.load(tmp_path)
    assert revocations.revoke(7) is True
    assert revocations.revoke(7) is False
    assert len(revocations.entries()) == 1


def test_an_unreadable_list_revokes_everything_until_it_is_fixed(tmp_path: Path) -> None:
    revocations = RevocationList.load(tmp_path)
    revocations.recheck = Recheck(0.0)  # look every time
    (tmp_path / REVOCATION_FILE).write_text("{not json")
    assert revocations.is_revoked(1) and revocations.is_revoked(2)
    (tmp_path / REVOCATION_FILE).write_text(json.dumps({"version": 1, "revoked": []}))
    assert not revocations.is_revoked(1)


@pytest.mark.parametrize("text", ["3F2A", "3f2a", "0x3f2a", "3F:2A", "serial=3F2A", " 3F2A\n"])
def test_serials_are_read_as_openssl_prints_them(text: str) -> None:
    assert parse_serial(text) == 0x3F2A


@pytest.mark.parametrize("text", ["", "xyz", "0x", "1" * 65])
def test_what_is_no_serial(text: str) -> None:
    with pytest.raises(ValueError, match="not a certificate serial number"):
        parse_serial(text)


def test_serials_are_written_with_an_even_number_of_digits() -> None:
    assert format_serial(0xABC) == "0ABC"
    assert format_serial(0x3F2A) == "3F2A"
