"""`make sam-local` (scripts/sam_local.py): the derived template `sam local` runs, and which
sample events each function gets. No container is started here; `make sam-local` runs them."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from devkit.paths import REPO_ROOT as REPO


@pytest.fixture(scope="module")
def sam_local() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "sam_local_script", REPO / "scripts" / "sam_local.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def derived(sam_local: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
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
    sam_local: ModuleType, derived: dict[str, Any]
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
    sam_local: ModuleType, derived: dict[str, Any]
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


def test_event_names_are_matched_on_a_word_of_the_code_folder(sam_local: ModuleType) -> None:
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
