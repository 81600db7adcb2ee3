"""Components: scheduler, controllers, kubelets and kube-proxy.

Each is a client of the API server, never of the store (hub and spoke).
"""
