"""Revoked client certificates: the serial numbers a cluster no longer accepts, whatever their dates.

A client certificate is valid until its ``notAfter`` date: whoever holds it and its key *is* its user
until then, even after the laptop it was on was stolen. A bearer token can simply be forgotten by the
server (``controlplane.tokens``), but a certificate is not stored anywhere on the server: the API
server only checks that its CA signed it. To withdraw one before it expires, the server must keep a
list of the certificates it no longer believes, by **serial number** (unique per CA: every certificate
Kubelab issues gets 159 random bits). That is what a CRL (certificate revocation list) is.

Upstream Kubernetes has no such list: kube-apiserver cannot revoke a client certificate (a long-standing
request, kubernetes/kubernetes#18982); the advice is short-lived certificates, or a new CA (which
invalidates every certificate it signed). Kubelab adds the list so a lesson can show what revocation
means and costs: ``manage.py revokecert`` adds a serial, and the next request with that certificate is
refused with 401 Unauthorized, like an expired one.

The list lives in ``<cluster dir>/revoked-certificates.json``, shared between processes like the token
registry: writes take a lock, re-read the file and replace it atomically; ``is_revoked`` answers from
memory after one ``stat`` that tells whether another process changed the file since it was last read.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from controlplane.clusterfiles import FileSignature, Recheck, file_signature, read_json, utc_now
from controlplane.pki import locked, write_atomic

logger = logging.getLogger(__name__)

#: The list's file in a cluster's directory.
REVOCATION_FILE = "revoked-certificates.json"


def format_serial(serial: int) -> str:
    """A serial number as ``openssl x509 -serial`` prints it: upper-case hex, an even number of digits."""
    digits = f"{serial:X}"
    return digits.zfill(len(digits) + len(digits) % 2)


def parse_serial(text: str) -> int:
    """A serial number written in hex (``3F2A...``, ``0x3f2a``, ``3f:2a:...``); ``ValueError`` otherwise."""
    cleaned = text.strip().replace(":", "")
    if cleaned.lower().startswith("serial="):
        cleaned = cleaned[len("serial=") :]
    if cleaned.lower().startswith("0x"):
        cleaned = cleaned[2:]
    if not cleaned or len(cleaned) > 64:
        raise ValueError(f"{text!r} is not a certificate serial number (hex digits, as openssl prints it)")
    try:
        serial = int(cleaned, 16)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a certificate serial number (hex digits, as openssl prints it)"
        ) from None
    return serial


@dataclass(frozen=True, slots=True)
class Revocation:
    """One revoked certificate: its serial, whom it named (for people reading the file) and when."""

    serial: int
    subject: str
    revoked: str

    def to_json(self) -> dict[str, Any]:
        return {"serial": format_serial(self.serial), "subject": self.subject, "revoked": self.revoked}

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Revocation:
        serial = document.get("serial")
        subject, revoked = document.get("subject", ""), document.get("revoked", "")
        if not isinstance(serial, str):
            raise ValueError("serial must be a hex string")
        if not isinstance(subject, str) or not isinstance(revoked, str):
            raise ValueError("subject and revoked must be strings")
        return cls(parse_serial(serial), subject, revoked)


def parse_revocations_document(document: Any) -> list[Revocation]:
    """The entries of a ``revoked-certificates.json`` document; ``ValueError`` if it has the wrong shape."""
    if not isinstance(document, dict) or document.get("version") != 1:
        raise ValueError('expected {"version": 1, "revoked": [...]}')
    entries = document.get("revoked")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError("revoked must be a list of objects")
    return [Revocation.from_json(e) for e in entries]


class RevocationList:
    """One cluster's revoked client certificates, in ``<cluster dir>/revoked-certificates.json``."""

    def __init__(
        self, path: Path, *, now: Callable[[], dt.datetime] = utc_now, recheck: Recheck | None = None
    ) -> None:
        self.path = path
        self._now = now
        self._by_serial: Mapping[int, Revocation] = MappingProxyType({})
        self._signature: FileSignature = None
        #: When to look at the file for certificates revoked by another process (``clusterfiles``).
        self.recheck = recheck if recheck is not None else Recheck()
        #: The file could not be read at its current version: every certificate counts as revoked.
        self._unreadable = False

    def __repr__(self) -> str:
        return f"<RevocationList {self.path} revoked={len(self._by_serial)}>"

    @classmethod
    def load(cls, cluster_dir: Path, *, now: Callable[[], dt.datetime] = utc_now) -> RevocationList:
        """The list of the cluster in ``cluster_dir`` (empty if nothing was revoked yet)."""
        revocations = cls(cluster_dir / REVOCATION_FILE, now=now)
        revocations._reload()
        return revocations

    def _read(self) -> tuple[list[Revocation], FileSignature]:
        document, signature = read_json(self.path, "the revocation list")
        if signature is None:  # no file yet
            return [], None
        try:
            return parse_revocations_document(document), signature
        except ValueError as error:
            raise RuntimeError(f"cannot read the revocation list {self.path}: {error}") from error

    def _reload(self) -> None:
        entries, signature = self._read()
        self._by_serial = MappingProxyType({entry.serial: entry for entry in entries})
        self._signature = signature
        self._unreadable = False

    def entries(self) -> list[Revocation]:
        """Every revoked certificate, oldest revocation first."""
        return sorted(self._by_serial.values(), key=lambda e: e.revoked)

    def is_revoked(self, serial: int) -> bool:
        """Whether the certificate with ``serial`` was revoked (by this process or another one).

        A list that cannot be read revokes *everything*: failing closed, since the alternative is to
        accept certificates that someone took the trouble to revoke.
        """
        if self.recheck.due() and file_signature(self.path) != self._signature:
            try:
                self._reload()
            except RuntimeError:
                logger.exception(
                    "the revocation list %s is unreadable: no certificate is accepted", self.path
                )
                self._unreadable = True
                self._signature = file_signature(self.path)  # said once, until the file changes again
        return self._unreadable or serial in self._by_serial

    def revoke(self, serial: int, subject: str = "") -> bool:
        """Add ``serial`` to the list; False if it was already there."""
        with locked(self.path.parent, f".{REVOCATION_FILE}.lock"):
            entries, _ = self._read()
            if any(e.serial == serial for e in entries):
                return False
            revoked = self._now().astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            entries.append(Revocation(serial, subject, revoked))
            self._write(entries)
        return True

    def _write(self, entries: Iterable[Revocation]) -> None:
        listed = list(entries)
        document = {"version": 1, "revoked": [e.to_json() for e in listed]}
        write_atomic(self.path, json.dumps(document, indent=2).encode() + b"\n", mode=0o644)
        self._by_serial = MappingProxyType({e.serial: e for e in listed})
        self._signature = file_signature(self.path)
        self._unreadable = False
