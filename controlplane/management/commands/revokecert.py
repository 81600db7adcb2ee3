"""``manage.py revokecert``: withdraw a client certificate before it expires.

A client certificate made by ``manage.py kubeconfig --client-cert`` is good for a year, and the
cluster keeps no copy of it: it recognises the certificate only by its CA's signature. To stop one
from working (a student's laptop was lost, a kubeconfig was pasted into a chat), its **serial number**
goes on the cluster's revocation list (``controlplane.revocation``), and the API server refuses it
from the next request on, even in a lab that is running::

    manage.py revokecert --cluster demo --kubeconfig alice.kubeconfig
    manage.py revokecert --cluster demo --certificate alice.crt
    manage.py revokecert --cluster demo --serial 3F2A...      # as `openssl x509 -serial` prints it
    manage.py revokecert --cluster demo --list

Upstream kube-apiserver cannot do this (see ``controlplane.revocation``). Bearer tokens are withdrawn
differently: the cluster forgets them (``TokenRegistry.revoke``).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from django.core.management.base import BaseCommand, CommandError, CommandParser

from controlplane.management import labcommand
from controlplane.revocation import RevocationList, format_serial, parse_serial
from controlplane.runtime import cluster_dir


def certificate_of_kubeconfig(document: Any) -> bytes:
    """The client certificate (PEM) of a kubeconfig's current user; ``ValueError`` if it has none."""
    if not isinstance(document, dict):
        raise ValueError("not a kubeconfig")
    context_name = document.get("current-context")
    contexts = {c.get("name"): c.get("context") or {} for c in document.get("contexts") or []}
    users = {u.get("name"): u.get("user") or {} for u in document.get("users") or []}
    context = contexts.get(context_name) or (next(iter(contexts.values())) if len(contexts) == 1 else {})
    user = users.get(context.get("user"), {})
    data = user.get("client-certificate-data")
    if not isinstance(data, str) or not data:
        raise ValueError("its current user has no client-certificate-data (a token is revoked otherwise)")
    return base64.b64decode(data)


class Command(BaseCommand):
    help = (
        "Revoke a client certificate of a cluster (by kubeconfig, certificate file or serial), or list them."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", required=True, metavar="NAME", help="the cluster (e.g. demo)")
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument(
            "--kubeconfig", metavar="FILE", help="revoke the client certificate in this kubeconfig"
        )
        which.add_argument("--certificate", metavar="FILE", help="revoke this certificate (PEM)")
        which.add_argument("--serial", metavar="HEX", help="revoke the certificate with this serial number")
        which.add_argument("--list", action="store_true", help="list the revoked certificates")
        parser.add_argument(
            "--data-dir",
            metavar="DIR",
            help="the lab's data directory (default: KUBELAB_DATA_DIR, else var/ in the repository)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        data_dir = labcommand.data_dir(options["data_dir"])
        name = labcommand.known_cluster(data_dir, options["cluster"])
        try:
            revocations = RevocationList.load(cluster_dir(data_dir, name))
        except RuntimeError as error:
            raise CommandError(str(error)) from error
        if options["list"]:
            for entry in revocations.entries():
                self.stdout.write(f"{format_serial(entry.serial)}  {entry.revoked}  {entry.subject}")
            return
        serial, subject = self._serial_and_subject(options)
        try:
            added = revocations.revoke(serial, subject)
        except (OSError, RuntimeError) as error:
            raise CommandError(f"cannot revoke {format_serial(serial)}: {error}") from error
        state = "revoked" if added else "was already revoked"
        self.stdout.write(f"certificate {format_serial(serial)} {subject or ''} {state} in cluster {name!r}")

    def _serial_and_subject(self, options: dict[str, Any]) -> tuple[int, str]:
        if options["serial"]:
            try:
                return parse_serial(options["serial"]), ""
            except ValueError as error:
                raise CommandError(f"--serial {error}") from error
        try:
            if options["kubeconfig"]:
                pem = certificate_of_kubeconfig(yaml.safe_load(Path(options["kubeconfig"]).read_text()))
            else:
                pem = Path(options["certificate"]).read_bytes()
            certificate = x509.load_pem_x509_certificate(pem)
        except (OSError, ValueError, yaml.YAMLError) as error:
            source = options["kubeconfig"] or options["certificate"]
            raise CommandError(f"{source}: no client certificate to revoke: {error}") from error
        return certificate.serial_number, certificate.subject.rfc4514_string()
