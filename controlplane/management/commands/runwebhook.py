"""``manage.py runwebhook``: run the example admission webhook server (``controlplane.webhooks.example``).

It makes a fresh CA and serving certificate for the host names given, prints the ``caBundle`` to put
in a ``MutatingWebhookConfiguration`` / ``ValidatingWebhookConfiguration`` (``docs/admission.md``),
and serves until interrupted::

    manage.py runwebhook --listen 127.0.0.1:9443
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from controlplane.webhooks.example import ExampleWebhookServer, self_signed


class Command(BaseCommand):
    help = "Run the example admission webhook server over HTTPS (prints its caBundle)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--listen", default="127.0.0.1:9443", help="host:port to listen on")
        parser.add_argument(
            "--host", action="append", default=[], help="a host name or IP for the certificate (repeatable)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        host, _, port = str(options["listen"]).rpartition(":")
        if not host or not port.isdigit():
            raise CommandError("--listen must be host:port")
        hosts = [host, *options["host"]]
        server = ExampleWebhookServer(self_signed(hosts), host=host, port=int(port))

        async def run() -> None:
            await server.start()
            self.stdout.write(f"Example webhook serving {server.url} (/mutate, /sidecar, /validate)")
            self.stdout.write(f"caBundle: {server.serving.ca_bundle}")
            try:
                await asyncio.Event().wait()
            finally:
                await server.stop()

        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(run())
