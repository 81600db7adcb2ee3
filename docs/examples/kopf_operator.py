"""An operator written with Kopf: each Greeting gets a ConfigMap, owned by it, and a status.

Kopf (the Kubernetes Operator Pythonic Framework, https://kopf.readthedocs.io) is what many Python
operators are written with. It is an ordinary client of the API server: it watches the custom
resource over HTTPS (aiohttp), calls the handlers below when an object is created, changed or
deleted, and records what it has handled in the object itself: the annotation
``kopf.zalando.org/last-handled-configuration`` (the spec it last acted on, to compute the next diff)
and the finalizer ``kopf.zalando.org/KopfFinalizerMarker`` (so that a deletion waits for the delete
handler). The handlers use the official ``kubernetes`` client for the ConfigMaps.

The custom resource is ``greetings.kubelab.example`` (kind Greeting): ``spec.message`` (a string) and
``spec.replicas`` (an integer, default 1) become the ConfigMap ``<name>-greeting``; the status
subresource gets ``status.configMap`` and ``status.observedGeneration``. The ConfigMap names the
Greeting in its ``ownerReferences``, so when the Greeting goes, the garbage collector deletes it.

Run it from the repository root against a lab cluster (``make run``), with a kubeconfig::

    .venv/bin/python manage.py kubeconfig --cluster demo --user admin > demo.kubeconfig
    export KUBECONFIG=demo.kubeconfig
    .venv/bin/python -m docs.examples.kopf_operator crd | kubectl apply -f -
    .venv/bin/kopf run --standalone --all-namespaces docs/examples/kopf_operator.py

(or ``.venv/bin/python -m docs.examples.kopf_operator run --kubeconfig demo.kubeconfig``, the same
through ``kopf.run()``; a sandbox's kubeconfig, downloaded from ``/sandbox/kubeconfig/``, works too.)

``--standalone`` because Kopf's peering (several operators agreeing which one is active) needs its
own CRDs (``kopfpeerings.kopf.dev``), which a lab does not have. In another terminal::

    kubectl create -f - <<EOF
    apiVersion: kubelab.example/v1
    kind: Greeting
    metadata: {name: hello}
    spec: {message: Hello, replicas: 2}
    EOF
    kubectl get greetings                 # NAME  MESSAGE  REPLICAS  CONFIGMAP  AGE
    kubectl get configmap hello-greeting -o yaml
    kubectl patch greeting hello --type merge -p '{"spec":{"message":"Bonjour"}}'
    kubectl describe greeting hello       # Events: Normal  ConfigMapUpdated  kopf  ...
    kubectl delete greeting hello         # then the ConfigMap goes too
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

import kopf
import kubernetes
import yaml

GROUP = "kubelab.example"
VERSION = "v1"
PLURAL = "greetings"

# A structural schema: every field typed, so the API server prunes what is not declared (Kopf's own
# bookkeeping therefore goes into annotations, see configure()). Printer columns are what
# `kubectl get greetings` shows.
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "greeting", "kind": "Greeting", "shortNames": ["gr"]},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Message", "type": "string", "jsonPath": ".spec.message"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "ConfigMap", "type": "string", "jsonPath": ".status.configMap"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["message"],
                                "properties": {
                                    "message": {"type": "string", "description": "What to say."},
                                    "replicas": {
                                        "type": "integer",
                                        "minimum": 1,
                                        "default": 1,
                                        "description": "How many times to say it.",
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "configMap": {"type": "string"},
                                    "observedGeneration": {"type": "integer"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


def configmap_name(greeting_name: str) -> str:
    return f"{greeting_name}-greeting"


def desired_configmap(name: str, spec: kopf.Spec) -> dict[str, Any]:
    """The ConfigMap a Greeting asks for (without its owner: ``kopf.adopt`` adds that)."""
    message = str(spec.get("message", ""))
    replicas = int(spec.get("replicas", 1))
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": configmap_name(name), "labels": {"kubelab.example/greeting": name}},
        "data": {"message": message, "replicas": str(replicas), "greeting": "\n".join([message] * replicas)},
    }


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """Kopf's own kubeconfig reader: the server URL, its CA and the bearer token of $KUBECONFIG's
    current context (or ~/.kube/config's). Kopf's default would ask the ``kubernetes`` client,
    which reads $KUBECONFIG only once, on import: too early for ``main(--kubeconfig)``."""
    return kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    # The schema prunes status.kopf, where Kopf would also keep its progress: keep it in annotations.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage()
    # The handlers' own client reads the same kubeconfig as Kopf (named: see login()).
    kubernetes.config.load_kube_config(os.environ.get("KUBECONFIG"))  # type: ignore[no-untyped-call]


@kopf.on.resume(GROUP, VERSION, PLURAL)
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL)
def reconcile(
    name: str,
    namespace: str | None,
    spec: kopf.Spec,
    meta: kopf.Meta,
    body: kopf.Body,
    patch: kopf.Patch,
    **_: Any,
) -> None:
    """Create the ConfigMap, or bring it up to date; then report it in the status."""
    assert namespace is not None  # Greetings are namespaced
    configmap = desired_configmap(name, spec)
    # ownerReferences (controller, blockOwnerDeletion) naming the Greeting's uid, and its namespace.
    kopf.adopt(configmap, owner=body)
    core = kubernetes.client.CoreV1Api()
    try:
        # The client serialises a plain dict as it is (its stubs ask for a V1ConfigMap).
        core.create_namespaced_config_map(namespace, configmap)  # type: ignore[arg-type]
        reason = "ConfigMapCreated"
    except kubernetes.client.ApiException as error:
        if error.status != 409:  # AlreadyExists: an update, or a resume after a restart
            raise
        core.patch_namespaced_config_map(configmap_name(name), namespace, configmap)
        reason = "ConfigMapUpdated"
    # A core/v1 Event about the Greeting (`kubectl describe greeting`), posted in the background.
    kopf.info(body, reason=reason, message=f"ConfigMap {configmap_name(name)}: {spec.get('message')!r}")
    # Kopf sends status changes as a merge patch to the status subresource.
    patch.status["configMap"] = configmap_name(name)
    patch.status["observedGeneration"] = meta.get("generation")


@kopf.on.delete(GROUP, VERSION, PLURAL)
def farewell(name: str, body: kopf.Body, **_: Any) -> None:
    """Nothing to delete by hand: the garbage collector follows the ConfigMap's ownerReferences.

    Having a delete handler makes Kopf put its finalizer on every Greeting, so that deletion waits
    for this handler and Kopf removes the finalizer afterwards."""
    kopf.info(body, reason="Farewell", message=f"the garbage collector deletes {configmap_name(name)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("crd", help="print the CustomResourceDefinition as YAML (for kubectl apply -f -)")
    run = commands.add_parser("run", help="run the operator (as `kopf run --standalone` would)")
    run.add_argument("--kubeconfig", help="from `manage.py kubeconfig` (default: $KUBECONFIG)")
    run.add_argument("--namespace", help="watch only this namespace (default: all)")
    args = parser.parse_args()
    if args.command == "crd":
        sys.stdout.write(yaml.safe_dump(CRD, sort_keys=False))
        return
    if args.kubeconfig:
        os.environ["KUBECONFIG"] = args.kubeconfig
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    namespaces = [args.namespace] if args.namespace else []
    kopf.run(standalone=True, clusterwide=not namespaces, namespaces=namespaces)


if __name__ == "__main__":
    main()
