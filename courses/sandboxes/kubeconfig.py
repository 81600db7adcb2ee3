"""A student's kubeconfig: what lets real kubectl, on their own machine, drive their sandbox.

The same document ``manage.py kubeconfig`` prints (read that command's docstring for what each part
is): one cluster (the API port's URL with ``/clusters/<name>``, and the CA that signed the port's
certificate), one user (a bearer token) and the context joining them. The token is the student's own
(``student:<username>``), the one the web app acts with too: one credential per student per sandbox,
which a reset replaces.

Pure: the server, the CA and the token come in, YAML goes out.
"""

from __future__ import annotations

import base64
from urllib.parse import urlsplit, urlunsplit

import yaml

#: Hosts a server listens on that no client connects to: the loopback stands in for them.
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def https_base(host: str, port: int) -> str:
    """``https://host:port`` for an address the API port listens on (IPv6 in brackets)."""
    host = _WILDCARDS.get(host, host)
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"


def parse_address(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT``, ``:PORT`` or ``PORT`` (as ``KUBELAB_API_ADDRESS``); ValueError."""
    host, sep, port = value.strip().rpartition(":")
    if not sep:
        host, port = "", value.strip()
    if not port.isdigit() or not 0 < int(port) <= 65535:
        raise ValueError(f"{value!r}: expected HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


def server_url(base: str, cluster: str) -> str:
    """The cluster's URL under the API port's ``base`` (``https://host:port``): ``.../clusters/<name>``.

    ValueError for anything but ``https://`` with a host: kubectl sends no token over plain HTTP.
    """
    parts = urlsplit(base.strip())
    if parts.scheme != "https" or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"{base!r}: expected https://HOST[:PORT]")
    path = parts.path.rstrip("/")
    suffix = f"/clusters/{cluster}"
    if not path.endswith(suffix):
        path += suffix
    return urlunsplit(("https", parts.netloc, path, "", ""))


def kubeconfig_yaml(
    *, cluster: str, server: str, ca_pem: bytes, user: str, token: str, namespace: str | None = None
) -> bytes:
    """The kubeconfig for ``user`` (``student:alice``) of ``cluster`` at ``server``, as YAML bytes;
    ``namespace`` (None: kubectl's ``default``) is the context's namespace."""
    context = f"{user}@{cluster}"
    where = {"cluster": cluster, "user": context}
    if namespace is not None:
        where["namespace"] = namespace
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": context, "user": {"token": token}}],
        "contexts": [{"name": context, "context": where}],
        "current-context": context,
        "preferences": {},
    }
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False).encode()


__all__ = ["https_base", "kubeconfig_yaml", "parse_address", "server_url"]
