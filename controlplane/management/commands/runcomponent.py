"""``manage.py runcomponent``: one component of a cluster as its own process, over HTTPS.

In a real cluster the scheduler, the controller manager, each kubelet and each kube-proxy is a process
of its own, often on another machine, reaching the API server over the network with its own
credential. The lab runs them as tasks by default; this command runs one the upstream way::

    manage.py runcomponent scheduler --cluster demo --server https://127.0.0.1:6443
    manage.py runcomponent kubelet --cluster demo --node node-4 --server https://127.0.0.1:6443
    manage.py runcomponent controller-manager --cluster demo --kubeconfig cm.kubeconfig

It is the same component the lab runs (``controlplane.components.launch``), with the component's
identity (``system:kube-scheduler``, ``system:node:<node>`` in ``system:nodes`` ...). With ``--server``
it makes a new client certificate of that identity from the cluster's CA (so it must run where the
lab's data directory is, like ``manage.py kubeconfig``), good for a week (``componentcerts``). Its key
never leaves the process's memory: once the process ends nobody can use the certificate, so unlike a
bearer token there is nothing left to revoke. With ``--kubeconfig`` it uses the server, CA and
credential (token or client certificate) in that file instead. Ctrl-C or SIGTERM stops it cleanly (a
leader releases its Lease), and it can be started again at any moment: it lists everything afresh.

Run two schedulers (or controller managers), which stand for election by default as upstream's do
(``--no-leader-elect`` to not), and stop the leader: the other takes the Lease and carries on. Set
``KUBELAB_COMPONENTS`` for the lab so it does not run the same component itself (docs/configuration.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import signal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from controlplane.client.config import Config
from controlplane.client.rest import RESTClient
from controlplane.componentcerts import process_certificate
from controlplane.components.identities import KINDS, NODE_KINDS, component_identity
from controlplane.components.launch import LaunchOptions, build_component
from controlplane.management.commands.kubeconfig import server_url
from controlplane.pki import ClusterPKI, PKIError, ServingPKI
from controlplane.runtime import InvalidClusterName, check_cluster_name, cluster_dir, known_clusters
from controlplane.timing import timing_profile


class Command(BaseCommand):
    help = "Run one component of a cluster (scheduler, controller-manager, kubelet, kube-proxy) over HTTPS."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("component", choices=KINDS, help="which component to run")
        parser.add_argument("--cluster", required=True, metavar="NAME", help="the cluster (e.g. demo)")
        parser.add_argument("--node", default="", metavar="NAME", help="the node (kubelet, kube-proxy)")
        parser.add_argument(
            "--server",
            metavar="URL",
            help="the API port, e.g. https://127.0.0.1:6443 (a new client certificate is made)",
        )
        parser.add_argument(
            "--kubeconfig", metavar="FILE", help="use this kubeconfig's server and credential"
        )
        parser.add_argument(
            "--leader-elect",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="stand for leader election (scheduler, controller-manager); on by default, as upstream's",
        )
        parser.add_argument(
            "--timing",
            default=settings.KUBELAB_TIMING_PROFILE,
            choices=("classroom", "upstream"),
            help=f"timing profile (default: KUBELAB_TIMING_PROFILE, now {settings.KUBELAB_TIMING_PROFILE})",
        )
        parser.add_argument("--seed", type=int, default=None, help="seed the component's randomness")
        parser.add_argument(
            "--data-dir",
            metavar="DIR",
            help="the lab's data directory, for --server's certificate (default: KUBELAB_DATA_DIR)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        kind: str = options["component"]
        node: str = options["node"].strip()
        if kind in NODE_KINDS and not node:
            raise CommandError(f"a {kind} runs on a node: pass --node NAME")
        if kind not in NODE_KINDS and node:
            raise CommandError(f"--node is for {' and '.join(NODE_KINDS)}, not {kind}")
        try:
            cluster = check_cluster_name(options["cluster"])
        except InvalidClusterName as error:
            raise CommandError(str(error)) from error
        if bool(options["server"]) == bool(options["kubeconfig"]):
            raise CommandError("pass exactly one of --server URL and --kubeconfig FILE")
        identity = component_identity(kind, node)
        client_options: dict[str, Any] = {
            "user_agent": identity.user_agent,
            "qps": identity.qps,
            "burst": identity.burst,
        }
        if options["kubeconfig"]:
            try:
                config = Config.from_kubeconfig(Path(options["kubeconfig"]), **client_options)
            except (OSError, ValueError, KeyError) as error:
                raise CommandError(f"--kubeconfig {options['kubeconfig']}: {error}") from error
        else:
            config = self._config_with_new_certificate(
                cluster, options["server"], identity.user, identity.groups
            )
            config = dataclasses.replace(config, **client_options)
        launch = LaunchOptions(
            cluster=cluster,
            timing=timing_profile(options["timing"]),
            leader_election=options["leader_elect"],
            seed=options["seed"],
        )
        component = build_component(kind, lambda: RESTClient(config), launch, node=node)
        where = f" on {node}" if node else ""
        self.stdout.write(f"{kind}{where} of cluster {cluster!r} at {config.host} as {identity.user}")
        asyncio.run(self._run(component))
        self.stdout.write(f"{kind}{where} stopped")

    def _config_with_new_certificate(
        self, cluster: str, server: str, user: str, groups: tuple[str, ...]
    ) -> Config:
        # manage.py has already made --data-dir the settings' data directory (KUBELAB_DATA_DIR).
        data_dir: Path = settings.KUBELAB_DATA_DIR
        if cluster not in known_clusters(data_dir, store_url=settings.KUBELAB_STORE):
            raise CommandError(f"no cluster {cluster!r} in {data_dir}")
        try:
            host = server_url(server, cluster)
        except ValueError as error:
            raise CommandError(f"--server {error}") from error
        try:
            ca = ServingPKI.load_or_create_ca(data_dir)
            pki = ClusterPKI.load_or_create(cluster_dir(data_dir, cluster))
            cert_pem, key_pem = process_certificate(pki, user, groups)
        except (OSError, PKIError, RuntimeError) as error:
            raise CommandError(f"cannot make a credential for {user!r}: {error}") from error
        return Config(host=host, ca_data=ca.certificate_pem, cert_data=cert_pem, key_data=key_pem)

    async def _run(self, component: Any) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await component.start()
            await stop.wait()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(Exception):
                    loop.remove_signal_handler(sig)
            await component.stop()
