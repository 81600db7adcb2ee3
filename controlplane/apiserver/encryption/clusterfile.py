"""A cluster's encryption configuration file: ``<cluster dir>/encryption-config.yaml``.

kube-apiserver reads its EncryptionConfiguration from ``--encryption-provider-config``; each Kubelab
cluster keeps one in its directory, **mode 0600** (it holds the keys), made on the cluster's first
start. The default (``default_configuration``) encrypts Secrets with the provider the lab's
``KUBELAB_ENCRYPTION_PROVIDER`` names (``aescbc`` unless set) under a key ``key1`` of 32 random bytes,
and keeps ``identity`` second so that Secrets written before (by an older Kubelab) stay readable::

    resources:
      - resources: [secrets]
        providers:
          - aescbc: {keys: [{name: key1, secret: <base64>}]}
          - identity: {}

So a new lab shows ciphertext in its store at once (the course's "encryption at rest" chapter reads
it there); ``identity`` as the provider makes a cluster that stores Secrets in plaintext, to show the
"before". An existing file is never replaced: it is the cluster's configuration, edited by hand or by
``manage.py encryption``.

**Reload.** The running API server picks up a changed file by itself, as kube-apiserver does with
``--encryption-provider-config-automatic-reload``: the cluster polls the file's signature (inode,
mtime, size; one ``stat`` a second) and, when it changed, parses it and swaps the transformers in. A
file that does not parse is logged and ignored: the previous configuration stays in force, as
upstream keeps its last good one. Edits made here take a lock, re-read the file and replace it
atomically, so the running lab never sees half a file.

Losing the file loses every key: Secrets written with them cannot be read again. Back it up with the
cluster's ``pki/`` directory.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from pathlib import Path

from controlplane.apiserver.encryption import config
from controlplane.apiserver.encryption.config import (
    EncryptionConfiguration,
    Key,
    Provider,
    ResourceConfiguration,
)
from controlplane.pki import locked, write_atomic

#: The file in a cluster's directory.
CONFIG_FILE = "encryption-config.yaml"
#: The provider of a new cluster unless the lab says otherwise (``KUBELAB_ENCRYPTION_PROVIDER``).
DEFAULT_PROVIDER = "aescbc"
#: The providers a new cluster may start with: one that encrypts, or identity for plaintext.
DEFAULT_PROVIDERS = ("aescbc", "aesgcm", "secretbox", "identity")
#: Bytes of every generated key: AES-256, and secretbox's only size.
KEY_BYTES = 32

Signature = tuple[int, int, int]


def generate_secret() -> str:
    """A new key's ``secret``: 32 random bytes in base64 (``head -c 32 /dev/urandom | base64``)."""
    return base64.b64encode(os.urandom(KEY_BYTES)).decode()


def default_configuration(provider: str = DEFAULT_PROVIDER) -> EncryptionConfiguration:
    """A new cluster's configuration: Secrets by ``provider`` with a new ``key1``, then identity."""
    if provider not in DEFAULT_PROVIDERS:
        raise ValueError(
            f"unknown encryption provider {provider!r}: use one of {', '.join(DEFAULT_PROVIDERS)}"
        )
    providers = [Provider("identity")]
    if provider != "identity":
        providers.insert(0, Provider(provider, (Key("key1", generate_secret()),)))
    return EncryptionConfiguration((ResourceConfiguration(("secrets",), tuple(providers)),))


def _signature(path: Path) -> Signature | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


class EncryptionConfigFile:
    """A cluster's configuration file: read, create, edit, and notice changes made by others."""

    def __init__(self, cluster_dir: Path) -> None:
        self.cluster_dir = cluster_dir
        self.path = cluster_dir / CONFIG_FILE
        self._signature: Signature | None = None

    def __repr__(self) -> str:
        return f"<EncryptionConfigFile {self.path}>"

    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> EncryptionConfiguration:
        """The configuration in the file now (``InvalidEncryptionConfiguration``, ``OSError``)."""
        # Remembered first: a file that fails to load is reported once, not at every poll.
        self._signature = _signature(self.path)
        return config.load(self.path.read_bytes())

    def load_or_create(self, provider: str = DEFAULT_PROVIDER) -> EncryptionConfiguration:
        """The file's configuration; on first use, the default for ``provider`` written first."""
        if not self.path.exists():
            with locked(self.cluster_dir, ".encryption.lock"):
                if not self.path.exists():
                    self._write(default_configuration(provider))
        return self.read()

    def changed(self) -> bool:
        """Whether the file changed since it was last read here (one ``stat``)."""
        return _signature(self.path) != self._signature

    def update(
        self, edit: Callable[[EncryptionConfiguration], EncryptionConfiguration]
    ) -> EncryptionConfiguration:
        """Apply ``edit`` to the current file under the lock and write the result atomically."""
        with locked(self.cluster_dir, ".encryption.lock"):
            edited = edit(config.load(self.path.read_bytes()))
            config.parse(config.to_document(edited))  # never write what would not load
            self._write(edited)
        return edited

    def _write(self, configuration: EncryptionConfiguration) -> None:
        self.cluster_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        header = (
            "# Encryption at rest of this cluster (see controlplane/apiserver/encryption). Keep it secret.\n"
        )
        write_atomic(self.path, (header + config.dump(configuration)).encode(), mode=0o600)


__all__ = [
    "CONFIG_FILE",
    "DEFAULT_PROVIDER",
    "DEFAULT_PROVIDERS",
    "KEY_BYTES",
    "EncryptionConfigFile",
    "default_configuration",
    "generate_secret",
]
