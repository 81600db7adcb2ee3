"""Deep copies of API objects, as upstream's generated ``DeepCopy`` methods make them.

Every Kubernetes type has a generated ``DeepCopy()`` (``zz_generated.deepcopy.go``), and the rule
that goes with it: an object read from a cache or an informer is shared, so whoever wants to change
it copies it first. The API server copies the stored object before applying a patch or an update to
it, the scheduler copies a pod before assuming it onto a node, a controller copies its cached object
before writing back a status.

An API object here is a JSON document: dicts, lists, strings, numbers, booleans and None. Python's
``copy.deepcopy`` copies it one Python call per dict, list and value; the C code of ``pickle`` (a
round trip through its binary format, kept in memory) does the same about four times as fast, and
this module is that shortcut. Anything pickle cannot handle falls back to ``copy.deepcopy``.
"""

from __future__ import annotations

import copy
import pickle
from typing import TypeVar

T = TypeVar("T")


def deep_copy(value: T) -> T:
    """A copy of ``value`` (an API object) that shares no dict or list with it."""
    try:
        copied: T = pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError):
        return copy.deepcopy(value)
    return copied
