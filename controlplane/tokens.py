"""Bearer tokens for people: the credential in a kubeconfig's ``token:`` field.

A **bearer token** is a random string; whoever *bears* it is the user it was issued to, so it is sent
only over TLS (kubectl refuses to send one to an ``http://`` server). kubectl puts it in every
request's ``Authorization: Bearer <token>`` header, and the API server's authentication stage looks it
up and finds the user info (name, uid, groups) it stands for. Upstream's simplest form of this is
kube-apiserver's static token file (``--token-auth-file``: ``token,user,uid,"group1,group2"``).

Kubelab keeps one registry per cluster, in ``<cluster dir>/tokens.json`` (mode 0600), and, unlike the
static token file, stores **only the SHA-256 hash** of each token, as a careful password database
does: a copy of the file does not let anyone in, and the token itself exists only in the kubeconfig
that ``manage.py kubeconfig`` printed. The consequence: a lost token cannot be shown again, only
replaced. Every ``kubeconfig`` run therefore issues a new token (the older ones keep working until
revoked with ``revoke``).

The file is shared between processes: ``manage.py kubeconfig`` adds a token while ``runlab`` serves.
Writes take a lock, re-read the file and replace it atomically; ``authenticate`` answers from memory
after checking (one ``stat``) whether the file changed since it was last read, so a token issued or
revoked by another process counts at once.

The registry adds no groups of its own: the API server's authentication stage adds
``system:authenticated`` to every user it authenticates, as kube-apiserver does.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from controlplane.clusterfiles import FileSignature, Recheck, file_signature, read_json, utc_now
from controlplane.identity import UserInfo
from controlplane.pki import locked, write_atomic
from controlplane.uids import new_uid

logger = logging.getLogger(__name__)

#: The registry's file in a cluster's directory.
TOKENS_FILE = "tokens.json"
#: Random bytes per token (43 URL-safe characters).
TOKEN_BYTES = 32
#: Longer "tokens" are refused without hashing them.
MAX_TOKEN_LENGTH = 4096


def token_hash(token: str) -> str:
    """What the registry stores for ``token``: its SHA-256, in hex."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class TokenEntry:
    """One issued token, as stored: its hash, the user it stands for, and when it was issued."""

    sha256: str
    user: UserInfo
    issued: str

    def to_json(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "user": self.user.to_json(), "issued": self.issued}

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> TokenEntry:
        digest, user, issued = document.get("sha256"), document.get("user"), document.get("issued", "")
        if not isinstance(digest, str) or len(digest) != 64:
            raise ValueError("sha256 must be 64 hex digits")
        if not isinstance(user, dict):
            raise ValueError("user must be a userInfo object")
        if not isinstance(issued, str):
            raise ValueError("issued must be a timestamp string")
        return cls(digest.lower(), UserInfo.from_json(user), issued)


def parse_tokens_document(document: Any) -> list[TokenEntry]:
    """The entries of a ``tokens.json`` document; ``ValueError`` if it has the wrong shape."""
    if not isinstance(document, dict) or document.get("version") != 1:
        raise ValueError('expected {"version": 1, "tokens": [...]}')
    tokens = document.get("tokens")
    if not isinstance(tokens, list):
        raise ValueError("tokens must be a list")
    if not all(isinstance(t, dict) for t in tokens):
        raise ValueError("each token must be an object")
    return [TokenEntry.from_json(t) for t in tokens]


def tokens_document(entries: Iterable[TokenEntry]) -> dict[str, Any]:
    return {"version": 1, "tokens": [entry.to_json() for entry in entries]}


class TokenRegistry:
    """The bearer tokens of one cluster (only their hashes), backed by ``<cluster dir>/tokens.json``."""

    def __init__(
        self, path: Path, *, now: Callable[[], dt.datetime] = utc_now, recheck: Recheck | None = None
    ) -> None:
        self.path = path
        self._now = now
        self._by_hash: Mapping[str, TokenEntry] = MappingProxyType({})
        self._signature: FileSignature = None
        #: When to look at the file for tokens issued or revoked by another process (``clusterfiles``).
        self.recheck = recheck if recheck is not None else Recheck()

    def __repr__(self) -> str:
        return f"<TokenRegistry {self.path} tokens={len(self._by_hash)}>"

    @classmethod
    def load(cls, cluster_dir: Path, *, now: Callable[[], dt.datetime] = utc_now) -> TokenRegistry:
        """The registry of the cluster in ``cluster_dir`` (empty if no token was issued yet)."""
        registry = cls(cluster_dir / TOKENS_FILE, now=now)
        registry._reload()
        return registry

    def _read(self) -> tuple[list[TokenEntry], FileSignature]:
        document, signature = read_json(self.path, "the token registry")
        if signature is None:  # no file yet
            return [], None
        try:
            return parse_tokens_document(document), signature
        except ValueError as error:
            raise RuntimeError(f"cannot read the token registry {self.path}: {error}") from error

    def _reload(self) -> None:
        entries, signature = self._read()
        self._by_hash = MappingProxyType({entry.sha256: entry for entry in entries})
        self._signature = signature

    # -- reading ---------------------------------------------------------------------------------------

    def entries(self) -> list[TokenEntry]:
        """Every issued token (hashes only), oldest first."""
        return sorted(self._by_hash.values(), key=lambda e: e.issued)

    def __len__(self) -> int:
        return len(self._by_hash)

    def authenticate(self, token: str) -> UserInfo | None:
        """The user ``token`` was issued to, or None if it is not a token of this cluster."""
        if not token or len(token) > MAX_TOKEN_LENGTH:
            return None
        digest = token_hash(token)
        looked = self.recheck.due()
        if looked:
            self._refresh()
        entry = self._by_hash.get(digest)
        if entry is None and not looked:
            self.recheck.due(anyway=True)  # the interval starts again from this look
            self._refresh()  # unknown: perhaps issued a moment ago (manage.py kubeconfig)
            entry = self._by_hash.get(digest)
        if entry is None or not hmac.compare_digest(entry.sha256, digest):
            return None
        return entry.user

    def _refresh(self) -> None:
        """Read the file again if another process changed it (issued or revoked tokens)."""
        if file_signature(self.path) != self._signature:
            try:
                self._reload()
            except RuntimeError:
                logger.exception("the token registry %s cannot be read: no token is accepted", self.path)
                self._by_hash = MappingProxyType({})
                self._signature = file_signature(self.path)  # said once, until the file changes again

    # -- writing ---------------------------------------------------------------------------------------

    def issue(self, user: str, groups: Iterable[str] = (), uid: str | None = None) -> str:
        """A new token for ``user`` in ``groups``: returned once, only its hash is kept.

        ``uid`` defaults to the uid of the user's earlier tokens, or a new UUID for a new user.
        """
        if not user:
            raise ValueError("a token needs a user name")
        token = secrets.token_urlsafe(TOKEN_BYTES)
        with locked(self.path.parent, f".{TOKENS_FILE}.lock"):
            entries, _ = self._read()
            if uid is None:
                uid = next((e.user.uid for e in entries if e.user.username == user and e.user.uid), None)
            info = UserInfo.create(user, uid=uid or new_uid(), groups=groups)
            issued = self._now().astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            entries.append(TokenEntry(token_hash(token), info, issued))
            self._write(entries)
        return token

    def revoke(self, user: str) -> int:
        """Forget every token of ``user``; how many there were."""
        with locked(self.path.parent, f".{TOKENS_FILE}.lock"):
            entries, _ = self._read()
            kept = [e for e in entries if e.user.username != user]
            if len(kept) != len(entries):
                self._write(kept)
        return len(entries) - len(kept)

    def _write(self, entries: list[TokenEntry]) -> None:
        data = json.dumps(tokens_document(entries), indent=2).encode() + b"\n"
        write_atomic(self.path, data, mode=0o600)
        self._by_hash = MappingProxyType({entry.sha256: entry for entry in entries})
        self._signature = file_signature(self.path)
