"""``manage.py encryption``: a cluster's encryption at rest, and upstream's key rotation, step by step.

Each cluster's EncryptionConfiguration is ``<cluster dir>/encryption-config.yaml``
(``controlplane.apiserver.encryption``). This command shows it and edits it; a running lab reloads the
file by itself within a second, so every step works on a running lab too::

    manage.py encryption --cluster demo status        # providers, keys, which key wrote how many values
    manage.py encryption --cluster demo add-key       # 1. a new key, read but not yet written
    manage.py encryption --cluster demo promote --key key2   # 2. it encrypts new writes
    manage.py encryption --cluster demo rewrite       # 3. every Secret re-encrypted with it
    manage.py encryption --cluster demo remove-key --key key1  # 4. refused while values still use it
    manage.py encryption --cluster demo rotate        # 1 to 4 in one go

**rewrite** works the way the lab allows. While a lab serves the cluster (``runlab``), it goes
through the API server, as upstream's ``kubectl get secrets -A -o json | kubectl replace -f -``:
each object is sent back unchanged with a temporary ``system:masters`` token (revoked at the end), and
the API server writes it again because its stored value is stale (it shows on the trace). Without a
running lab it rewrites the store directly (``rotation.rewrite``). **status** and **remove-key** read
the raw values: from the store file read-only while a SQLite lab runs, else from the store.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from typing import Any

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from controlplane.api.kinds import builtin_types
from controlplane.api.resources import ResourceType
from controlplane.apiserver.encryption import config, rotation
from controlplane.apiserver.encryption.clusterfile import EncryptionConfigFile
from controlplane.identity import SYSTEM_MASTERS
from controlplane.management import labcommand
from controlplane.management.commands.runlab import parse_address
from controlplane.pki import ServingPKI
from controlplane.runtime import (
    cluster_dir,
    is_served,
    is_sqlite,
)
from controlplane.store import KeyValue
from controlplane.store.factory import open_store, store_path
from controlplane.store.sqlite import read_latest
from controlplane.tokens import TokenRegistry

#: The user of the temporary token ``rewrite`` uses against a running lab.
REWRITE_USER = "system:kubelab:encryption-rewrite"
#: How long to wait for a running lab to reload the edited file (it polls it every second).
RELOAD_WAIT = 3.0


class Command(BaseCommand):
    help = "Show or change a cluster's encryption at rest; rotate its keys as upstream does."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", required=True, metavar="NAME", help="the cluster (e.g. demo)")
        parser.add_argument(
            "action", choices=["status", "add-key", "promote", "rewrite", "remove-key", "rotate"]
        )
        parser.add_argument("--key", metavar="NAME", help="the key to promote or remove (add-key: its name)")
        parser.add_argument(
            "--provider", choices=["aescbc", "aesgcm", "secretbox"], help="add-key's provider"
        )
        parser.add_argument("--resource", default="secrets", help="the resource whose keys change (secrets)")
        parser.add_argument(
            "--force", action="store_true", help="remove-key even if values still use the key"
        )
        parser.add_argument(
            "--server", metavar="URL", help="a running lab's API (default KUBELAB_API_ADDRESS)"
        )
        parser.add_argument("--data-dir", metavar="DIR", help="the lab's data directory (default: settings)")

    def handle(self, *args: Any, **options: Any) -> None:
        data_dir = labcommand.data_dir(options["data_dir"])
        name = labcommand.known_cluster(data_dir, options["cluster"])
        self.data_dir, self.name, self.options = data_dir, name, options
        self.directory = cluster_dir(data_dir, name)
        self.file = EncryptionConfigFile(self.directory)
        if not self.file.exists():
            raise CommandError(f"cluster {name!r} has no {self.file.path.name} yet: start it once (runlab)")
        self.running = is_served(self.directory)
        action = options["action"]
        try:
            if action == "status":
                self.status()
            elif action == "add-key":
                self.add_key()
            elif action == "promote":
                self.promote(self._required_key())
            elif action == "rewrite":
                self.rewrite()
            elif action == "remove-key":
                self.remove_key(self._required_key())
            else:
                self.rotate()
        except (rotation.RotationError, config.InvalidEncryptionConfiguration, OSError) as error:
            raise CommandError(str(error)) from error

    # -- the steps -----------------------------------------------------------------------------------

    def status(self) -> None:
        configuration = self.file.read()
        self.stdout.write(
            f"cluster {self.name}: {self.file.path} ({'running' if self.running else 'stopped'})"
        )
        for entry in configuration.resources:
            self.stdout.write(f"  {', '.join(entry.resources)}:")
            for i, provider in enumerate(configuration_providers(entry)):
                self.stdout.write(f"    {'writes' if i == 0 else 'reads '} {provider}")
        for rtype, values in self._stored_values(configuration).items():
            counts = rotation.count_labels(values)
            described = ", ".join(f"{n} by {label}" for label, n in counts.items()) or "none stored"
            self.stdout.write(f"  stored {rtype.group_resource}: {described}")

    def add_key(self) -> config.Key:
        added: list[config.Key] = []

        def edit(configuration: config.EncryptionConfiguration) -> config.EncryptionConfiguration:
            edited, key = rotation.add_key(
                configuration,
                resource=self.options["resource"],
                name=self.options["key"],
                provider=self.options["provider"],
            )
            added.append(key)
            return edited

        self.file.update(edit)
        self.stdout.write(f"added key {added[0].name}: read, not yet written (promote it next)")
        self._wait_for_reload()
        return added[0]

    def promote(self, key: str) -> None:
        edited = self.file.update(lambda c: rotation.promote_key(c, key, resource=self.options["resource"]))
        self.stdout.write(f"{rotation.writing_key(edited, self.options['resource'])} now encrypts new writes")
        self._wait_for_reload()

    def rewrite(self) -> None:
        configuration = self.file.read()
        if self.running:
            rewritten, unchanged = self._rewrite_through_the_api(configuration)
            self.stdout.write(f"rewrote {rewritten} objects through the API ({unchanged} were current)")
            return
        reports = asyncio.run(self._rewrite_the_store(configuration))
        for resource, report in reports.items():
            self.stdout.write(
                f"{resource}: rewrote {report.rewritten}, {report.current} were current"
                + (f", UNREADABLE: {', '.join(report.unreadable)}" if report.unreadable else "")
            )

    def remove_key(self, key: str) -> None:
        configuration = self.file.read()
        rotation.remove_key(configuration, key, resource=self.options["resource"])  # refusals first
        in_use = [
            f"{n} {rtype.group_resource}"
            for rtype, values in self._stored_values(configuration).items()
            if (n := sum(1 for kv in values if rotation.key_label(kv.value).endswith(f":{key}")))
        ]
        if in_use and not self.options["force"]:
            raise CommandError(
                f"key {key!r} still encrypts {', '.join(in_use)}: rewrite first (or --force, and lose them)"
            )
        self.file.update(lambda c: rotation.remove_key(c, key, resource=self.options["resource"]))
        self.stdout.write(f"removed key {key}")
        self._wait_for_reload()

    def rotate(self) -> None:
        resource = self.options["resource"]
        old = rotation.writing_key(self.file.read(), resource)
        key = self.add_key()
        self.promote(key.name)
        self.rewrite()
        if old != rotation.PLAINTEXT:
            self.remove_key(old.partition(":")[2])

    # -- helpers -------------------------------------------------------------------------------------

    def _required_key(self) -> str:
        if not self.options["key"]:
            raise CommandError(f"{self.options['action']} needs --key NAME")
        return str(self.options["key"])

    def _wait_for_reload(self) -> None:
        if self.running:
            time.sleep(RELOAD_WAIT)  # the lab polls the file every second

    def _types(self, configuration: config.EncryptionConfiguration) -> list[ResourceType]:
        return [t for t, _ in rotation.encrypted_types(config.build(configuration), builtin_types())]

    def _stored_values(
        self, configuration: config.EncryptionConfiguration
    ) -> dict[ResourceType, list[KeyValue]]:
        types = self._types(configuration)
        if self.running and is_sqlite(settings.KUBELAB_STORE):
            path = store_path(self.data_dir, self.name)
            return {t: read_latest(path, t.prefix()) for t in types}
        return asyncio.run(self._read_the_store(types))

    async def _read_the_store(self, types: list[ResourceType]) -> dict[ResourceType, list[KeyValue]]:
        store = open_store(self.name, url=settings.KUBELAB_STORE, data_dir=self.data_dir)
        await store.start()
        try:
            return {t: await rotation.stored_values(store, t.prefix()) for t in types}
        finally:
            await store.close()

    async def _rewrite_the_store(
        self, configuration: config.EncryptionConfiguration
    ) -> dict[str, rotation.RewriteReport]:
        store = open_store(self.name, url=settings.KUBELAB_STORE, data_dir=self.data_dir)
        await store.start()
        try:
            return await rotation.rewrite_all(store, config.build(configuration), builtin_types())
        finally:
            await store.close()

    def _rewrite_through_the_api(self, configuration: config.EncryptionConfiguration) -> tuple[int, int]:
        """Send every object back unchanged, as ``kubectl replace`` does; (rewritten, unchanged)."""
        base = (self.options["server"] or parse_address(settings.KUBELAB_API_ADDRESS).url("https")).rstrip(
            "/"
        )
        base = base if base.endswith(f"/clusters/{self.name}") else f"{base}/clusters/{self.name}"
        ca = ServingPKI.load_or_create_ca(self.data_dir)
        tokens = TokenRegistry.load(self.directory)
        token = tokens.issue(REWRITE_USER, [SYSTEM_MASTERS])
        rewritten = unchanged = 0
        try:
            context = ssl.create_default_context(cadata=ca.certificate_pem.decode())
            headers = {"Authorization": f"Bearer {token}"}
            with httpx.Client(base_url=base, verify=context, headers=headers, timeout=30) as client:
                for rtype in self._types(configuration):
                    root = f"/api/{rtype.version}" if not rtype.group else f"/apis/{rtype.group_version}"
                    listed = client.get(f"{root}/{rtype.plural}")
                    if listed.status_code != 200:
                        raise CommandError(f"cannot list {rtype.group_resource}: {listed.text}")
                    for item in listed.json()["items"]:
                        meta = item["metadata"]
                        where = f"/namespaces/{meta['namespace']}" if rtype.namespaced else ""
                        path = f"{root}{where}/{rtype.plural}/{meta['name']}"
                        item.setdefault("apiVersion", rtype.api_version)
                        item.setdefault("kind", rtype.kind)
                        replaced = client.put(path, json=item)
                        if replaced.status_code == 409:  # written meanwhile: that write re-encrypted it
                            unchanged += 1
                        elif replaced.status_code != 200:
                            raise CommandError(f"cannot rewrite {path}: {replaced.text}")
                        elif replaced.json()["metadata"]["resourceVersion"] == meta["resourceVersion"]:
                            unchanged += 1
                        else:
                            rewritten += 1
        except httpx.HTTPError as error:
            raise CommandError(f"cannot reach the running lab at {base} (--server?): {error}") from error
        finally:
            tokens.revoke(REWRITE_USER)
        return rewritten, unchanged


def configuration_providers(entry: config.ResourceConfiguration) -> list[str]:
    """Each provider of an entry as one line: ``aescbc keys key2, key1`` or ``identity``."""
    return [
        p.kind if p.kind == "identity" else f"{p.kind} keys {', '.join(k.name for k in p.keys)}"
        for p in entry.providers
    ]
