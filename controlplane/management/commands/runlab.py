"""``manage.py runlab``: serve the web UI and the Kubernetes API, and run every cluster, in one process.

How the pieces meet. daphne is a Twisted server; Kubelab's clusters are asyncio tasks. daphne installs
Twisted's *asyncio reactor*, so Twisted's event loop **is** an asyncio event loop, and every ASGI
request daphne serves runs as a task on it. This command starts daphne programmatically and, once the
reactor runs, starts the ``Lab`` as one more task on that same loop (it checks that it is the same
loop). Browser requests, kubectl's requests and the clusters' components thus share one loop, with no
threads between them (Django's sync views still run in Django's worker thread, as under any ASGI server).
With a Redis channel layer, the trace relay (``controlplane/consumers/relay.py``) starts just before the
clusters and stops just before them: browsers on other processes watch this one's clusters through it.

daphne has no ASGI lifespan events, which is why the lab is started here and not on import: importing
``config.asgi`` (``migrate``, tests, a second daphne for scale-out) never starts a cluster.

Two ports. The web port speaks plain HTTP, for the browser. The API port speaks HTTPS, because kubectl
sends no credentials to an ``http://`` server: it shows the certificate of the lab's serving CA
(``controlplane.pki.ServingPKI``), made or renewed before daphne starts, for the ``--api`` host,
127.0.0.1, ::1, localhost and any ``--tls-san``. One certificate serves every cluster, at
``https://HOST:PORT/clusters/<name>``. It also asks clients for a certificate and hands it to the API
server in the ASGI scope, which daphne's own TLS listener cannot do, so the API port is opened by
``controlplane.management.apiport`` (a daphne ``Server`` subclass) rather than by a daphne endpoint
string. Both ports write status lines with Go's reason phrases (``controlplane.management.httpstatus``:
``422 Unprocessable Entity`` where Twisted alone writes ``422 Unknown Status``), as kube-apiserver does.

Idle sandboxes. A reaper task (``reap_idle_sandboxes``) looks every few seconds for students'
sandboxes nobody used for ``KUBELAB_SANDBOX_IDLE_SECONDS`` and hibernates them (``Lab.hibernate``),
then gives the memory they held back to the system (``release_memory``). Only sandboxes: the demo
cluster and the classrooms' clusters run for whoever drops by.

Faults. ``manage.py fault`` reaches the running lab through request files in its data directory; a
task (``controlplane.faults.inbox.serve``) does them through the lab's fault service and answers.

Stopping. Twisted turns SIGINT (Ctrl-C) and SIGTERM into ``reactor.stop()``, which fires the
*before shutdown* triggers and waits for the Deferreds they return. The lab's trigger cancels a start
still in progress and stops every cluster; the stores are closed (for SQLite: the WAL checkpointed)
before the loop ends, and the command exits 0.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from argparse import ArgumentTypeError
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from controlplane.apiserver.audit.config import AuditSettings
from controlplane.apiserver.filters.priority_and_fairness import FlowControlOptions
from controlplane.consumers.relay import TraceRelay, start_relay
from controlplane.faults import inbox as fault_inbox
from controlplane.management import labcommand
from controlplane.pki import WILDCARD_HOSTS, PKIError, ServingPKI
from controlplane.runtime import (
    Lab,
    LabConfig,
    SandboxProfile,
    activate,
    release_memory,
    tune_garbage_collector,
)
from controlplane.store.compaction import RetentionPolicy
from controlplane.tasks import cancel_and_wait
from controlplane.timing import timing_profile

logger = logging.getLogger(__name__)

#: How long the lab may take to stop before the process gives up waiting (seconds).
STOP_TIMEOUT = 60.0
#: How often the reaper looks for idle sandboxes at most, and at least (seconds).
REAP_INTERVAL = (0.2, 30.0)


async def reap_idle_sandboxes(lab: Lab, *, idle_seconds: float) -> None:
    """Hibernate the sandboxes idle for ``idle_seconds``, looking again every few seconds, until
    cancelled. A sandbox goes to sleep at most a quarter of ``idle_seconds`` (or 30 s) late."""
    interval = min(max(idle_seconds / 4, REAP_INTERVAL[0]), REAP_INTERVAL[1])
    while True:
        await asyncio.sleep(interval)
        try:
            hibernated = await lab.hibernate_idle_sandboxes(idle_seconds)
        except Exception:  # the reaper must outlive a cluster that fails to stop
            logger.exception("hibernating idle sandboxes failed")
            continue
        if hibernated:
            # On the event loop, not in a thread: the collection may finalize asyncio objects, which
            # belong to the loop's thread. It takes a moment, once per sweep that put a sandbox to sleep.
            release_memory()
            logger.info("hibernated idle sandboxes: %s", ", ".join(hibernated))


@dataclass(frozen=True, slots=True)
class Address:
    """A TCP address to listen on."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def endpoint(self) -> str:
        """The Twisted endpoint description daphne listens on (colons of IPv6 hosts escaped)."""
        return f"tcp:port={self.port}:interface={self.host.replace(':', chr(92) + ':')}"

    def url(self, scheme: str = "http") -> str:
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        host = f"[{host}]" if ":" in host else host
        return f"{scheme}://{host}:{self.port}/"


def serving_hosts(api: Address, extra: list[str]) -> list[str]:
    """The names the API port's certificate must carry (``ServingPKI`` adds the loopback ones).

    The ``--api`` host, unless it is a wildcard (``0.0.0.0``, ``::``): no client connects to that, so the
    machine's host name stands in for it. ``--tls-san`` adds names and addresses clients use.
    """
    hosts = [socket.gethostname()] if api.host in WILDCARD_HOSTS else [api.host]
    return [*hosts, *extra]


def kubeconfig_hint(cluster: str, data_dir: Path, api: Address) -> str:
    """The command that prints an admin kubeconfig for ``cluster`` of this lab, as the banner shows it."""
    words = ["python manage.py kubeconfig", f"--cluster {cluster}", "--user admin"]
    if data_dir != settings.BASE_DIR / "var":
        words.append(f"--data-dir {data_dir}")
    if api != parse_address(settings.KUBELAB_API_ADDRESS):
        words.append(f"--server {api.url('https').rstrip('/')}")
    return " ".join([*words, "> kubeconfig"])


def parse_address(value: str) -> Address:
    """``HOST:PORT``, ``[IPv6]:PORT``, ``:PORT`` or ``PORT`` (host 127.0.0.1)."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise ArgumentTypeError(f"{value!r}: expected HOST:PORT, e.g. 127.0.0.1:8000") from None
    if not 0 <= number <= 65535:
        raise ArgumentTypeError(f"{value!r}: the port must be between 0 and 65535")
    return Address(host, number)


def _daphne_reactor() -> Any:
    """Twisted's reactor, which must be daphne's asyncio reactor (installed by ``import daphne.server``)."""
    import daphne.server  # noqa: F401  (installs the asyncio reactor if nothing did yet)
    from twisted.internet.asyncioreactor import AsyncioSelectorReactor

    installed: object = sys.modules.get("twisted.internet.reactor")
    if not isinstance(installed, AsyncioSelectorReactor):
        raise CommandError(f"Twisted's asyncio reactor is not installed (found {installed!r})")
    return installed


class LabServer:
    """daphne plus the lab: starts the lab when the reactor runs, stops it before the reactor stops."""

    def __init__(
        self,
        command: BaseCommand,
        lab: Lab,
        *,
        web: Address,
        api: Address,
        serving: ServingPKI,
        verbosity: int,
    ) -> None:
        self.command = command
        self.lab = lab
        self.web = web
        self.api = api
        self.serving = serving
        self.verbosity = verbosity
        self.failure: BaseException | None = None
        self._reactor = _daphne_reactor()
        self._loop: asyncio.AbstractEventLoop = self._reactor._asyncioEventloop
        self._start_task: asyncio.Task[None] | None = None
        self._reaper: asyncio.Task[None] | None = None
        self._faults: asyncio.Task[None] | None = None
        self.relay: TraceRelay | None = None

    def run(self) -> None:
        """Serve until SIGINT/SIGTERM; return once the lab is stopped."""
        tune_garbage_collector()
        from channels.routing import get_default_application

        # Imported here: importing daphne's server installs Twisted's asyncio reactor.
        from controlplane.management import httpstatus
        from controlplane.management.apiport import KubelabServer

        # Status lines as kube-apiserver (a Go server) writes them: "422 Unprocessable Entity", not
        # Twisted's "422 Unknown Status" (controlplane/management/httpstatus.py).
        httpstatus.install()

        action_logger = None
        if self.verbosity >= 2:
            from daphne.access import AccessLogGenerator

            action_logger = AccessLogGenerator(sys.stdout)
        # One application behind both ports: config.asgi routes /clusters/<name>/ to the API server.
        # daphne opens the web port; the API port (HTTPS asking for client certificates) is opened
        # once daphne has made its HTTP factory, just before the reactor runs.
        endpoints = [self.web.endpoint()]
        server = KubelabServer(
            application=get_default_application(),
            endpoints=endpoints,
            signal_handlers=True,
            action_logger=action_logger,
            verbosity=self.verbosity,
        )
        server.ready_callable = lambda: server.listen_tls(
            host=self.api.host,
            port=self.api.port,
            certificate=self.serving.certificate_path,
            key=self.serving.key_path,
        )
        listeners = len(endpoints) + 1
        # Twisted turns SIGINT into a clean stop only if SIGINT has Python's default handler; a shell
        # that starts the lab in the background leaves it ignored. Ctrl-C must always stop the lab.
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.default_int_handler)
        self._reactor.callWhenRunning(self._when_running, server, listeners)
        self._reactor.addSystemEventTrigger("before", "shutdown", self._before_shutdown)
        server.run()
        if len(server.listening_addresses) < listeners:
            raise CommandError(
                f"could not listen on http://{self.web} and https://{self.api} (see the log above)"
            )
        if self.failure is not None:
            raise CommandError(f"the lab failed: {self.failure}")

    # -- on the reactor's loop -----------------------------------------------------------------------

    def _when_running(self, server: Any, expected_listeners: int) -> None:
        """Called by the reactor as it starts (just before its asyncio loop runs)."""
        if len(server.listening_addresses) < expected_listeners:
            # daphne logged the listen error; the API port's failure came too late to keep the
            # reactor from starting, so it is stopped here.
            self._reactor.stop()
            return
        self._print_banner()
        self._start_task = self._loop.create_task(self._start_lab(), name="kubelab-lab-start")

    async def _start_lab(self) -> None:
        try:
            if asyncio.get_running_loop() is not self._loop:
                raise RuntimeError("the lab must run on daphne's event loop")
            activate(self.lab)
            # With a Redis channel layer, sockets on other processes watch this one's clusters, and
            # sockets here watch theirs (controlplane/consumers/relay.py); with none, nothing runs.
            self.relay = await start_relay(self.lab)
            await self.lab.start()
        except asyncio.CancelledError:
            raise
        except BaseException as error:
            self.failure = error
            self.command.stderr.write(f"The lab failed to start: {error}")
            self._reactor.stop()
            return
        gc.freeze()  # what start-up made lives as long as the lab: never scan it again
        idle = self.lab.config.sandbox.idle_seconds
        if idle > 0:
            self._reaper = self._loop.create_task(
                reap_idle_sandboxes(self.lab, idle_seconds=idle), name="kubelab-sandbox-reaper"
            )
        # ``manage.py fault`` asks through files in the data directory (controlplane/faults/spool.py).
        self._faults = self._loop.create_task(
            fault_inbox.serve(self.lab, self.lab.data_dir), name="kubelab-fault-inbox"
        )
        for cluster in self.lab.clusters():
            line = f"  cluster {cluster.name}: {cluster.state.value}"
            self.command.stdout.write(line + (f" ({cluster.error})" if cluster.error else ""))
        if self.relay is not None:
            self.command.stdout.write("  trace relay: on (sockets may watch the clusters of other processes)")
        self.command.stdout.write("Lab running. Press Ctrl-C to stop.")
        self.command.stdout.flush()

    def _before_shutdown(self) -> Any:
        from twisted.internet.defer import Deferred

        return Deferred.fromFuture(self._loop.create_task(self._stop_lab(), name="kubelab-lab-stop"))

    async def _stop_lab(self) -> None:
        self.command.stdout.write("Stopping the lab ...")
        self.command.stdout.flush()
        for task in (self._start_task, self._reaper, self._faults):
            if task is not None and not task.done():
                await cancel_and_wait(task)
        try:
            if self.relay is not None:
                await asyncio.wait_for(self.relay.stop(), STOP_TIMEOUT)
            await asyncio.wait_for(self.lab.stop(), STOP_TIMEOUT)
        except TimeoutError:
            self.command.stderr.write(f"The lab did not stop within {STOP_TIMEOUT:.0f} s.")
        finally:
            activate(None)
        self.command.stdout.write("Lab stopped.")
        self.command.stdout.flush()

    def _print_banner(self) -> None:
        out = self.command.stdout
        config = self.lab.config
        out.write("Kubelab is serving.")
        out.write(f"  Web UI:          {self.web.url()}")
        out.write(f"  Kubernetes API:  {self.api.url('https')}clusters/<cluster>")
        out.write(f"  Serving CA:      {self.serving.ca_path} (for {', '.join(self.serving.hosts)})")
        out.write(f"  Data directory:  {config.data_dir}")
        out.write(f"  Store backend:   {_redact(config.store_url)}")
        out.write(f"  Demo cluster:    {config.demo_cluster or '(none)'}")
        hint = kubeconfig_hint(config.demo_cluster or "<cluster>", config.data_dir, self.api)
        out.write(f"  kubeconfig:      {hint}")
        out.write("Starting clusters ...")
        out.flush()


def _redact(url: str) -> str:
    """``url`` without its password, for printing."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest:
        credentials, _, host = rest.rpartition("@")
        user = credentials.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}" if ":" in credentials else url
    return url


def stale_catalogs(locale_paths: list[Path]) -> list[Path]:
    """The ``.po`` catalogs under ``locale_paths`` whose ``.mo`` is missing or older than them."""
    stale = []
    for root in locale_paths:
        for po in sorted(root.glob("*/LC_MESSAGES/*.po")):
            mo = po.with_suffix(".mo")
            if not mo.exists() or mo.stat().st_mtime < po.stat().st_mtime:
                stale.append(po)
    return stale


class Command(BaseCommand):
    help = "Start the lab: the web UI, the Kubernetes API and every cluster, in one daphne process."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--web",
            type=parse_address,
            default=parse_address("127.0.0.1:8000"),
            metavar="HOST:PORT",
            help="where the web UI listens (default 127.0.0.1:8000)",
        )
        parser.add_argument(
            "--api",
            type=parse_address,
            default=settings.KUBELAB_API_ADDRESS,
            metavar="HOST:PORT",
            help="where the Kubernetes API listens, over HTTPS "
            f"(default: KUBELAB_API_ADDRESS, else 127.0.0.1:6443; now {settings.KUBELAB_API_ADDRESS})",
        )
        parser.add_argument(
            "--tls-san",
            action="append",
            default=[],
            metavar="HOST",
            help="another host name or IP address that clients use to reach the API port (repeatable); "
            "the API port's certificate names it",
        )
        parser.add_argument(
            "--data-dir",
            metavar="DIR",
            help="where the lab keeps its data (default: KUBELAB_DATA_DIR, else var/ in the repository)",
        )
        parser.add_argument(
            "--no-migrate",
            action="store_true",
            help="do not apply pending Django migrations before serving",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        data_dir = labcommand.data_dir(options["data_dir"])
        web: Address = options["web"]
        api: Address = options["api"]
        if web.port == api.port and (web.host == api.host or {web.host, api.host} & WILDCARD_HOSTS):
            raise CommandError(
                f"--web {web} and --api {api} must differ: the web port is HTTP, the API port HTTPS"
            )
        self._allow_hosts(web, api)
        self._compile_translations()
        if not options["no_migrate"]:
            self._migrate()
        try:
            # Before daphne starts: the API port's TLS listener reads these files as it opens.
            serving = ServingPKI.load_or_create(data_dir, serving_hosts(api, options["tls_san"]))
        except (OSError, PKIError) as error:
            raise CommandError(f"cannot set up the API port's certificate: {error}") from error
        lab = Lab(
            LabConfig(
                data_dir=data_dir,
                store_url=settings.KUBELAB_STORE,
                retention=retention_from_settings(),
                demo_cluster=settings.KUBELAB_DEMO_CLUSTER,
                watch_cache_window=settings.KUBELAB_WATCH_CACHE_WINDOW,
                components=settings.KUBELAB_COMPONENTS,
                nodes=settings.KUBELAB_NODES,
                timing=timing_profile(settings.KUBELAB_TIMING_PROFILE),
                trace_capacity=settings.KUBELAB_TRACE_RECORDER_SIZE,
                trace_recording=settings.KUBELAB_TRACE_RECORD,
                flow_control=FlowControlOptions(
                    enable_priority_and_fairness=settings.KUBELAB_ENABLE_PRIORITY_AND_FAIRNESS,
                    max_requests_inflight=settings.KUBELAB_MAX_REQUESTS_INFLIGHT,
                    max_mutating_requests_inflight=settings.KUBELAB_MAX_MUTATING_REQUESTS_INFLIGHT,
                ),
                audit=AuditSettings(
                    policy_file=settings.KUBELAB_AUDIT_POLICY_FILE,
                    max_bytes=settings.KUBELAB_AUDIT_LOG_MAXSIZE * 1024 * 1024,
                    backups=settings.KUBELAB_AUDIT_LOG_MAXBACKUP,
                ),
                encryption_provider=settings.KUBELAB_ENCRYPTION_PROVIDER,
                serving_ca=serving.ca.certificate_pem,
                api_address=(api.host, api.port),
                sandbox=SandboxProfile(
                    max_objects=settings.KUBELAB_SANDBOX_MAX_OBJECTS,
                    idle_seconds=settings.KUBELAB_SANDBOX_IDLE_SECONDS,
                    trace_capacity=settings.KUBELAB_SANDBOX_TRACE_SIZE,
                ),
            )
        )
        LabServer(self, lab, web=web, api=api, serving=serving, verbosity=options["verbosity"]).run()

    def _allow_hosts(self, *addresses: Address) -> None:
        """Accept requests for the host the lab was asked to listen on, unless the hosts were set."""
        if os.environ.get("KUBELAB_ALLOWED_HOSTS", "").strip():
            return
        for address in addresses:
            if address.host not in ("0.0.0.0", "::") and address.host not in settings.ALLOWED_HOSTS:
                settings.ALLOWED_HOSTS.append(address.host)

    def _compile_translations(self) -> None:
        """Compile the catalogs whose ``.mo`` is missing or older than its ``.po`` (the ``.mo`` files
        are built, not kept in git), as ``make messages`` does; without gettext's ``msgfmt``, say that
        the pages will be in English only, rather than leave a Chinese page half translated."""
        stale = stale_catalogs([Path(p) for p in settings.LOCALE_PATHS])
        if not stale:
            return
        msgfmt = shutil.which("msgfmt")
        if msgfmt is None:
            self.stderr.write(
                "The translations are not compiled, so every page stays in English: install gettext "
                "(msgfmt) and run `make messages`."
            )
            return
        for po in stale:
            result = subprocess.run(
                [msgfmt, "--check-format", "-o", str(po.with_suffix(".mo")), str(po)],
                capture_output=True,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                self.stderr.write(f"Could not compile {po}: {result.stderr.strip()}")
        self.stdout.write(f"Compiled {len(stale)} translation catalog(s).")

    def _migrate(self) -> None:
        """Apply pending migrations, so that ``runlab --data-dir NEW`` works on an empty directory."""
        from django.db.migrations.executor import MigrationExecutor

        connection = connections["default"]
        executor = MigrationExecutor(connection)
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):
            self.stdout.write("Applying database migrations ...")
            call_command("migrate", interactive=False, verbosity=0)
        connections.close_all()


def retention_from_settings() -> RetentionPolicy:
    """The store's retention policy, with ``KUBELAB_STORE_RETAIN_*`` overriding its defaults."""
    default = RetentionPolicy()
    revisions: int | None = settings.KUBELAB_STORE_RETAIN_REVISIONS
    seconds: float | None = settings.KUBELAB_STORE_RETAIN_SECONDS
    return RetentionPolicy(
        min_revisions=default.min_revisions if revisions is None else revisions,
        min_age=default.min_age if seconds is None else seconds,
        interval=default.interval,
    )
