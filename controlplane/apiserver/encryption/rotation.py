"""Key rotation: replace the key that encrypts a resource without making anything unreadable.

Upstream's procedure ("Encrypting Confidential Data at Rest", *Rotate a decryption key*):

1. **add** a new key to the provider, *after* the current one: every API server can now read values
   written with it, and none writes with it yet (``add_key``);
2. **promote** it to the first place: new writes use it (``promote_key``);
3. **rewrite** every object, so each is encrypted with the new key: upstream does
   ``kubectl get secrets -A -o json | kubectl replace -f -``, an update with no change that the store
   still writes because the stored value is *stale*; here also ``rewrite``, which does the same
   below the API for every stored value of the resource that is stale (read, decrypt, encrypt with the
   first key, write if nobody wrote in between);
4. **remove** the old key (``remove_key``), once no stored value uses it (``usage`` counts them).

Between steps, every API server must have the new configuration (a running Kubelab cluster reloads
its file by itself within a second; see ``clusterfile``).

The edits are pure functions from one configuration to the next, applied to a cluster's file by
``EncryptionConfigFile.update``; ``usage`` and ``rewrite`` are the thin I/O. ``manage.py encryption``
calls them, and so can an instructor's action.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from controlplane.api.resources import ResourceType
from controlplane.apiserver.encryption.clusterfile import generate_secret
from controlplane.apiserver.encryption.config import (
    EncryptionConfiguration,
    Key,
    Provider,
    ResourceConfiguration,
    ResourceTransformers,
    parse_group_resource,
)
from controlplane.apiserver.encryption.storage import UnreadableValue, open_value, seal
from controlplane.apiserver.encryption.transformer import Transformer
from controlplane.store import Compare, KeyValue, Put, Store, Txn

#: A stored value's prefix: ``k8s:enc:<provider>:v1:<key name>:``.
_ENCRYPTED = re.compile(rb"k8s:enc:([a-z0-9]+):v1:([^:]*):")
#: How ``usage`` labels values stored in plaintext.
PLAINTEXT = "identity"


class RotationError(Exception):
    """An edit of the encryption configuration that cannot be made; the message says why."""


class UnknownKey(RotationError):
    """No provider of the resource has a key of that name."""


class NoEncryptingProvider(RotationError):
    """The resource has no provider with keys (only identity): say which provider to add."""


class KeyStillWrites(RotationError):
    """The key encrypts new writes: promote another key first."""


# -- reading a configuration -------------------------------------------------------------------------


def entry_index(configuration: EncryptionConfiguration, resource: str = "secrets") -> int:
    """The index of the entry that configures ``resource`` (exactly, by ``*.group`` or ``*.*``)."""
    group, name = parse_group_resource(resource)
    for wanted in ((group, name), (group, "*"), ("*", "*")):
        for index, entry in enumerate(configuration.resources):
            if wanted in {parse_group_resource(r) for r in entry.resources}:
                return index
    raise RotationError(f"the encryption configuration does not list {resource}")


def writing_key(configuration: EncryptionConfiguration, resource: str = "secrets") -> str:
    """``<provider>:<key>`` that encrypts new writes of ``resource``, or ``identity``."""
    first = configuration.resources[entry_index(configuration, resource)].providers[0]
    return PLAINTEXT if first.kind == "identity" else f"{first.kind}:{first.keys[0].name}"


def key_label(value: bytes) -> str:
    """Which key wrote a stored value: ``aescbc:key1``, or ``identity`` for plaintext."""
    match = _ENCRYPTED.match(value)
    return f"{match[1].decode()}:{match[2].decode(errors='replace')}" if match else PLAINTEXT


# -- the edits ---------------------------------------------------------------------------------------


def _with_providers(
    configuration: EncryptionConfiguration, index: int, providers: list[Provider]
) -> EncryptionConfiguration:
    entries = list(configuration.resources)
    entries[index] = ResourceConfiguration(entries[index].resources, tuple(providers))
    return EncryptionConfiguration(tuple(entries))


def _new_name(configuration: EncryptionConfiguration) -> str:
    """``key<N+1>`` after the highest ``key<N>`` in use, so a name is not reused right after removal."""
    numbers = [
        int(k.name[3:])
        for e in configuration.resources
        for p in e.providers
        for k in p.keys
        if k.name.startswith("key") and k.name[3:].isdigit()
    ]
    return f"key{max(numbers, default=0) + 1}"


def add_key(
    configuration: EncryptionConfiguration,
    *,
    resource: str = "secrets",
    name: str | None = None,
    provider: str | None = None,
    secret: str | None = None,
) -> tuple[EncryptionConfiguration, Key]:
    """Step 1: a new key, last of its provider (read, not written); a new provider goes second."""
    index = entry_index(configuration, resource)
    providers = list(configuration.resources[index].providers)
    kind = provider or next((p.kind for p in providers if p.kind != "identity"), None)
    if kind is None:
        raise NoEncryptingProvider(
            f"{resource} are stored in plaintext: name the provider (aescbc, aesgcm, secretbox)"
        )
    if kind == "identity":
        raise RotationError("the identity provider has no keys")
    key = Key(name or _new_name(configuration), secret or generate_secret())
    if any(k.name == key.name for p in providers if p.kind == kind for k in p.keys):
        raise RotationError(f"{kind} already has a key named {key.name!r}")
    for i, existing in enumerate(providers):
        if existing.kind == kind:
            providers[i] = replace(existing, keys=(*existing.keys, key))
            break
    else:
        providers.insert(1, Provider(kind, (key,)))
    return _with_providers(configuration, index, providers), key


def promote_key(
    configuration: EncryptionConfiguration, name: str, *, resource: str = "secrets"
) -> EncryptionConfiguration:
    """Step 2: the key ``name`` first of its provider, and its provider first: it encrypts new writes."""
    index = entry_index(configuration, resource)
    providers = list(configuration.resources[index].providers)
    for i, p in enumerate(providers):
        key = next((k for k in p.keys if k.name == name), None)
        if key is not None:
            promoted = replace(p, keys=(key, *(k for k in p.keys if k.name != name)))
            return _with_providers(configuration, index, [promoted, *providers[:i], *providers[i + 1 :]])
    raise UnknownKey(f"no provider of {resource} has a key named {name!r}")


def newest_key(configuration: EncryptionConfiguration, *, resource: str = "secrets") -> str:
    """The key ``add_key`` added last to the first provider with keys (what ``rotate`` promotes)."""
    providers = configuration.resources[entry_index(configuration, resource)].providers
    with_keys = [p for p in providers if p.keys]
    if not with_keys:
        raise NoEncryptingProvider(f"{resource} have no encryption keys: add one first")
    first = with_keys[0]
    # Right after add-key the newest is last of the writing provider; a new provider is second.
    if providers[0].kind == "identity" or len(first.keys) > 1:
        return first.keys[-1].name if providers[0].kind != "identity" else first.keys[0].name
    return with_keys[1].keys[-1].name if len(with_keys) > 1 else first.keys[0].name


def remove_key(
    configuration: EncryptionConfiguration, name: str, *, resource: str = "secrets"
) -> EncryptionConfiguration:
    """Step 4: the key ``name`` gone (and its provider, if it was its last key). Never the writing key."""
    index = entry_index(configuration, resource)
    providers = list(configuration.resources[index].providers)
    first = providers[0]
    if first.keys and first.keys[0].name == name:
        raise KeyStillWrites(
            f"{first.kind} key {name!r} encrypts new writes of {resource}: promote another key first"
        )
    for i, p in enumerate(providers):
        if any(k.name == name for k in p.keys):
            keys = tuple(k for k in p.keys if k.name != name)
            if keys:
                providers[i] = replace(p, keys=keys)
            else:
                del providers[i]
            return _with_providers(configuration, index, providers)
    raise UnknownKey(f"no provider of {resource} has a key named {name!r}")


# -- the store ---------------------------------------------------------------------------------------


def count_labels(values: Iterable[KeyValue]) -> dict[str, int]:
    """How many of ``values`` each key wrote (``key_label``), most first."""
    return dict(collections.Counter(key_label(kv.value) for kv in values).most_common())


async def stored_values(store: Store, prefix: str) -> list[KeyValue]:
    """Every current value under ``prefix``, page by page."""
    values: list[KeyValue] = []
    start: str | None = None
    revision: int | None = None
    while True:
        page = await store.range(prefix, start=start, revision=revision, limit=500)
        revision = page.revision
        values += page.kvs
        if not page.more:
            return values
        start = page.kvs[-1].key + "\0"


@dataclass(slots=True)
class RewriteReport:
    """What ``rewrite`` did: values re-encrypted, already current, and those nobody can read."""

    rewritten: int = 0
    current: int = 0
    unreadable: list[str] = field(default_factory=list)


#: Attempts per value when another writer keeps winning.
REWRITE_ATTEMPTS = 5


async def rewrite(store: Store, prefix: str, transformer: Transformer) -> RewriteReport:
    """Step 3, below the API: re-encrypt every stale value under ``prefix`` with the first key.

    Each value is decrypted and encrypted again as it is (the same JSON, so the object does not
    change; its resourceVersion does, as after ``kubectl replace``), and written only if nobody
    wrote the key in between (compare on its mod revision); a lost race reads the key again.
    """
    report = RewriteReport()
    for kv in await stored_values(store, prefix):
        latest: KeyValue | None = kv
        for _ in range(REWRITE_ATTEMPTS):
            if latest is None:  # deleted meanwhile
                break
            if not transformer.stale(latest.value):
                report.current += 1
                break
            try:
                plaintext, _ = open_value(transformer, latest)
            except UnreadableValue:
                report.unreadable.append(latest.key)
                break
            sealed = seal(transformer, plaintext, latest.key)
            result = await store.txn(
                Txn(
                    compares=(Compare.unchanged(latest.key, latest.mod_revision),),
                    success=(Put(latest.key, sealed),),
                )
            )
            if result.succeeded:
                report.rewritten += 1
                break
            latest = await store.get(latest.key)
    return report


def encrypted_types(
    transformers: ResourceTransformers, types: Iterable[ResourceType]
) -> list[tuple[ResourceType, Transformer]]:
    """The stored resource types a configuration transforms, each with its transformer (one per prefix)."""
    chosen: dict[str, tuple[ResourceType, Transformer]] = {}
    for rtype in types:
        if rtype.storage_prefix is None or rtype.conversion is not None or rtype.storage_prefix in chosen:
            continue
        transformer = transformers.for_resource(rtype.group, rtype.plural)
        if transformer is not None:
            chosen[rtype.storage_prefix] = (rtype, transformer)
    return list(chosen.values())


async def rewrite_all(
    store: Store, transformers: ResourceTransformers, types: Iterable[ResourceType]
) -> dict[str, RewriteReport]:
    """``rewrite`` every resource the configuration transforms; the report per ``group_resource``."""
    return {
        rtype.group_resource: await rewrite(store, rtype.prefix(), transformer)
        for rtype, transformer in encrypted_types(transformers, types)
    }


__all__ = [
    "PLAINTEXT",
    "REWRITE_ATTEMPTS",
    "KeyStillWrites",
    "NoEncryptingProvider",
    "RewriteReport",
    "RotationError",
    "UnknownKey",
    "add_key",
    "count_labels",
    "encrypted_types",
    "entry_index",
    "key_label",
    "newest_key",
    "promote_key",
    "remove_key",
    "rewrite",
    "rewrite_all",
    "stored_values",
    "writing_key",
]
