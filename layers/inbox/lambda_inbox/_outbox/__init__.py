"""The consumer-side outbox: a request for an effect elsewhere, committed with the inbox record,
and the relay that publishes it from the table's stream, at least once."""
