"""The two phases of `make sam-local` (`sam local invoke` of every sample event; `sam local
start-lambda` driven by `lambda-inbox local`) and the whole run."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devkit.demo.plugin import demo_parameters
from devkit.paths import DEMO_PYTHONPATH, REPO_ROOT
from lambda_inbox_tools.local.sam_env import (
    sam_env_vars,
    shared_variables,
)
from lambda_inbox_tools.local.stack import read_local_stack
from lambda_inbox_tools.local.webhook import webhook_url
from lambda_inbox_tools.services.ports import free_port

from .derived_template import (
    LocalFunction,
    derive_local_template,
    load_template,
    match_events,
    sample_event_files,
    template_functions,
    write_local_template,
)
from .docker import (
    check_containers_start,
    ensure_docker_engine,
    lambda_containers,
    python313_bin,
    remove_lambda_containers,
    remove_stale_containers,
    remove_stale_images,
)
from .invocations import (
    SamCli,
    SamInvocation,
    response_problem,
    sam_environment,
    sam_local_invoke,
    show_invocation,
)
from .processes import Clock, Processes, listening, run, say, shown, wait_until
from .scenarios import SCENARIOS, CheckContext
from .services import (
    PhaseStack,
    Services,
    WebhookReceiver,
    boto_client,
    bridge_address,
    phase_stack,
    start_dynamodb_local,
    start_moto_server,
    start_webhook_receiver,
    write_env_vars,
)
from .settings import (
    ANY_INTERFACE,
    BUILD_TIMEOUT,
    ELF_MACHINE_X86_64,
    IMAGE_TIMEOUT,
    LAYER_PLATFORM,
    LOCAL_STACK_TIMEOUT,
    LOCAL_VARIABLES,
    PLAIN_HTTP_HOSTS_VARIABLE,
    REGION,
    START_LAMBDA_TIMEOUT,
    TEMPLATE,
    WORK_DIR,
    SamLocalError,
)

# ---------------------------------------------------------------------------- the run


@dataclass
class Plan:
    functions: list[LocalFunction]
    events: dict[str, list[Path]]  # function logical id -> event files
    unmatched: dict[Path, str]
    warnings: list[str] = field(default_factory=list)

    def invocations(self) -> list[tuple[str, Path]]:
        return [(function, path) for function, paths in self.events.items() for path in paths]


def make_plan(template: Mapping[str, Any], event_files: Sequence[Path]) -> Plan:
    functions = template_functions(template)
    events, unmatched = match_events(functions, event_files)
    plan = Plan(functions, events, unmatched)
    for function in functions:
        paths = events[function.logical_id]
        names = ", ".join(path.name for path in paths) or "none"
        say(f"{function.logical_id} (functions/{function.code_dir}): {names}")
        if not paths:
            plan.warnings.append(f"{function.logical_id}: no sample events in events/, not invoked")
        elif function.code_dir not in SCENARIOS:
            plan.warnings.append(
                f"{function.logical_id}: responses checked, no table check for functions/"
                f"{function.code_dir} (add one to SCENARIOS in devkit/sam_local/scenarios.py)"
            )
    for path, reason in unmatched.items():
        plan.warnings.append(f"events/{path.name}: not invoked: {reason}")
    for warning in plan.warnings:
        say(f"WARNING: {warning}")
    if not plan.invocations():
        raise SamLocalError("no function has sample events in events/: nothing to invoke")
    return plan


def run_checks(
    plan: Plan,
    stack: PhaseStack,
    dynamodb: Any,
    sqs: Any,
    webhook: WebhookReceiver,
    *,
    seed: bool,
    invocations: Sequence[SamInvocation] = (),
) -> None:
    for function in plan.functions:
        scenario = SCENARIOS.get(function.code_dir)
        if scenario is None or not plan.events[function.logical_id]:
            continue
        events = [json.loads(path.read_text()) for path in plan.events[function.logical_id]]
        responses = [
            invocation.response
            for invocation in invocations
            if invocation.function == function.logical_id
        ]
        context = CheckContext(
            function.logical_id, stack, events, dynamodb, sqs, webhook, responses
        )
        if seed:
            if scenario.seed is not None:
                scenario.seed(context)
            continue
        for fact in scenario.check(context):
            say(f"{function.logical_id}: {fact}")


def check_responses(invocations: Sequence[SamInvocation]) -> None:
    problems = []
    for invocation in invocations:
        event = json.loads(invocation.event.read_text())
        problem = response_problem(invocation, event)
        if problem:
            problems.append(problem)
    if problems:
        raise SamLocalError("unexpected responses:\n  " + "\n  ".join(problems))
    say(f"all {len(invocations)} responses as expected")


def check_built_layers(template: Mapping[str, Any], build_dir: Path) -> None:
    """The layers' native extensions are x86_64 ELF files (not the arm64 default)."""
    for logical_id, resource in template["Resources"].items():
        if resource.get("Type") != "AWS::Serverless::LayerVersion":
            continue
        extensions = sorted((build_dir / logical_id).rglob("*.so"))
        wrong = [
            path
            for path in extensions
            if int.from_bytes(path.read_bytes()[18:20], "little") != ELF_MACHINE_X86_64
        ]
        if wrong:
            raise SamLocalError(
                f"{logical_id}: native extensions not built for x86_64: "
                + ", ".join(shown(path) for path in wrong[:5])
            )
        say(f"{logical_id}: {len(extensions)} native extension(s), all x86_64")


def phase_invoke(plan: Plan, sam: SamCli, built: Path, services: Services) -> None:
    dynamodb = boto_client("dynamodb", services.dynamodb_for_host)
    sqs = boto_client("sqs", services.sqs)
    # The webhook's parameter is empty by default: the receiver instead.
    stack = phase_stack(
        "invoke", services, dynamodb, sqs, {"NotifyWebhookUrl": services.webhook.url}
    )
    run_checks(plan, stack, dynamodb, sqs, services.webhook, seed=True)
    env_vars = write_env_vars(
        {
            "Parameters": {
                **shared_variables(
                    dynamodb_endpoint=services.dynamodb_for_containers, sqs_endpoint=services.sqs
                ),
                PLAIN_HTTP_HOSTS_VARIABLE: services.host,
            },
            **stack.variables,
        },
        WORK_DIR / "env-vars.invoke.json",
    )
    say(f"tables {', '.join(stack.tables.values())}; env vars {shown(env_vars)}")
    invocations = []
    for function, event in plan.invocations():
        invocation = sam_local_invoke(sam, built, function, event, env_vars, WORK_DIR / "logs")
        show_invocation(invocation)
        invocations.append(invocation)
    check_responses(invocations)
    run_checks(plan, stack, dynamodb, sqs, services.webhook, seed=False, invocations=invocations)


def check_container_environments(
    env_vars: Mapping[str, Mapping[str, str]], services: Services
) -> None:
    """The warm containers of start-lambda got the values of the --env-vars file: SAM CLI drops
    the variables a function does not declare, and would otherwise pass its own credentials."""
    found = {
        variables.get("AWS_LAMBDA_FUNCTION_NAME", "?"): variables
        for variables in lambda_containers(services, running_only=True).values()
    }
    problems = []
    for function, own in env_vars.items():
        if function == "Parameters":
            continue
        env = found.get(function)
        if env is None:
            problems.append(f"{function}: no warm container of this run")
            continue
        expected = {**env_vars["Parameters"], **own}
        problems += [
            f"{function}: {name}={env.get(name)!r}, expected {value!r}"
            for name, value in expected.items()
            if env.get(name) != value
        ]
    if problems:
        raise SamLocalError("container environment:\n  " + "\n  ".join(problems))
    say(
        f"{len(found)} warm container(s): endpoints, offline credentials, tables and queues from "
        "the --env-vars file"
    )


def phase_start_lambda(
    sam: SamCli, built: Path, services: Services, processes: Processes, messages: int
) -> None:
    """`sam local start-lambda` with the tables and queues of the local stack in its --env-vars,
    driven by `lambda-inbox local --invoke-endpoint`: the stack's event source emulation and demo
    workload, every function invoked in its warm container. Passes when the demo's invariants
    hold (its exit status)."""
    webhook_port = free_port(ANY_INTERFACE)
    stack = read_local_stack(
        TEMPLATE,
        sqs_endpoint=services.sqs,
        parameters=demo_parameters(webhook_url(services.host, webhook_port)),
    )
    document = sam_env_vars(
        stack, dynamodb_endpoint=services.dynamodb_for_containers, sqs_endpoint=services.sqs
    )
    document["Parameters"][PLAIN_HTTP_HOSTS_VARIABLE] = services.host
    env_vars = write_env_vars(document, WORK_DIR / "env-vars.start-lambda.json")
    say(f"the local stack's tables and queues ({stack.name}-*); env vars {shown(env_vars)}")
    port = free_port(ANY_INTERFACE)
    argv = [str(sam.executable), "local", "start-lambda", "--template-file", str(built)]
    argv += ["--env-vars", str(env_vars), *sam.image_args, "--warm-containers", "EAGER"]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--region", REGION]
    server = processes.start(
        "sam local start-lambda",
        argv,
        log=WORK_DIR / "logs" / "start-lambda.log",
        env=sam.env,
        # Ctrl-C is how SAM CLI expects to be stopped: it removes its warm containers.
        stop_signal=signal.SIGINT,
        stop_timeout=30,
    )
    took = wait_until(
        f"start-lambda listens on 127.0.0.1:{port}",
        lambda: listening("127.0.0.1", port),
        timeout=START_LAMBDA_TIMEOUT,
        process=server,
        interval=0.5,
    )
    say(f"start-lambda ready on 127.0.0.1:{port} in {took:.1f} s (warm containers: EAGER)")
    check_container_environments(document, services)
    local = [sys.executable, "-m", "lambda_inbox_tools.cli", "local"]
    local += ["--invoke-endpoint", f"http://127.0.0.1:{port}", "--template", str(TEMPLATE)]
    local += ["--workload", "devkit.demo.plugin:WORKLOAD"]
    local += ["--dynamodb-endpoint", services.dynamodb_for_containers]
    local += ["--sqs-endpoint", services.sqs]
    local += ["--webhook-listen", f"{services.host}:{webhook_port}", "--messages", str(messages)]
    say("$ lambda-inbox " + " ".join(local[3:]))
    run(
        local,
        what="lambda-inbox local --invoke-endpoint (an invariant failed, or the run did not end)",
        timeout=LOCAL_STACK_TIMEOUT,
        # This checkout's library and demo; a report wide enough to read in a CI log.
        env={**os.environ, "PYTHONPATH": DEMO_PYTHONPATH, "COLUMNS": "120"},
    )
    processes.stop(server)


def run_all(args: argparse.Namespace, clock: Clock, processes: Processes) -> None:
    logs = WORK_DIR / "logs"
    with clock.step("host packages (apt: docker.io, debootstrap)"):
        wanted = ["dockerd"] if args.pull_images else ["dockerd", "debootstrap"]
        run(
            ["bash", str(REPO_ROOT / "scripts" / "install-sam-local-packages.sh"), *wanted],
            what="install docker.io / debootstrap",
            timeout=900,
        )
    with clock.step("Docker engine"):
        ensure_docker_engine(processes, logs)
    py313 = python313_bin()
    if args.pull_images:
        image_args: tuple[str, ...] = ()
        say("official images: pulled by SAM CLI, no local image")
    else:
        with clock.step(f"local Lambda image {args.image}"):
            env = dict(os.environ, PYTHON=str(py313 / "python3.13"), LAMBDA_IMAGE=args.image)
            run(
                ["bash", str(REPO_ROOT / "scripts" / "build-lambda-image.sh"), args.image],
                what="scripts/build-lambda-image.sh",
                timeout=IMAGE_TIMEOUT,
                env=env,
            )
            check_containers_start(args.image, logs)
            remove_stale_containers()
            remove_stale_images()
        image_args = ("--skip-pull-image", "--invoke-image", args.image)

    sam = SamCli(Path(sys.executable).parent / "sam", sam_environment(py313), image_args)
    if not sam.executable.is_file():
        raise SamLocalError(f"{sam.executable} is missing: run `make venv`")
    template = load_template()
    local_template = WORK_DIR / "template.yaml"
    build_dir = WORK_DIR / "build"
    with clock.step("derived template and sam build (x86_64)"):
        derived = derive_local_template(template, source_dir=REPO_ROOT, target_dir=WORK_DIR)
        write_local_template(derived, local_template)
        say(f"{shown(local_template)}: x86_64, {', '.join(LOCAL_VARIABLES)} declared")
        argv = [str(sam.executable), "build", "--template-file", str(local_template)]
        argv += ["--build-dir", str(build_dir), "--cache-dir", str(WORK_DIR / "cache"), "--cached"]
        run(
            argv,
            what="sam build of the derived template",
            timeout=BUILD_TIMEOUT,
            # layers/inbox/Makefile: PLATFORM ?= the arm64 wheels; make takes it from here.
            env={**sam.env, "PLATFORM": LAYER_PLATFORM},
            log=logs / "sam-build.log",
        )
        say(f"built into {shown(build_dir)} with Python 3.13 from {py313}")
        check_built_layers(derived, build_dir)
    built = build_dir / "template.yaml"

    with clock.step("local services: DynamoDB Local, moto (SQS), webhook receiver"):
        host = bridge_address()
        services = Services(
            host=host,
            dynamodb_port=start_dynamodb_local(processes, logs, host),
            sqs_port=start_moto_server(processes, logs, host),
            webhook=start_webhook_receiver(processes, host),
        )
        say(
            f"containers use {services.dynamodb_for_containers} (DynamoDB), {services.sqs} (SQS) "
            f"and {services.webhook.url} (webhook)"
        )
        # Before the engine stops: containers an interrupted `sam local` left behind.
        processes.on_stop("Lambda containers", lambda: remove_lambda_containers(services))

    with clock.step("functions and their sample events"):
        plan = make_plan(derived, sample_event_files())
    if args.phase in ("all", "invoke"):
        with clock.step("sam local invoke, each function with each of its events"):
            phase_invoke(plan, sam, built, services)
    if args.phase in ("all", "start-lambda"):
        with clock.step("sam local start-lambda (EAGER) driven by lambda-inbox local"):
            phase_start_lambda(sam, built, services, processes, args.messages)
    if plan.warnings:
        print("\n== warnings")
        for warning in plan.warnings:
            say(warning)
