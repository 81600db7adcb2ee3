"""A child process for the crash test: writes to a SQLite store until it is killed.

It prints ``<key> <revision>`` for each write the store acknowledged, flushing every line, so the
parent knows exactly which writes the store promised were durable when SIGKILL arrived.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from controlplane.store.sqlite import SqliteStore


async def main(path: Path, generation: int) -> None:
    async with SqliteStore("crash", path=path) as store:
        print("ready", await store.current_revision(), flush=True)

        async def write(writer: int) -> None:
            i = 0
            while True:
                key = f"/registry/crash/{generation}-{writer}-{i}"
                kv = await store.create(key, key.encode() * 8)
                sys.stdout.write(f"{key} {kv.mod_revision}\n")
                sys.stdout.flush()
                i += 1
                if writer == 0 and i % 50 == 0:
                    current = await store.current_revision()
                    if current - 100 > await store.compact_revision():
                        await store.compact(current - 100)

        await asyncio.gather(*(write(w) for w in range(8)))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
