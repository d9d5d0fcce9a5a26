"""Helpers shared by the tests (tests/ is on pytest's pythonpath)."""
