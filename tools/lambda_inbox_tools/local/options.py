"""What a run of `lambda-inbox local` is asked for: the command line's options, as one value."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .template import DEFAULT_STACK_NAME


@dataclass
class Options:
    template: Path
    messages: int = 40
    duration: float = 90.0
    seed: int = 7
    backend: str = "dynamodb-local"
    scale: float = 1 / 30
    invoke_endpoint: str | None = None
    keep_running: bool = False
    parameters: dict[str, str] = field(default_factory=dict)
    #: Services already running, used instead of starting DynamoDB Local / the moto server.
    dynamodb_endpoint: str | None = None
    sqs_endpoint: str | None = None
    #: Where a workload's webhook receiver listens (containers reach the host at the bridge).
    webhook_host: str = "127.0.0.1"
    webhook_port: int = 0
    #: Resources are named `{stack_name}-{LogicalId}` (several stacks can share the services).
    stack_name: str = DEFAULT_STACK_NAME
    #: Whether a workload runs, with its report: None when one fits the template (workloads.py).
    demo: bool | None = None
    #: `MODULE:ATTR` of the workload to run, instead of the installed ones (workloads.py).
    workload: str | None = None
