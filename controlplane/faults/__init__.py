"""Faults: breaking a cluster on purpose, the way real clusters break, to watch it cope.

A lesson about reliability needs something to go wrong on cue: a node's kubelet dies, the scheduler
stops or crash-loops, the API server restarts, etcd's history is compacted away, a controller floods
the API server. Each of those is a **fault kind** in the catalogue (``catalogue.py``): its
parameters, the part of the diagram it hits, whether it lasts (a stopped kubelet stays stopped) or
happens at once (a compaction), and words for it in every language. A **fault** is one kind applied
to one cluster with its parameters, from a moment, for a while: at most ``catalogue.MAX_DURATION``
(30 minutes), or until someone clears it.

The package follows the project's rule, a pure core with thin adapters around it:

- ``catalogue.py`` (pure): the kinds, and checking a kind's parameters (``FaultSpec``);
- ``book.py`` (pure): which faults are in force, or waiting for their start, on which cluster, until
  when; what a new one does to those in force (the same fault again starts its time anew, others
  stack); which are due to start or to end at a given moment;
- ``effects.py``: what each kind does to a running cluster, through the seams the lab already has: the
  store's ``compact`` (as kube-apiserver's ``--etcd-compaction-interval`` would), the runtime's API
  server restart and component supervisor (``Lab.restart_apiserver``, ``Cluster.stop_component``),
  and a client of the cluster like any other (``hotloop.py``, a controller gone wrong);
- ``supervisor.py``: which components faults hold stopped and which crash-loop, as ``systemctl`` or
  the kubelet of a static pod would, with ``crashloop.py`` (pure) saying when the kubelet restarts a
  component that keeps crashing (CrashLoopBackOff);
- ``service.py``: ``FaultService``, the one entry point the web side (``courses/gateway.py``) and
  ``manage.py fault`` use: apply, clear, clear all (which also heals what is wedged), list; it keeps
  the book, ends faults when their time is up, clears them before a cluster hibernates or is made
  anew, and reports each change on the cluster's trace (``fault.applied``, ``fault.cleared``);
- ``spool.py`` and ``inbox.py``: how ``manage.py fault`` reaches the service inside a running
  ``runlab``: a request file in the lab's data directory, which the lab's inbox task does and answers
  with a file back (the lab's other commands reach a running lab through files too: tokens, the
  revocation list, the encryption configuration).

The layers: ``catalogue``, ``book``, ``crashloop`` and ``spool`` import nothing of the running lab, so
the web side and the content loader use them freely; ``effects``, ``supervisor``, ``service`` and
``inbox`` sit above ``controlplane.runtime`` (pyproject.toml's import contracts), and the web side
reaches them only through ``courses/gateway.py``.

Nothing is faked for the picture: a stopped kubelet really stops renewing its Lease, and the node
lifecycle controller really marks its Node ``Unknown``; a restarted API server really drops its watch
caches; a crashed scheduler really leaves its Lease held, and the next one really waits for it to
expire. See docs/faults.md.
"""
