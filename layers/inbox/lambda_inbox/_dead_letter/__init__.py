"""Dead-lettering: poison goes to an SQS queue with its original body and attributes, and its
inbox record is marked FAILED (docs/architecture.md, step 6)."""
