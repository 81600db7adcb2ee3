"""The scheduler: picks a node for every pod that has none, and tells the API server through pods/binding.

This package is upstream's kube-scheduler in miniature (``pkg/scheduler``). Its pure core has no I/O:
``framework`` runs filter and score plugins over a snapshot of nodes and says why each node was or was
not chosen, ``plugins`` holds one module per upstream plugin, ``queue`` is the scheduling queue (active,
backoff and unschedulable sub-queues) and ``messages`` writes upstream's FailedScheduling text.

Around that core, as upstream's ``pkg/scheduler`` is split: ``internal_cache`` holds the nodes and the
pods bound or assumed on them, ``eventhandlers`` feeds the queue and the cache from the informers,
``schedule_one`` runs one scheduling cycle and its binding cycle, and ``scheduler`` is the component
that wires them together, with leader election and Events.
"""
