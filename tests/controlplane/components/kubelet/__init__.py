"""Tests of the kubelet's pure core: simulation conventions, container lifecycle, pod status, logs."""
