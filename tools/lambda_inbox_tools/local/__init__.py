"""`lambda-inbox local`: a SAM template's tables, queues and event sources on local services.

Operator tooling (the `local` extra: moto server, confluent-kafka, PyYAML), never part of the
Lambda layer. One module per job: template (read any SAM template), backends (start the
services), provision (tables, queues, topics), invoker (call the functions), sqs_poller /
kafka_poller / stream_poller / scheduler (the event source mappings, each on a loop), stack
(wiring them together), options (what a run is asked for), workloads (the hook a workload and
its report plug into, and how one is found: this repository's demo is `devkit.demo`, not part
of this package), report (a run's report), settle and progress (waiting, and the live rows),
function_logs, hints and keep_running (a stack up until a signal, with the commands that reach
it), run (start to report, or to a signal), render (the terminal), sam_env (the `--env-vars`
that point `sam local` containers at a stack).
"""
