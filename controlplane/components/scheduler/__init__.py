"""The scheduler: picks a node for every pod that has none, and tells the API server through pods/binding.

This package is upstream's kube-scheduler in miniature (``pkg/scheduler``). Its pure core has no I/O:
``framework`` runs filter and score plugins over a snapshot of nodes and says why each node was or was
not chosen, ``plugins`` holds one module per upstream plugin, ``queue`` is the scheduling queue (active,
backoff and unschedulable sub-queues) and ``messages`` writes upstream's FailedScheduling text.
"""
