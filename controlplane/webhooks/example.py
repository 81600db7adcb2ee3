"""An example admission webhook server: what the course deploys against a lab cluster.

An admission webhook is just an HTTPS server. The API server POSTs it an ``AdmissionReview`` (the
request: who, what operation, which object) and reads back the same kind with a ``response``: the
request's ``uid``, ``allowed``, and for a mutating webhook a base64 ``patch`` of type ``JSONPatch``.
This one is deliberately small and self-contained (standard library, no framework, nothing of the
API server's code) so that a student can read all of it. Its endpoints:

- ``/mutate`` (mutating): labels every object it sees ``kubelab.example/mutated: "true"`` and
  annotates it with the webhook's name, unless it already carries the label (a webhook must be
  idempotent: it may be called twice, see reinvocation);
- ``/sidecar`` (mutating): adds a ``log-shipper`` container to pods that do not have one (what
  service meshes do), the classic reason for ``reinvocationPolicy: IfNeeded``;
- ``/validate`` (validating): refuses pods with an image tagged ``:latest`` (or untagged, which means
  the same) and pods whose containers set no ``resources.limits``;
- ``/malformed`` and ``/hang``: how *not* to write a webhook (an answer without the request's uid;
  no answer at all), to see what ``failurePolicy`` and ``timeoutSeconds`` do.

``decide(path, review)`` is the whole logic, a pure function; ``ExampleWebhookServer`` serves it over
TLS on asyncio with a minimal HTTP/1.1 loop. ``manage.py runwebhook`` runs it from the command line
and prints the ``caBundle`` to put in the configuration; ``docs/admission.md`` shows the steps.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import ipaddress
import json
import ssl
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from controlplane import pki

LABEL: Final = "kubelab.example/mutated"
ANNOTATION: Final = "kubelab.example/mutated-by"
SIDECAR: Final = "log-shipper"
NAME: Final = "example-webhook"
MAX_BODY: Final = 3 * 1024 * 1024


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def allow(
    uid: str, patch: list[dict[str, Any]] | None = None, warnings: list[str] | None = None
) -> dict[str, Any]:
    """An AdmissionReview that allows the request, with a JSON patch if there is one."""
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    if warnings:
        response["warnings"] = warnings
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def deny(uid: str, message: str, code: int = 403) -> dict[str, Any]:
    """An AdmissionReview that refuses the request; ``status`` becomes the client's error."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": uid, "allowed": False, "status": {"code": code, "message": message}},
    }


def mutate(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The label and annotation, as a JSON patch ([] if the object has the label already)."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels")
    if isinstance(labels, dict) and labels.get(LABEL) == "true":
        return []
    patch: list[dict[str, Any]] = []
    if isinstance(labels, dict):
        patch.append({"op": "add", "path": f"/metadata/labels/{_escape(LABEL)}", "value": "true"})
    else:
        patch.append({"op": "add", "path": "/metadata/labels", "value": {LABEL: "true"}})
    if isinstance(meta.get("annotations"), dict):
        patch.append({"op": "add", "path": f"/metadata/annotations/{_escape(ANNOTATION)}", "value": NAME})
    else:
        patch.append({"op": "add", "path": "/metadata/annotations", "value": {ANNOTATION: NAME}})
    return patch


def add_sidecar(pod: dict[str, Any]) -> list[dict[str, Any]]:
    containers = (pod.get("spec") or {}).get("containers") or []
    if any(c.get("name") == SIDECAR for c in containers if isinstance(c, dict)):
        return []
    sidecar = {
        "name": SIDECAR,
        "image": "busybox:1.36",
        "command": ["sh", "-c", "tail -F /var/log/app.log"],
        "resources": {"limits": {"cpu": "50m", "memory": "32Mi"}},
    }
    return [{"op": "add", "path": "/spec/containers/-", "value": sidecar}]


def image_problems(pod: dict[str, Any]) -> list[str]:
    """Why ``/validate`` refuses a pod: ``:latest`` images and containers without limits."""
    problems: list[str] = []
    spec = pod.get("spec") or {}
    for field_name in ("initContainers", "containers"):
        for container in spec.get(field_name) or []:
            if not isinstance(container, dict):
                continue
            name, image = container.get("name", ""), str(container.get("image") or "")
            last = image.rsplit("/", 1)[-1]
            pinned = "@" in last or last.partition(":")[2] not in ("", "latest")  # a digest, or a tag
            if not pinned:
                problems.append(f'container "{name}" uses image "{image}": pin a version instead of :latest')
            if not (container.get("resources") or {}).get("limits"):
                problems.append(f'container "{name}" has no resources.limits')
    return problems


def decide(path: str, review: Any) -> dict[str, Any] | None:
    """The answer to one AdmissionReview at ``path``; None: answer nothing (``/hang``)."""
    request = review.get("request") if isinstance(review, dict) else None
    if not isinstance(request, dict):
        return deny("", "the body is not an AdmissionReview with a request", 400)
    uid = str(request.get("uid") or "")
    obj = request.get("object") if isinstance(request.get("object"), dict) else {}
    is_pod = (request.get("kind") or {}).get("kind") == "Pod"
    if path == "/mutate":
        return allow(uid, mutate(obj) if obj else None)
    if path == "/sidecar":
        return allow(uid, add_sidecar(obj) if is_pod and obj else None)
    if path == "/validate":
        problems = image_problems(obj) if is_pod and obj else []
        return deny(uid, "; ".join(problems)) if problems else allow(uid)
    if path == "/malformed":
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"allowed": True}}
    if path == "/hang":
        return None
    return deny(uid, f"no such endpoint: {path}", 404)


# -- certificates ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServingCertificate:
    """A CA (its PEM is the configuration's ``caBundle``) and a serving certificate it signed."""

    ca_pem: bytes
    certificate_pem: bytes
    key_pem: bytes

    @property
    def ca_bundle(self) -> str:
        """``clientConfig.caBundle``: the CA's PEM, base64-encoded."""
        return base64.b64encode(self.ca_pem).decode()


def self_signed(hosts: Iterable[str] = ("127.0.0.1", "localhost")) -> ServingCertificate:
    """A fresh CA and a serving certificate for ``hosts`` (with the lab's own certificate code)."""
    now = dt.datetime.now(dt.UTC)
    ca = pki.new_ca("kubelab-example-webhook-ca", now=now)
    key = pki.new_key()
    certificate = pki.serving_certificate(ca, key.public_key(), hosts, now=now)
    return ServingCertificate(ca.certificate_pem, pki.certificate_pem(certificate), pki.key_pem(key))


def server_context(serving: ServingCertificate) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as directory:
        cert, key = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        cert.write_bytes(serving.certificate_pem)
        key.write_bytes(serving.key_pem)
        context.load_cert_chain(cert, key)
    return context


# -- the server --------------------------------------------------------------------------------------


@dataclass
class ExampleWebhookServer:
    """``decide`` over HTTPS on ``host:port`` (port 0: any free one); ``calls`` lists what it was asked."""

    serving: ServingCertificate = field(default_factory=self_signed)
    host: str = "127.0.0.1"
    port: int = 0
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _hung: set[asyncio.Event] = field(default_factory=set)

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, self.host, self.port, ssl=server_context(self.serving)
        )
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        host = self.host
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(host).version == 6:
                host = f"[{host}]"
        return f"https://{host}:{self.port}"

    async def stop(self) -> None:
        for hung in self._hung:
            hung.set()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)
            self._server = None

    def called(self, path: str) -> list[dict[str, Any]]:
        """The AdmissionReview requests received at ``path``, oldest first."""
        return [review for p, review in self.calls if p == path]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, ValueError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """One HTTP/1.1 request and its answer; False when the client is done."""
        line = await reader.readline()
        if not line:
            return False
        method, target, _ = line.decode("latin-1").split(" ", 2)
        length = 0
        while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = header.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if length > MAX_BODY:
            raise ValueError("body too large")
        body = await reader.readexactly(length)
        path = target.split("?", 1)[0]
        try:
            review = json.loads(body) if method == "POST" else None
        except json.JSONDecodeError:
            review = None
        self.calls.append((path, (review or {}).get("request") or {} if isinstance(review, dict) else {}))
        answer = decide(path, review)
        if answer is None:  # /hang: keep the connection open, say nothing
            hung = asyncio.Event()
            self._hung.add(hung)
            await hung.wait()
            return False
        payload = json.dumps(answer).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        await writer.drain()
        return True


__all__ = [
    "ANNOTATION",
    "LABEL",
    "SIDECAR",
    "ExampleWebhookServer",
    "ServingCertificate",
    "add_sidecar",
    "decide",
    "image_problems",
    "mutate",
    "self_signed",
]
