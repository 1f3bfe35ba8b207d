"""`lambda-inbox local`: a SAM template's tables, queues and event sources on local services.

Operator tooling (the `local` extra: moto server, confluent-kafka, PyYAML), never part of the
Lambda layer. One module per job: template (read any SAM template), backends (start the
services), provision (tables, queues, topics), invoker (call the functions), sqs_poller /
kafka_poller / scheduler (the event source mappings, each on a loop), workload (the demo traffic
of this repository's template), invariants (the example application's, shared with `make
sam-local` and the chaos run), report (the demo's result), stack (wiring them together), run
(start to report, or to a signal), sam_env (the `--env-vars` that point `sam local` containers
at a stack).
"""
