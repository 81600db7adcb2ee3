"""Tests of the resource types: selectors, table printers, validation."""
