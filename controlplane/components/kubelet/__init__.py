"""The kubelet, one per simulated node. So far its pure core: simulation conventions (simulation.py),
the container lifecycle (lifecycle.py), pod status (status.py) and container logs (logs.py)."""
