"""The hot client of ``python -m bench apf``: one user in a hot loop, in a process of its own.

``python -m bench._apfhot URL --ca FILE --workers N --seconds S`` (token in ``KUBELAB_BENCH_TOKEN``)
runs ``N`` concurrent loops, each creating a ConfigMap (``POST URL``, a generated name) again the
moment the last answer arrives, 429 or not (it ignores ``Retry-After``: the misbehaving client flow
control must contain), for ``S`` seconds, then prints one JSON object: requests, answers by status
code, the 429s that carried a ``Retry-After`` and the largest value seen. A process of its own, so
that its CPU is not the polite client's.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import ssl
import time

import httpx

from bench._apiclient import TOKEN_ENV

#: What the loops create: small, so that the server's work is the write itself.
CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"generateName": "hot-"},
    "data": {"k": "v"},
}


async def hammer(url: str, ca: str, workers: int, seconds: float) -> dict[str, object]:
    codes: collections.Counter[int] = collections.Counter()
    retry_after: list[int] = []
    errors = 0
    token = os.environ.get(TOKEN_ENV, "")
    limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(
        verify=ssl.create_default_context(cafile=ca),
        headers={"Authorization": f"Bearer {token}"},
        limits=limits,
        timeout=60.0,
    ) as client:

        async def loop() -> None:
            nonlocal errors
            while time.monotonic() < deadline:
                try:
                    reply = await client.post(url, json=CONFIG_MAP)
                except httpx.HTTPError:
                    errors += 1
                    continue
                codes[reply.status_code] += 1
                if reply.status_code == 429 and reply.headers.get("retry-after", "").isdigit():
                    retry_after.append(int(reply.headers["retry-after"]))

        await asyncio.gather(*(loop() for _ in range(workers)))
    return {
        "requests": sum(codes.values()),
        "codes": {str(code): count for code, count in sorted(codes.items())},
        "with_retry_after": len(retry_after),
        "max_retry_after": max(retry_after, default=None),
        "errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._apfhot")
    parser.add_argument("url")
    parser.add_argument("--ca", required=True)
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    options = parser.parse_args()
    print(
        json.dumps(asyncio.run(hammer(options.url, options.ca, options.workers, options.seconds))), flush=True
    )


if __name__ == "__main__":
    main()
