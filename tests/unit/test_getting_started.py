"""docs/getting-started.md's template: its inbox table is the application's, and its function
reads its environment and reports failures. The page's Python snippets (the handler, its tests on
moto in a fresh interpreter, the business outcomes) run in tests/unit/test_doc_snippets.py."""

from __future__ import annotations

from devkit.paths import REPO_ROOT
from lambda_inbox_tools.local.cfn import load_template

TEMPLATE = REPO_ROOT / "docs" / "snippets" / "getting-started.yaml"


def test_the_pages_template_has_the_applications_inbox_table() -> None:
    ours = load_template(REPO_ROOT / "template.yaml")["Resources"]["InboxTable"]["Properties"]
    shown = load_template(TEMPLATE)["Resources"]["InboxTable"]["Properties"]
    for key in ("AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes"):
        assert shown[key] == ours[key], key
    assert shown["TimeToLiveSpecification"] == ours["TimeToLiveSpecification"]


def test_the_pages_function_reads_its_environment_and_reports_failures() -> None:
    function = load_template(TEMPLATE)["Resources"]["OrdersFunction"]["Properties"]
    assert set(function["Environment"]["Variables"]) >= {"INBOX_TABLE", "DEAD_LETTER_QUEUE_URL"}
    (event,) = function["Events"].values()
    assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
