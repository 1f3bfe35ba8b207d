"""Shared helpers for the test suite (tables, handler loading)."""
