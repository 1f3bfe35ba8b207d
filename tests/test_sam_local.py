"""`make sam-local` (scripts/sam_local.py over devkit.sam_local): the derived template `sam local` runs, and which
sample events each function gets. No container is started here; `make sam-local` runs them."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from devkit.paths import REPO_ROOT as REPO
from devkit.sam_local import derived_template, scenarios, services, settings
from devkit.sam_local.processes import Processes
from devkit.sam_local.services import start_webhook_receiver


@pytest.fixture(scope="module")
def sam_local() -> SimpleNamespace:
    """The names of devkit.sam_local's modules that scripts/sam_local.py runs, in one namespace."""
    names: dict[str, Any] = {}
    for module in (settings, derived_template, services, scenarios):
        names.update(vars(module))
    return SimpleNamespace(**names)


@pytest.fixture(scope="module")
def derived(sam_local: SimpleNamespace, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    target = tmp_path_factory.mktemp("aws-sam-local")
    template = sam_local.load_template(REPO / "template.yaml")
    result: dict[str, Any] = sam_local.derive_local_template(
        template, source_dir=REPO, target_dir=target
    )
    result["_target"] = str(target)
    return result


def resources_of(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {
        name: resource
        for name, resource in template["Resources"].items()
        if resource.get("Type") == kind
    }


def test_the_derived_template_runs_everything_on_x86_64(derived: dict[str, Any]) -> None:
    assert "arm64" not in json.dumps(derived)
    assert derived["Globals"]["Function"]["Architectures"] == ["x86_64"]
    for layer in resources_of(derived, "AWS::Serverless::LayerVersion").values():
        assert layer["Properties"]["CompatibleArchitectures"] == ["x86_64"]
        assert layer["Metadata"]["BuildArchitecture"] == "x86_64"


def test_every_function_declares_the_local_variables(
    sam_local: SimpleNamespace, derived: dict[str, Any]
) -> None:
    functions = resources_of(derived, "AWS::Serverless::Function")
    assert functions
    for name, function in functions.items():
        variables = function["Properties"]["Environment"]["Variables"]
        for variable in sam_local.LOCAL_VARIABLES:
            assert variable in variables, (name, variable)


def test_code_paths_point_at_the_sources_from_the_derived_template(derived: dict[str, Any]) -> None:
    target = Path(derived["_target"])
    uris = [
        function["Properties"]["CodeUri"]
        for function in resources_of(derived, "AWS::Serverless::Function").values()
    ] + [
        layer["Properties"]["ContentUri"]
        for layer in resources_of(derived, "AWS::Serverless::LayerVersion").values()
    ]
    for uri in uris:
        assert (target / uri).resolve().is_dir(), uri
        assert (target / uri).resolve().is_relative_to(REPO)


def test_intrinsics_keep_their_long_form(derived: dict[str, Any]) -> None:
    order_events = derived["Resources"]["OrderEventsFunction"]["Properties"]
    assert order_events["Environment"]["Variables"]["DEAD_LETTER_QUEUE_URL"] == {
        "Ref": "OrderEventsDLQ"
    }
    statement = order_events["Policies"][0]["Statement"][0]
    assert statement["Resource"] == {"Fn::GetAtt": ["InboxTable", "Arn"]}


def test_every_sample_event_goes_to_exactly_one_function(
    sam_local: SimpleNamespace, derived: dict[str, Any]
) -> None:
    functions = sam_local.template_functions(derived)
    events, unmatched = sam_local.match_events(functions, sam_local.sample_event_files())
    assert unmatched == {}
    assert {path.name for paths in events.values() for path in paths} == {
        path.name for path in (REPO / "events").glob("*.json")
    }
    assert all(path.name.startswith("sqs-order-") for path in events["OrderEventsFunction"])
    assert {path.name for path in events["PaymentEventsFunction"]} >= {
        "msk-payment-single.json",
        "sqs-payment-replay.json",
    }
    assert {path.name for path in events["CustomerNotificationsFunction"]} >= {
        "sqs-notification-single.json",
        "sqs-notification-batch-duplicates.json",
    }
    assert [path.name for path in events["InboxReaperFunction"]] == ["schedule-reaper-run.json"]


def test_every_function_with_events_has_a_table_check(
    sam_local: SimpleNamespace, derived: dict[str, Any]
) -> None:
    functions = sam_local.template_functions(derived)
    events, _ = sam_local.match_events(functions, sam_local.sample_event_files())
    for function in functions:
        assert events[function.logical_id], function.logical_id
        assert function.code_dir in sam_local.SCENARIOS, function.code_dir


def test_event_names_are_matched_on_a_word_of_the_code_folder(sam_local: SimpleNamespace) -> None:
    functions = [
        sam_local.LocalFunction("NotifyFunction", "customer_notifications", {}),
        sam_local.LocalFunction("ReaperFunction", "inbox_reaper", {}),
    ]
    files = [Path(name) for name in ("sqs-notification-single.json", "scheduled-reaper.json")]
    files += [Path("sqs-invoice-single.json"), Path("README.json")]
    events, unmatched = sam_local.match_events(functions, files)
    assert events == {
        "NotifyFunction": [Path("sqs-notification-single.json")],
        "ReaperFunction": [Path("scheduled-reaper.json")],
    }
    assert set(unmatched) == {Path("sqs-invoice-single.json"), Path("README.json")}


def test_a_phase_gets_the_local_stacks_names_and_values(sam_local: SimpleNamespace) -> None:
    """A phase's tables, queues and environment come from the local stack's template reader:
    `<phase>-<LogicalId>` names, parameter defaults, `!Sub` of the queues, the webhook set."""
    from lambda_inbox_tools.local.template import read_stack

    webhook = "http://127.0.0.1:8080/invoke"
    sqs = "http://127.0.0.1:4566"
    spec = read_stack(
        REPO / "template.yaml",
        stack_name="t",
        parameters={"NotifyWebhookUrl": webhook},
        sqs_endpoint=sqs,
    )
    stack = sam_local.stack_of("t", spec)
    reaper = stack.variables["InboxReaperFunction"]
    # !Sub of the DLQs: the local queue URLs in the JSON map the reaper reads.
    assert json.loads(reaper["INBOX_REAPER_DLQ_URLS"]) == {
        "order-events": stack.queues["OrderEventsDLQ"],
        "payment-events": stack.queues["PaymentEventsDLQ"],
        "customer-notifications": stack.queues["NotificationDLQ"],
    }
    assert stack.queues["NotificationDLQ"].startswith(f"{sqs}/")
    assert stack.queues["NotificationDLQ"].endswith("/t-notifications-dlq")  # its QueueName
    template = sam_local.load_template(REPO / "template.yaml")
    # !Ref of a parameter: its default.
    assert reaper["INBOX_REAPER_LEASE_GRACE_SECONDS"] == str(
        template["Parameters"]["ReaperLeaseGraceSeconds"]["Default"]
    )
    assert reaper["INBOX_TABLE"] == "t-InboxTable"
    notifications = stack.variables["CustomerNotificationsFunction"]
    assert notifications["NOTIFY_WEBHOOK_URL"] == webhook
    assert notifications["DEAD_LETTER_QUEUE_URL"] == stack.queues["NotificationDLQ"]
    assert "NOTIFY_WEBHOOK_URL" not in stack.variables["OrderEventsFunction"]
    assert sorted(stack.tables.values()) == ["t-DomainTable", "t-InboxTable"]


def test_the_start_lambda_env_vars_name_the_local_stacks_resources() -> None:
    """What start-lambda's containers get: the endpoints and offline credentials for all, and per
    function the environment `lambda-inbox local` resolves for the same stack."""
    from lambda_inbox_tools.local.sam_env import sam_env_vars
    from lambda_inbox_tools.local.stack import read_local_stack

    stack = read_local_stack(REPO / "template.yaml", sqs_endpoint="http://172.17.0.1:5000")
    document = sam_env_vars(
        stack, dynamodb_endpoint="http://172.17.0.1:8000", sqs_endpoint="http://172.17.0.1:5000"
    )
    assert document["Parameters"] == {
        "AWS_ENDPOINT_URL_DYNAMODB": "http://172.17.0.1:8000",
        "AWS_ENDPOINT_URL_SQS": "http://172.17.0.1:5000",
        # The template's topics (the relay publishes to one) live on the SQS endpoint's server.
        "AWS_ENDPOINT_URL_SNS": "http://172.17.0.1:5000",
        "AWS_ENDPOINT_URL_EVENTBRIDGE": "http://172.17.0.1:5000",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    assert set(document) == {"Parameters", *(f.logical_id for f in stack.functions)}
    orders = document["OrderEventsFunction"]
    assert orders["INBOX_TABLE"] == stack.table("InboxTable").name == "lambda-inbox-InboxTable"
    assert orders["DEAD_LETTER_QUEUE_URL"] == stack.queue("OrderEventsDLQ").url
    relay = document["OutboxRelayFunction"]
    assert relay["NOTIFICATION_TOPIC_ARN"] == stack.routes.topics[0].arn
    # The local lease (shorter than the scaled visibility timeout) reaches the container.
    assert document["CustomerNotificationsFunction"]["NOTIFY_LEASE_SECONDS"] == "5"


def test_the_webhook_receiver_records_every_call_with_its_idempotency_key() -> None:
    processes = Processes()
    receiver = start_webhook_receiver(processes, "127.0.0.1")
    try:
        for key in ("evt-1", "evt-2", "evt-1"):
            request = urllib.request.Request(
                receiver.url,
                data=json.dumps({"order_id": key}).encode(),
                method="POST",
                headers={"Idempotency-Key": key, "Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=5) as answer:
                assert answer.status == 202
        calls = receiver.calls()
    finally:
        processes.stop_all()
    assert [call.idempotency_key for call in calls] == ["evt-1", "evt-2", "evt-1"]
    assert calls[1].body == {"order_id": "evt-2"}


def test_the_managed_powertools_layer_follows_the_local_architecture(
    derived: dict[str, Any],
) -> None:
    layers = json.dumps(derived["Globals"]["Function"]["Layers"])
    assert "/aws/service/powertools/python/x86_64/python3.13/" in layers


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # SAM CLI's and its translator's own
@pytest.mark.parametrize(
    ("choice", "expected"),
    [({}, ["InboxLayer"]), ({"PowertoolsLayer": "managed"}, ["ssm-", "InboxLibraryLayer"])],
    ids=["bundled", "managed"],
)
def test_sam_cli_finds_each_functions_layers(
    sam_local: SimpleNamespace,
    derived: dict[str, Any],
    tmp_path: Path,
    choice: dict[str, str],
    expected: list[str],
) -> None:
    """SAM CLI's local commands follow an !If over a function's whole Layers list (one inside the
    list, they drop): by default every function runs with InboxLayer, offline; with the managed
    choice AWS's layer (its SSM parameter) and InboxLibraryLayer. The payment function has
    KafkaCodecsLayer after them."""
    stacks = pytest.importorskip("samcli.lib.providers.sam_stack_provider")
    functions = pytest.importorskip("samcli.lib.providers.sam_function_provider")
    path = Path(derived["_target"]) / "template.yaml"
    sam_local.write_local_template({k: v for k, v in derived.items() if k != "_target"}, path)
    found, _ = stacks.SamLocalStackProvider.get_stacks(str(path), parameter_overrides=choice)
    provider = functions.SamFunctionProvider(found, ignore_code_extraction_warnings=True)
    for name in resources_of(derived, "AWS::Serverless::Function"):
        layers = [layer.name for layer in provider.get(name).layers]
        codecs = ["KafkaCodecsLayer"] if name == "PaymentEventsFunction" else []
        assert len(layers) == len(expected) + len(codecs), (name, layers)
        for prefix, layer in zip([*expected, *codecs], layers, strict=True):
            assert layer.startswith(prefix), (name, layers)
