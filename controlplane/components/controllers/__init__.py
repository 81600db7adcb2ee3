"""The controllers of kube-controller-manager, each written on ``controlplane.client``'s Manager.

A controller watches some kinds through shared informers, puts the keys of what changed on a
rate-limited workqueue, and reconciles one key at a time: it reads the desired state (a ReplicaSet's
``spec.replicas``) and the actual state (its pods, from the cache) and writes to the API server until
they match. Each module here holds one controller and offers ``add_to_manager(manager, ...)``, which
builds it and registers it with the manager; ``controllermanager.py`` adds them all.
"""
