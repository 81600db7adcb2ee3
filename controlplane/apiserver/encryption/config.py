"""The EncryptionConfiguration: which resources are encrypted, by which providers, with which keys.

kube-apiserver reads it from the file named by ``--encryption-provider-config``; a Kubelab cluster
keeps its own (``clusterfile.py``). The format is upstream's (``apiserver.config.k8s.io/v1``, see
``k8s.io/apiserver/pkg/apis/apiserver/types_encryption.go``)::

    apiVersion: apiserver.config.k8s.io/v1
    kind: EncryptionConfiguration
    resources:
      - resources: [secrets]              # or configmaps, deployments.apps, '*.apps', '*.*'
        providers:
          - aescbc:                       # the first provider encrypts every write ...
              keys:
                - name: key2              # ... with its first key
                  secret: <base64 of 32 random bytes>
                - name: key1              # still read, never written
                  secret: <base64>
          - identity: {}                  # reads values written before encryption was on

This module parses and validates that document (``parse``, with upstream's checks and messages from
``apis/apiserver/validation/validation_encryption.go``; a document that fails them raises
``InvalidEncryptionConfiguration`` listing every problem), writes it back (``to_document``), and builds
the transformers (``build``, upstream ``server/options/encryptionconfig/config.go``): for each
resource, one ``PrefixTransformers`` of its providers, each provider one of its keys.

Which entry applies to a resource: its exact name, else ``*.<group>``, else ``*.*``; a resource
listed in several entries gets the providers of all of them, earliest first. Only the ``kms``
provider is not supported (it needs an external plugin).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from controlplane.apiserver.encryption.aescbc import CBCTransformer
from controlplane.apiserver.encryption.aesgcm import GCMTransformer
from controlplane.apiserver.encryption.identity import IdentityTransformer
from controlplane.apiserver.encryption.secretbox import SecretboxTransformer
from controlplane.apiserver.encryption.transformer import PrefixTransformer, PrefixTransformers, Transformer

API_VERSION = "apiserver.config.k8s.io/v1"
KIND = "EncryptionConfiguration"

#: The providers Kubelab implements, and the prefix of the values each writes.
PREFIXES: Mapping[str, bytes] = {
    "aescbc": b"k8s:enc:aescbc:v1:",
    "aesgcm": b"k8s:enc:aesgcm:v1:",
    "secretbox": b"k8s:enc:secretbox:v1:",
    "identity": b"",
}
PROVIDERS = tuple(PREFIXES)
#: Valid key lengths in bytes per provider (AES-128/192/256; secretbox's one size).
KEY_SIZES: Mapping[str, tuple[int, ...]] = {
    "aescbc": (16, 24, 32),
    "aesgcm": (16, 24, 32),
    "secretbox": (32,),
}
#: What upstream says when a value's key prefix names no key of the provider.
_NO_KEY = {
    "aescbc": "no matching key was found for the provided AES transformer",
    "aesgcm": "no matching key was found for the provided AES transformer",
    "secretbox": "no matching key was found for the provided Secretbox transformer",
}


class InvalidEncryptionConfiguration(ValueError):
    """A document that is not a valid EncryptionConfiguration; ``problems`` lists every reason."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("invalid EncryptionConfiguration: " + "; ".join(self.problems))


@dataclass(frozen=True, slots=True)
class Key:
    """A named key: ``secret`` is the key's bytes in standard base64, as the file holds it."""

    name: str
    secret: str

    def material(self) -> bytes:
        return base64.b64decode(self.secret, validate=True)


@dataclass(frozen=True, slots=True)
class Provider:
    """One provider element: its kind (``aescbc`` ...) and, except for identity, its keys."""

    kind: str
    keys: tuple[Key, ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceConfiguration:
    resources: tuple[str, ...]
    providers: tuple[Provider, ...]


@dataclass(frozen=True, slots=True)
class EncryptionConfiguration:
    resources: tuple[ResourceConfiguration, ...] = field(default_factory=tuple)


# -- parsing and validation ------------------------------------------------------------------------


def load(text: str | bytes) -> EncryptionConfiguration:
    """Parse and validate a YAML (or JSON) EncryptionConfiguration."""
    if not text.strip():
        raise InvalidEncryptionConfiguration(["the encryption provider configuration is empty"])
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise InvalidEncryptionConfiguration([f"cannot parse the document: {error}"]) from None
    return parse(document)


def parse(document: Any) -> EncryptionConfiguration:
    """A validated configuration from a decoded document; ``InvalidEncryptionConfiguration`` if not."""
    if not isinstance(document, Mapping):
        raise InvalidEncryptionConfiguration(["expected a mapping with apiVersion, kind and resources"])
    problems: list[str] = []
    if document.get("kind") != KIND or document.get("apiVersion") != API_VERSION:
        problems.append(
            f"expected apiVersion {API_VERSION} and kind {KIND}, "
            f"got {document.get('apiVersion')!r} {document.get('kind')!r}"
        )
    raw_resources = document.get("resources")
    if not isinstance(raw_resources, list) or not raw_resources:
        raise InvalidEncryptionConfiguration(
            [*problems, "resources: Required value: at least one resources is required"]
        )
    entries: list[ResourceConfiguration] = []
    for i, raw in enumerate(raw_resources):
        path = f"resources[{i}]"
        if not isinstance(raw, Mapping):
            problems.append(f"{path}: Invalid value: expected a mapping")
            continue
        names = raw.get("resources")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            problems.append(f"{path}.resources: Required value: at least one {path}.resources is required")
            names = []
        problems += _resource_problems(names, f"{path}.resources")
        raw_providers = raw.get("providers")
        if not isinstance(raw_providers, list) or not raw_providers:
            problems.append(f"{path}.providers: Required value: at least one {path}.providers is required")
            raw_providers = []
        providers = []
        for j, raw_provider in enumerate(raw_providers):
            provider = _provider(raw_provider, f"{path}.providers[{j}]", problems)
            if provider is not None:
                providers.append(provider)
        entries.append(ResourceConfiguration(tuple(names), tuple(providers)))
    config = EncryptionConfiguration(tuple(entries))
    if not problems:
        problems += _masking_problems(config)
    if problems:
        raise InvalidEncryptionConfiguration(problems)
    return config


def parse_group_resource(name: str) -> tuple[str, str]:
    """``(group, resource)`` of ``secrets``, ``deployments.apps``, ``*.apps``, ``*.`` or ``*.*``
    (apimachinery ``schema.ParseGroupResource``: the resource is everything before the first dot)."""
    resource, _, group = name.partition(".")
    return group, resource


def _resource_problems(names: Sequence[str], path: str) -> list[str]:
    problems: list[str] = []
    for k, name in enumerate(names):
        group, resource = parse_group_resource(name)
        where = f'{path}[{k}]: Invalid value: "{name}"'
        if name.lower() != name:
            problems.append(f"{where}: resource name should not contain capital letters")
        elif name == "*":
            problems.append(
                f"{where}: use '*.' to encrypt all the resources from core API group or *.* to encrypt "
                "all resources"
            )
        elif group == "events.k8s.io":
            problems.append(
                f"{where}: '*.events.k8s.io' objects are stored using the 'events' API group in etcd. "
                "Use 'events' instead in the config file"
            )
        elif group == "extensions":
            problems.append(f"{where}: 'extensions' group has been removed and cannot be used for encryption")
        elif group == "*" and resource != "*":
            problems.append(f"{where}: encrypting the same resource across groups is not supported")
    parsed = [parse_group_resource(name) for name in names]
    if len(set(parsed)) != len(parsed):
        problems.append(f"{path}: Invalid value: the same resource cannot be specified multiple times")
    overlap = any(
        i != j and (a == ("*", "*") or (a[0] == b[0] and a != b and "*" in (a[1], b[1])))
        for i, a in enumerate(parsed)
        for j, b in enumerate(parsed)
    )
    if overlap:
        problems.append(
            f"{path}: Invalid value: using overlapping resources such as 'secrets' and '*.' in the same "
            "resource list is not allowed as they will be masked"
        )
    return problems


def _provider(raw: Any, path: str, problems: list[str]) -> Provider | None:
    if not isinstance(raw, Mapping) or not raw:
        problems.append(
            f"{path}: Invalid value: provider does not contain any of the expected providers: KMS, AESGCM, "
            "AESCBC, Secretbox, Identity"
        )
        return None
    if len(raw) > 1:
        problems.append(
            f"{path}: Invalid value: more than one provider specified in a single element, should split "
            "into different list elements"
        )
        return None
    kind, body = next(iter(raw.items()))
    if kind == "kms":
        problems.append(
            f"{path}.kms: Unsupported value: Kubelab has no KMS plugins; use aescbc, aesgcm or secretbox"
        )
        return None
    if kind not in PREFIXES:
        problems.append(
            f"{path}: Invalid value: provider does not contain any of the expected providers: KMS, AESGCM, "
            "AESCBC, Secretbox, Identity"
        )
        return None
    if kind == "identity":
        return Provider("identity")
    raw_keys = body.get("keys") if isinstance(body, Mapping) else None
    keys_path = f"{path}.{kind}.keys"
    if not isinstance(raw_keys, list) or not raw_keys:
        problems.append(f"{keys_path}: Required value: at least one keys is required")
        return None
    keys: list[Key] = []
    for k, raw_key in enumerate(raw_keys):
        key_path = f"{keys_path}[{k}]"
        name = raw_key.get("name") if isinstance(raw_key, Mapping) else None
        secret = raw_key.get("secret") if isinstance(raw_key, Mapping) else None
        if not isinstance(name, str) or not name:
            problems.append(f"{key_path}.name: Required value: name is a mandatory field for a key")
        elif ":" in name:
            # The name ends at the first ':' of the stored prefix (k8s:enc:aescbc:v1:<name>:).
            problems.append(f"{key_path}.name: Invalid value: \"{name}\": a key name must not contain ':'")
        if not isinstance(secret, str) or not secret:
            problems.append(f"{key_path}.secret: Required value: secret is a mandatory field for a key")
            continue
        try:
            material = base64.b64decode(secret, validate=True)
        except (binascii.Error, ValueError):
            problems.append(f'{key_path}.secret: Invalid value: "REDACTED": secrets must be base64 encoded')
            continue
        sizes = KEY_SIZES[kind]
        if len(material) not in sizes:
            expected = "[" + " ".join(str(s) for s in sizes) + "]"
            problems.append(
                f'{key_path}.secret: Invalid value: "REDACTED": secret is not of the expected length, got '
                f"{len(material)}, expected one of {expected}"
            )
            continue
        if isinstance(name, str) and name:
            keys.append(Key(name, secret))
    names = [key.name for key in keys]
    if len(set(names)) != len(names):
        problems.append(f"{keys_path}: Invalid value: key names must be unique within a provider")
    return Provider(kind, tuple(keys))


def _masking_problems(config: EncryptionConfiguration) -> list[str]:
    """A resource after an earlier ``*.<group>`` or ``*.*`` entry would never be used (upstream refuses)."""
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    for entry in config.resources:
        for name in entry.resources:
            group, resource = parse_group_resource(name)
            for mask in ((group, "*"), ("*", "*")):
                if mask in seen and mask != (group, resource):
                    problems.append(f'resource "{name}" is masked by earlier rule "{mask[1]}.{mask[0]}"')
        seen.update(parse_group_resource(name) for name in entry.resources)
    return problems


# -- writing ---------------------------------------------------------------------------------------


def to_document(config: EncryptionConfiguration) -> dict[str, Any]:
    """The configuration as upstream's YAML document (keys in file order)."""

    def provider(p: Provider) -> dict[str, Any]:
        if p.kind == "identity":
            return {"identity": {}}
        return {p.kind: {"keys": [{"name": k.name, "secret": k.secret} for k in p.keys]}}

    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "resources": [
            {"resources": list(entry.resources), "providers": [provider(p) for p in entry.providers]}
            for entry in config.resources
        ],
    }


def dump(config: EncryptionConfiguration) -> str:
    return yaml.safe_dump(to_document(config), sort_keys=False)


# -- building the transformers ---------------------------------------------------------------------


def provider_transformer(provider: Provider) -> PrefixTransformer:
    """One provider as a prefixed transformer: its keys, each under ``<name>:``, below its prefix."""
    if provider.kind == "identity":
        return PrefixTransformer(b"", IdentityTransformer())
    factories: dict[str, Callable[[bytes], Transformer]] = {
        "aescbc": CBCTransformer,
        "aesgcm": GCMTransformer,
        "secretbox": SecretboxTransformer,
    }
    factory = factories[provider.kind]
    keys = [PrefixTransformer(key.name.encode() + b":", factory(key.material())) for key in provider.keys]
    return PrefixTransformer(
        PREFIXES[provider.kind], PrefixTransformers(keys, no_match=_NO_KEY[provider.kind])
    )


class ResourceTransformers:
    """The transformer of each resource, as a configuration says (None: stored as is)."""

    def __init__(self, by_resource: Mapping[tuple[str, str], Transformer]) -> None:
        self._by_resource = dict(by_resource)

    def for_resource(self, group: str, resource: str) -> Transformer | None:
        """The transformer for ``resource`` of ``group`` ("" for core): exact, ``*.group``, ``*.*``."""
        by = self._by_resource
        return by.get((group, resource)) or by.get((group, "*")) or by.get(("*", "*"))

    def __bool__(self) -> bool:
        return bool(self._by_resource)


def build(config: EncryptionConfiguration) -> ResourceTransformers:
    """The transformers of a validated configuration (upstream ``getTransformerOverrides...``)."""
    lists: dict[tuple[str, str], list[PrefixTransformer]] = {}
    for entry in config.resources:
        providers = [provider_transformer(p) for p in entry.providers]
        for name in entry.resources:
            lists.setdefault(parse_group_resource(name), []).extend(providers)
    return ResourceTransformers(
        {gr: PrefixTransformers(items, no_match="no matching prefix found") for gr, items in lists.items()}
    )


__all__ = [
    "API_VERSION",
    "KEY_SIZES",
    "KIND",
    "PREFIXES",
    "PROVIDERS",
    "EncryptionConfiguration",
    "InvalidEncryptionConfiguration",
    "Key",
    "Provider",
    "ResourceConfiguration",
    "ResourceTransformers",
    "build",
    "dump",
    "load",
    "parse",
    "parse_group_resource",
    "provider_transformer",
    "to_document",
]
