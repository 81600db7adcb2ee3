"""Example admission webhook servers (see ``example.py``)."""
