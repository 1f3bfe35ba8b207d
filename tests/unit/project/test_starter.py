"""starter/, the cookiecutter template `sam init --location` uses: both kinds render, install the
library from the checkout they came from (or a version they are told), say what to do next, and
keep the inbox table's contract. (`make starter-check` generates a project of each kind and runs
its own `make test` and `make validate` without this checkout's virtualenv on PATH.)"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cookiecutter.main import cookiecutter

from devkit.paths import REPO_ROOT
from lambda_inbox import __version__
from lambda_inbox_tools.local.cfn import load_template

STARTER = REPO_ROOT / "starter"


def generate(tmp_path: Path, kind: str) -> Path:
    out = cookiecutter(
        str(STARTER),
        no_input=True,
        output_dir=str(tmp_path),
        extra_context={"project_name": "Order totals", "event_source": kind},
    )
    return Path(out)


def test_a_project_builds_the_library_from_the_checkout_it_came_from(tmp_path: Path) -> None:
    """Before lambda-inbox is on the package index: the function's requirements name the version
    (no path of this machine), and the Makefile builds the checkout's wheels into the project
    and installs exactly those; the checkout is named once."""
    project = generate(tmp_path, "sqs")
    assert (project / "src/requirements.txt").read_text().strip() == f"lambda-inbox=={__version__}"
    makefile = (project / "Makefile").read_text()
    assert makefile.count(str(REPO_ROOT)) == 1
    assert f"LAMBDA_INBOX_CHECKOUT ?= {REPO_ROOT}\n" in makefile
    assert "export PIP_FIND_LINKS := $(WHEELS) $(PIP_FIND_LINKS)\n" in makefile
    assert f"file://$(WHEELS)/lambda_inbox-{__version__}-py3-none-any.whl" in makefile
    assert f"file://$(WHEELS)/lambda_inbox_tools-{__version__}-py3-none-any.whl" in makefile
    assert '"$(LAMBDA_INBOX_CHECKOUT)" "$(LAMBDA_INBOX_CHECKOUT)/tools"' in makefile
    for text in [p.read_text() for p in project.rglob("*") if p.is_file()]:
        assert f"file://{REPO_ROOT}" not in text


def test_a_project_told_a_version_installs_it_from_the_index(tmp_path: Path) -> None:
    project = Path(
        cookiecutter(
            str(STARTER),
            no_input=True,
            output_dir=str(tmp_path),
            extra_context={"lambda_inbox_version": __version__},
        )
    )
    expected = f"lambda-inbox=={__version__}"
    assert (project / "src/requirements.txt").read_text().strip() == expected
    makefile = (project / "Makefile").read_text()
    assert f"LAMBDA_INBOX ?= lambda-inbox[testing]=={__version__}\n" in makefile
    assert "LAMBDA_INBOX_TOOLS ?=\n" in makefile  # the index has them, pulled by [testing]
    assert str(REPO_ROOT) not in makefile and "PIP_FIND_LINKS" not in makefile


def test_sam_cli_has_an_environment_of_its_own(tmp_path: Path) -> None:
    """SAM CLI pins boto3 exactly: installed beside the tests it would move theirs."""
    project = generate(tmp_path, "sqs")
    assert "aws-sam-cli" not in (project / "requirements-dev.txt").read_text()
    makefile = (project / "Makefile").read_text()
    assert "SAM ?= $(SAM_VENV)/bin/sam\n" in makefile
    assert "'aws-sam-cli>=1.170'" in makefile
    assert "validate: $(SAM_VENV)/.installed\n" in makefile


def test_an_sqs_project_is_asked_nothing_about_kafka() -> None:
    questions = json.loads((STARTER / "cookiecutter.json").read_text())
    assert not [name for name in questions if "kafka" in name]


def test_generating_says_what_to_do_next(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    project = generate(tmp_path, "kafka")
    printed = capfd.readouterr().out
    assert f"Order totals is ready in {project}" in printed
    assert f"(lambda-inbox from the checkout {REPO_ROOT})" in printed
    for step in ("cd order-totals", "make test", "make validate", "sam deploy --guided"):
        assert step in printed, step


@pytest.mark.parametrize("kind", ["sqs", "kafka"])
def test_the_generated_inbox_table_is_the_applications(tmp_path: Path, kind: str) -> None:
    project = generate(tmp_path, kind)
    generated = load_template(project / "template.yaml")["Resources"]["InboxTable"]["Properties"]
    ours = load_template(REPO_ROOT / "template.yaml")["Resources"]["InboxTable"]["Properties"]
    for key in ("AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes"):
        assert generated[key] == ours[key], key
    assert generated["TimeToLiveSpecification"]["AttributeName"] == "expires_at"


@pytest.mark.parametrize(
    ("kind", "event_type", "queues"),
    [
        ("sqs", "SQS", {"OrdersQueue", "DeadLetterQueue"}),
        ("kafka", "MSK", {"KafkaFailuresQueue", "DeadLetterQueue"}),
    ],
)
def test_each_kind_has_its_source_and_where_failures_go(
    tmp_path: Path, kind: str, event_type: str, queues: set[str]
) -> None:
    project = generate(tmp_path, kind)
    resources: dict[str, Any] = load_template(project / "template.yaml")["Resources"]
    function = resources["ConsumerFunction"]["Properties"]
    (event,) = function["Events"].values()
    assert event["Type"] == event_type
    assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert {k for k, r in resources.items() if r["Type"] == "AWS::SQS::Queue"} == queues
    assert function["Environment"]["Variables"]["DEAD_LETTER_QUEUE_URL"] == {
        "Ref": "DeadLetterQueue"
    }
    if kind == "kafka":
        destination = event["Properties"]["DestinationConfig"]["OnFailure"]["Destination"]
        assert destination == {"Fn::GetAtt": ["KafkaFailuresQueue", "Arn"]}
    compile((project / "src/app.py").read_text(), "app.py", "exec")
    compile((project / "tests/test_app.py").read_text(), "test_app.py", "exec")


@pytest.mark.parametrize("kind", ["sqs", "kafka"])
def test_the_sample_event_carries_an_order_in_its_sources_shape(tmp_path: Path, kind: str) -> None:
    event = json.loads((generate(tmp_path, kind) / "events/event.json").read_text())
    if kind == "sqs":
        (record,) = event["Records"]
        assert record["eventSource"] == "aws:sqs"
        order = json.loads(record["body"])
    else:
        assert event["eventSource"] == "aws:kafka"
        ((partition, (record,)),) = event["records"].items()
        assert partition == "orders-0" and record["topic"] == "orders"
        order = json.loads(base64.b64decode(record["value"]))
    assert set(order) == {"event_id", "order_id", "customer_id", "amount_cents"}


def test_the_generated_inbox_keeps_records_as_long_as_its_queues_keep_messages(
    tmp_path: Path,
) -> None:
    from lambda_inbox_tools.local.retention import retention_problems
    from lambda_inbox_tools.local.stack import read_local_stack

    project = generate(tmp_path, "sqs")
    stack = read_local_stack(project / "template.yaml", sqs_endpoint="http://127.0.0.1:4566")
    assert [function.logical_id for function in stack.functions]  # a consumer was read
    assert retention_problems(stack) == []
