"""The lab's side of the fault spool: requests from ``manage.py fault``, done and answered.

``manage.py runlab`` runs ``serve`` as one of its tasks: every ``INTERVAL`` seconds (of the wall
clock: this is the lab's plumbing, not the cluster's time) it looks into ``<data dir>/faults/requests/``
(``spool.py`` has the protocol), does each request through the lab's ``FaultService``, exactly as the
web side's requests are done, writes the answer, and removes the request. A request that cannot be
read is answered too, so the command never waits in vain.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Final

from controlplane.faults import spool
from controlplane.faults.catalogue import InvalidFault
from controlplane.faults.service import FaultError, FaultService
from controlplane.runtime import Lab
from controlplane.store.errors import UnknownCluster

logger = logging.getLogger(__name__)

#: Seconds between two looks into the spool.
INTERVAL: Final = 0.25


async def handle(lab: Lab, request: spool.Request) -> spool.Answer:
    """Do ``request`` with ``lab``'s fault service; the answer, in words."""
    service = FaultService.of(lab)
    name = request.cluster
    try:
        if request.action == "apply":
            assert request.fault is not None  # Request.from_json says so
            applied = await service.apply(
                name,
                request.fault,
                request.values or {},
                reason=request.reason,
                delay=request.after,
                actor=request.actor,
            )
            fault = applied.fault
            message = f"{fault.kind} on {fault.target} of cluster {name!r}: {applied.outcome.value}"
            if fault.lasting and fault.ends_at is not None:
                left = max(0.0, fault.ends_at - lab.config.clock.now())
                message += f", ends in {left:.0f} s unless cleared"
        elif request.action == "clear" and request.fault is not None:
            cleared = await service.clear(
                name, request.fault, request.values, reason=request.reason, actor=request.actor
            )
            message = f"cleared {len(cleared)} fault(s) of cluster {name!r}"
        elif request.action in ("clear", "clear-all"):
            cleared = await service.clear_all(name, reason=request.reason, actor=request.actor)
            message = f"cleared {len(cleared)} fault(s) of cluster {name!r}; it is healed"
        else:
            lab.cluster(name)
            message = f"{len(service.in_force(name))} fault(s) in force on cluster {name!r}"
    except UnknownCluster:
        return spool.Answer(request.id, False, f"the running lab has no cluster {name!r}")
    except (InvalidFault, FaultError) as error:
        return spool.Answer(request.id, False, str(error))
    faults = tuple(f.as_json() for f in (*service.in_force(name), *service.pending(name)))
    return spool.Answer(request.id, True, message, faults)


async def take(lab: Lab, data_dir: Path) -> int:
    """Do every request in the spool now; how many there were."""
    requests = spool.directory(data_dir, "requests")
    answers = spool.directory(data_dir, "answers")
    done = 0
    for path in sorted(requests.glob("*.json")):
        try:
            request = spool.Request.from_json(json.loads(path.read_text()))
        except (OSError, ValueError) as error:
            answer = spool.Answer(path.stem, False, f"the lab cannot read the request: {error}")
        else:
            try:
                answer = await handle(lab, request)
            except Exception as error:  # anything else is a bug: say so rather than leave the command waiting
                logger.exception("fault request %s failed", path.name)
                answer = spool.Answer(request.id, False, f"the lab failed to do it: {error}")
        spool.write_json(answers / f"{answer.id or path.stem}.json", answer.as_json())
        path.unlink(missing_ok=True)
        done += 1
    return done


async def serve(lab: Lab, data_dir: Path, *, interval: float = INTERVAL) -> None:
    """Answer the spool's requests until cancelled."""
    while True:
        try:
            await take(lab, data_dir)
        except OSError as error:
            logger.warning("the fault spool cannot be read: %s", error)
        await asyncio.sleep(interval)


__all__ = ["INTERVAL", "handle", "serve", "take"]
