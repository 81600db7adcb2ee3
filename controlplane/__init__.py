"""Kubelab's control plane: a small but real Kubernetes control plane that runs inside Django.

The layers, lowest first: trace and clock; store; api; apiserver; client; components; runtime.
A module imports only from its own layer or below (kept by import-linter contracts in pyproject.toml).
"""
