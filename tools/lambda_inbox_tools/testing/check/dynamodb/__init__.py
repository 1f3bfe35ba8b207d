"""What the effectively-once check plays of DynamoDB beyond its answers to the handler's writes:
its own failures of a write (`answers`), what it forgets with time on the check's clock
(`expiry`), and eventually consistent reads that miss the last second's writes (`stale`)."""
