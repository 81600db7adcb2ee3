"""``manage.py kubeconfig``: print a kubeconfig with which kubectl reaches one cluster as one user.

A **kubeconfig** is kubectl's address book. It lists *clusters* (where the API server is, and which CA
to trust for its certificate), *users* (a credential: a bearer token, or a client certificate and its
key) and *contexts* (a cluster with a user), and names the current context. The one printed here has
one of each::

    apiVersion: v1
    kind: Config
    clusters:
    - name: demo
      cluster:
        server: https://127.0.0.1:6443/clusters/demo
        certificate-authority-data: <base64 of the lab's serving CA, PEM>
    users:
    - name: admin@demo
      user:
        token: <a new bearer token>
        # or, with --client-cert:
        # client-certificate-data: <base64 PEM, CN=admin, O=system:masters>
        # client-key-data: <base64 PEM>
    contexts:
    - name: admin@demo
      context:
        cluster: demo
        user: admin@demo
    current-context: admin@demo
    preferences: {}

Every run makes a **new credential**: the cluster keeps only hashes of its tokens (so it cannot show
an old one again) and never keeps client keys at all. Earlier kubeconfigs go on working.

The user ``admin`` of every cluster is in ``system:masters``, the group kube-apiserver lets do
everything (upstream's ``kubernetes-admin``); other users are in no group unless ``--group`` says so.
The API server adds ``system:authenticated`` itself.

The server URL is ``https://<KUBELAB_API_ADDRESS>/clusters/<name>`` unless ``--server`` names the API
port as clients reach it (``https://lab.example.org:6443``; ``/clusters/<name>`` is appended). The
web UI offers the same kubeconfig for download (``kubeconfig_document``).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from controlplane.identity import SYSTEM_MASTERS
from controlplane.management import labcommand
from controlplane.management.commands.runlab import parse_address
from controlplane.pki import (
    ClusterPKI,
    PKIError,
    ServingPKI,
    certificate_hosts,
    normalize_hosts,
    read_serving_certificate,
)
from controlplane.runtime import cluster_dir
from controlplane.tokens import TokenRegistry

#: The user every cluster has as its administrator.
ADMIN_USER = "admin"


def default_groups(user: str) -> list[str]:
    """The groups a user gets without ``--group``: ``system:masters`` for ``admin``, none otherwise."""
    return [SYSTEM_MASTERS] if user == ADMIN_USER else []


def server_url(base: str, cluster: str) -> str:
    """The cluster's URL under the API port's ``base`` URL: ``<base>/clusters/<cluster>``.

    ``ValueError`` for anything but an ``https://`` URL with a host: kubectl sends no credentials over
    plain HTTP.
    """
    parts = urlsplit(base.strip())
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError(f"{base!r}: expected https://HOST[:PORT] (kubectl sends no credentials over http)")
    if parts.query or parts.fragment:
        raise ValueError(f"{base!r}: a server URL has no query or fragment")
    path = parts.path.rstrip("/")
    suffix = f"/clusters/{cluster}"
    if not path.endswith(suffix):
        path += suffix
    return urlunsplit(("https", parts.netloc, path, "", ""))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig_document(
    *, cluster: str, server: str, ca_pem: bytes, user: str, credentials: Mapping[str, str]
) -> dict[str, Any]:
    """A kubeconfig (as a dict, in kubectl's key order) for ``user`` of ``cluster``.

    ``credentials`` is the ``user:`` entry: ``{"token": ...}`` or ``{"client-certificate-data": ...,
    "client-key-data": ...}`` (base64 of PEM, as kubeconfigs carry them).
    """
    context = f"{user}@{cluster}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": cluster, "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)}}
        ],
        "users": [{"name": context, "user": dict(credentials)}],
        "contexts": [{"name": context, "context": {"cluster": cluster, "user": context}}],
        "current-context": context,
        "preferences": {},
    }


def host_is_named(certificate_hosts_: tuple[str, ...], url: str) -> bool:
    """Whether a certificate naming ``certificate_hosts_`` fits the host of ``url``."""
    host = urlsplit(url).hostname or ""
    with_default = set(normalize_hosts([host]))
    return with_default <= set(certificate_hosts_)


class Command(BaseCommand):
    help = (
        "Print a kubeconfig for a user of a cluster, with a new bearer token (or, with --client-cert, a "
        "new client certificate). Redirect it to a file and use it with kubectl --kubeconfig FILE."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", required=True, metavar="NAME", help="the cluster (e.g. demo)")
        parser.add_argument(
            "--user",
            required=True,
            metavar="NAME",
            help=f"the user name; {ADMIN_USER!r} is in {SYSTEM_MASTERS} (cluster admin)",
        )
        parser.add_argument(
            "--group",
            action="append",
            default=[],
            metavar="GROUP",
            help="a group the user is in (repeatable), in addition to the default ones",
        )
        parser.add_argument(
            "--server",
            metavar="URL",
            help="the API port as clients reach it, e.g. https://lab.example.org:6443 "
            f"(default: https://KUBELAB_API_ADDRESS, now {settings.KUBELAB_API_ADDRESS})",
        )
        parser.add_argument(
            "--client-cert",
            action="store_true",
            help="authenticate with a new client certificate of the cluster's CA instead of a bearer token",
        )
        parser.add_argument(
            "--data-dir",
            metavar="DIR",
            help="the lab's data directory (default: KUBELAB_DATA_DIR, else var/ in the repository)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        data_dir = labcommand.data_dir(options["data_dir"])
        user: str = options["user"].strip()
        if not user:
            raise CommandError("--user must not be empty")
        name = labcommand.known_cluster(data_dir, options["cluster"])
        groups = list(dict.fromkeys([*default_groups(user), *options["group"]]))
        try:
            base = options["server"] or parse_address(settings.KUBELAB_API_ADDRESS).url("https")
            server = server_url(base, name)
        except ValueError as error:
            raise CommandError(f"--server {error}") from error

        directory = cluster_dir(data_dir, name)
        try:
            ca = ServingPKI.load_or_create_ca(data_dir)
            if options["client_cert"]:
                cert_pem, key_pem = ClusterPKI.load_or_create(directory).issue_client_certificate(
                    user, groups
                )
                credentials = {"client-certificate-data": _b64(cert_pem), "client-key-data": _b64(key_pem)}
            else:
                credentials = {"token": TokenRegistry.load(directory).issue(user, groups)}
        except (OSError, PKIError, RuntimeError) as error:
            raise CommandError(
                f"cannot make a credential for {user!r} of cluster {name!r}: {error}"
            ) from error

        document = kubeconfig_document(
            cluster=name, server=server, ca_pem=ca.certificate_pem, user=user, credentials=credentials
        )
        self.stdout.write(yaml.safe_dump(document, sort_keys=False, default_flow_style=False), ending="")
        self._warn_about_the_certificate(data_dir, server)

    def _warn_about_the_certificate(self, data_dir: Path, server: str) -> None:
        """Say so (on stderr) if the API port's current certificate does not name the server's host."""
        certificate = read_serving_certificate(data_dir)
        if certificate is None or host_is_named(certificate_hosts(certificate), server):
            return
        host = urlsplit(server).hostname or ""
        self.stderr.write(
            f"warning: the API port's certificate names {', '.join(certificate_hosts(certificate))}, "
            f"not {host}: kubectl will refuse it. Restart runlab with --api {host}:PORT or --tls-san {host}."
        )
