"""The demo of `lambda-inbox local` (`make demo`): this repository's example application
(template.yaml: orders, stock, payments, notifications) driven through the local stack and
checked. Repository-only, never in the lambda-inbox wheel; `lambda-inbox local` runs it through
its workload hook (`lambda_inbox_tools.local.workloads`), found by the entry point devkit's
pyproject.toml registers or named with `--workload devkit.demo.plugin:WORKLOAD`.

- `plugin`: the hook's side (`WORKLOAD`): fits this template only, its session and run;
- `workload`: the producers (orders, payments, notifications, a stuck lease) and the fix;
- `webhook`: the receiver that fails and refuses some calls; `crashes`: injected crashes;
  `payments`: payment values in JSON, Avro and Protobuf;
- `invariants`: the example application's invariants (the demo's report, `make sam-local` and
  the chaos run all check them here); `report`: the demo's report.
"""
