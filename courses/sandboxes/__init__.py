"""Sandboxes: one cluster per student, made on demand, hibernated when idle, woken by any request."""
