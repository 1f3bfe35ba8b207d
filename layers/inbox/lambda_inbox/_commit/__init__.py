"""Decide and commit: a message's writes through a unit of work, then into one
`TransactWriteItems` with its inbox record, grouped with other messages where they touch distinct
items, and each attempt's outcome classified (docs/architecture.md, steps 3 to 5)."""
