"""Course progress, classrooms and checks arrive with the course issues; no tables yet."""

from __future__ import annotations
