"""Shared helpers for the test suite (tables, handler loading, DynamoDB Local, Kafka events)."""
