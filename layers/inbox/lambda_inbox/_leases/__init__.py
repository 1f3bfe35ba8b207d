"""Leased mode: a message with an effect outside DynamoDB is claimed with a lease, its side effect
runs, and its writes commit only while the lease is still its own (docs/concepts.md)."""
