"""The etcd panel: a cluster's store as etcd holds it, key by key, for the topology page.

kube-apiserver keeps every object under a key, ``/registry/<resource>/<namespace>/<name>``, in an
MVCC store (controlplane/store): one revision counter for the whole cluster, bumped by every write;
for each key its ``create_revision`` (the write that made it), ``mod_revision`` (the last write to
it) and ``version`` (how many times it was written since it was made). History is kept back to the
*compaction mark*; a read at an older revision fails (the API server's 410 Gone).

The panel shows exactly that, read from the running lab's store (``courses.gateway.read_range`` and
``read_keys``), never from the trace: the keys with their three numbers, the current revision and the
compaction mark, and one key's stored bytes on request: JSON as JSON; an encrypted value
(``k8s:enc:aescbc:v1:key1:`` followed by IV and ciphertext, controlplane/apiserver/encryption) as its
prefix and the first bytes of the ciphertext in hex and base64, which is what ``etcdctl get`` would
show a student. A Secret's plaintext is never shown: a Secret stored without encryption (the
``identity`` provider) shows its size only.

These reads are the lab's own look into the store, like ``etcdctl``, not the API server's: they use
``Store.inspect``, which is neither traced nor measured, so the diagram does not draw a read the API
server never made (and a read prompted by a ``store.txn`` event cannot make another one). The same
reads rewind the topology diagram (``courses.gateway.read_diagram``: the Nodes and Pods stored at a
revision, decoded to the few fields the diagram draws), so the page can show the cluster as it was at
that revision rather than guess it from the trace.

Everything here is pure: what the panel may show of what a read found. The reads are
``courses.lab.selectors``'; the view (``courses.lab.views.etcd_keys``) is a thin adapter that checks
access (``courses.classrooms.access``, the trace socket's rule).
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controlplane.trace.redaction import is_secret_key

if TYPE_CHECKING:
    from courses.gateway import KeyValue, StoreRead

#: The most keys one list answers with (a classroom cluster holds a few hundred).
MAX_KEYS = 5000
#: The most keys one refresh asks for (the page batches the keys of the writes it saw).
MAX_REFRESH_KEYS = 200
#: How many bytes of ciphertext (after the prefix) the panel shows, in hex and in base64.
CIPHERTEXT_PREVIEW = 48
#: The largest JSON value shown whole; a bigger one is cut (a classroom object is a few KiB).
MAX_JSON_BYTES = 256 * 1024

#: ``k8s:enc:<provider>:v1:<key name>:``, the prefix of a value encrypted at rest.
_ENCRYPTED = re.compile(rb"^k8s:enc:([a-z0-9]+):v1:([^:]*):")


def describe_value(key: str, value: bytes, *, with_json: bool) -> dict[str, Any]:
    """What the panel may show of a stored value: never a Secret's plaintext.

    ``{"form": "ciphertext", "prefix": "k8s:enc:aescbc:v1:key1:", "provider": "aescbc", "key_name":
    "key1", "bytes": 318, "hex": "...", "base64": "...", "truncated": true}`` for an encrypted value;
    ``{"form": "hidden", ...}`` for an unencrypted Secret; ``{"form": "json", "json": ...}`` (the object
    only when ``with_json``) or ``{"form": "bytes", "hex": ...}`` for anything else.
    """
    size = len(value)
    encrypted = _ENCRYPTED.match(value)
    if encrypted:
        prefix = encrypted.group(0)
        body = value[len(prefix) :]
        shown = body[:CIPHERTEXT_PREVIEW]
        return {
            "form": "ciphertext",
            "bytes": size,
            "prefix": prefix.decode("ascii"),
            "provider": encrypted.group(1).decode("ascii"),
            "key_name": encrypted.group(2).decode("ascii", "replace"),
            "hex": shown.hex(),
            "base64": base64.b64encode(shown).decode("ascii"),
            "truncated": len(body) > len(shown),
        }
    if is_secret_key(key):
        return {
            "form": "hidden",
            "bytes": size,
            "why": "a Secret stored without encryption (identity provider): the panel never shows its data",
        }
    preview = {"form": "bytes", "bytes": size, "hex": value[:CIPHERTEXT_PREVIEW].hex()}
    if value[:1] not in (b"{", b"["):
        return {**preview, "truncated": size > CIPHERTEXT_PREVIEW}
    if not with_json:
        return {"form": "json", "bytes": size}
    if size > MAX_JSON_BYTES:
        return {
            "form": "json",
            "bytes": size,
            "truncated": True,
            "text": value[:MAX_JSON_BYTES].decode("utf-8", "replace"),
        }
    try:
        return {"form": "json", "bytes": size, "json": json.loads(value)}
    except ValueError:
        return {**preview, "truncated": size > CIPHERTEXT_PREVIEW}


def key_row(kv: KeyValue, *, with_value: bool) -> dict[str, Any]:
    """One key as the panel lists it: its revisions, version, lease and what its value is."""
    row: dict[str, Any] = {
        "key": kv.key,
        "create_revision": kv.create_revision,
        "mod_revision": kv.mod_revision,
        "version": kv.version,
        "lease": kv.lease,
    }
    row["value"] = describe_value(kv.key, kv.value, with_json=with_value)
    return row


@dataclass(frozen=True, slots=True)
class StoreSnapshot:
    """What one read of the store says, as the view answers it."""

    revision: int
    current_revision: int
    compacted: int
    keys: list[dict[str, Any]]
    more: bool = False
    count: int = 0
    absent: tuple[str, ...] = ()

    def as_json(self, cluster: str) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "cluster": cluster,
            "revision": self.revision,
            "current_revision": self.current_revision,
            "compacted": self.compacted,
            "keys": self.keys,
            "more": self.more,
            "count": self.count,
        }
        if self.absent:
            answer["absent"] = list(self.absent)
        return answer


def snapshot_of(read: StoreRead, *, with_values: bool) -> StoreSnapshot:
    """What the panel shows of a read of the store: each key as ``key_row`` lists it."""
    keys = [key_row(kv, with_value=with_values) for kv in read.kvs]
    return StoreSnapshot(
        read.revision,
        read.current_revision,
        read.compacted,
        keys,
        more=read.more,
        count=read.count,
        absent=read.absent,
    )
