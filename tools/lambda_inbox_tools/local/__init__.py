"""`lambda-inbox local`: the application of template.yaml running on local services.

Operator tooling (needs the `test` extra: moto server, confluent-kafka), never part of the
Lambda layer. One module per job: template (read the template), backends (start the services),
provision (tables, queues, topics), invoker (call the functions), sqs_poller / kafka_poller /
scheduler (the event source mappings, each on a loop), workload (the demo traffic), report (the
result and the invariants), stack (wiring them together), sam_env (the `--env-vars` that point
`sam local` containers at a stack).
"""
