"""A small controller: label every ConfigMap with the number of keys it holds.

It is the controller that ``docs/controllers.md`` walks through. Run it from the repository root
against a lab cluster, over HTTPS, as any program outside the lab would connect::

    .venv/bin/python manage.py kubeconfig --cluster demo --user admin > demo.kubeconfig
    .venv/bin/python -m docs.examples.configmap_labeler --kubeconfig demo.kubeconfig

and in another terminal::

    kubectl --kubeconfig demo.kubeconfig create configmap colors --from-literal=red=ff0000
    kubectl --kubeconfig demo.kubeconfig get configmap colors --show-labels
    kubectl --kubeconfig demo.kubeconfig describe configmap colors       # the Labeled event

Start it twice with ``--leader-elect``: one copy labels, the other waits; stop the first (Ctrl-C)
and the second takes over.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from pathlib import Path

from controlplane.client.config import Config
from controlplane.client.errors import NotFound
from controlplane.client.informer import SharedInformerFactory
from controlplane.client.manager import Kind, Manager
from controlplane.client.reconciler import Request, Result
from controlplane.client.rest import PatchType, RESTClient

CONFIGMAPS = Kind(group="", version="v1", plural="configmaps", kind="ConfigMap")
LABEL = "example.kubelab.dev/keys"


class ConfigMapLabeler:
    """Makes ``metadata.labels[LABEL]`` of each ConfigMap the number of its data keys."""

    def __init__(self, manager: Manager) -> None:
        self.cache = manager.cache(CONFIGMAPS)
        self.configmaps = manager.client.resource("", "v1", "configmaps")
        self.recorder = manager.event_recorder()

    async def reconcile(self, request: Request) -> Result:
        configmap = self.cache.get_by_key(request.key)
        if configmap is None:
            return Result()  # deleted meanwhile: nothing to label
        keys = len(configmap.get("data") or {}) + len(configmap.get("binaryData") or {})
        metadata = configmap["metadata"]
        if (metadata.get("labels") or {}).get(LABEL) == str(keys):
            return Result()  # already right: a second reconcile must change nothing
        # A merge patch of one label. Its resourceVersion makes it conditional: if the ConfigMap
        # changed since the cache saw it, the server answers 409 Conflict, reconcile raises, and the
        # request comes back (with backoff) to read the newer version.
        patch = {"metadata": {"labels": {LABEL: str(keys)}, "resourceVersion": metadata["resourceVersion"]}}
        try:
            await self.configmaps.in_namespace(request.namespace).patch(
                request.name, patch, patch_type=PatchType.MERGE
            )
        except NotFound:
            return Result()
        self.recorder.event(configmap, "Normal", "Labeled", f"{LABEL}={keys}")
        return Result()


def build_manager(client: RESTClient, *, namespace: str | None, leader_elect: bool) -> Manager:
    """The manager with the labeler in it (also what the tests run, in-process)."""
    manager = Manager(
        client,
        name="configmap-labeler",
        informers=SharedInformerFactory(client, namespace=namespace),
        leader_election=leader_elect,
        lease_namespace=namespace or "default",
    )
    manager.new_controller("configmap-labeler", ConfigMapLabeler(manager), for_=CONFIGMAPS, workers=2)
    return manager


async def main(kubeconfig: Path, namespace: str | None, leader_elect: bool) -> None:
    # Ctrl-C or SIGTERM cancels the manager's run(): it stops cleanly and releases its lease.
    this = asyncio.current_task()
    assert this is not None
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, this.cancel)
    config = Config.from_kubeconfig(kubeconfig)
    async with RESTClient(config) as client:
        with contextlib.suppress(asyncio.CancelledError):
            await build_manager(client, namespace=namespace, leader_elect=leader_elect).run()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kubeconfig", type=Path, required=True, help="from `manage.py kubeconfig`")
    parser.add_argument("--namespace", help="watch only this namespace (default: all)")
    parser.add_argument("--leader-elect", action="store_true", help="run as one of several copies")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request is too much here
    asyncio.run(main(args.kubeconfig, args.namespace, args.leader_elect))
