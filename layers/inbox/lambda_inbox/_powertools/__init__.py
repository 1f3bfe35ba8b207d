"""Meeting Powertools users where they are (docs/powertools.md): `batch`, a processor for
Powertools' `process_partial_response` that commits a batch's records through the inbox. Loaded
on first use of `lambda_inbox.InboxBatchProcessor`: a consumer that does not use it never
imports Powertools' batch utility."""
