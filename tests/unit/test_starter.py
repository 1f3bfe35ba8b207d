"""starter/, the cookiecutter template `sam init --location` uses: both kinds render, install the
library's own version, and keep the inbox table's contract. (`make starter-check` runs each
generated project's `sam validate --lint` and its tests against the built wheel.)"""

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


def test_the_starter_installs_this_version_of_the_library(tmp_path: Path) -> None:
    defaults = json.loads((STARTER / "cookiecutter.json").read_text())
    assert defaults["lambda_inbox_version"] == __version__
    project = generate(tmp_path, "sqs")
    assert (project / "src/requirements.txt").read_text().strip() == f"lambda-inbox=={__version__}"
    assert f"lambda-inbox[testing]=={__version__}" in (project / "Makefile").read_text()


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
