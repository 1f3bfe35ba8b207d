"""docs/getting-started.md's template, assembled from the page's own `template.yaml` blocks (the
page is the source; `make template-lint` lints the same assembly): its inbox table is the
application's, its function reads its environment and reports failures, and its outbox relay
reads the orders table's stream. The page's Python (the handler, its tests on moto in a fresh
interpreter, the fragments) runs in tests/unit/docs/test_doc_snippets.py; CI follows the whole page
with scripts/check_getting_started.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devkit.doc_snippets import project_files, snippets, write_page_file
from devkit.paths import REPO_ROOT
from lambda_inbox_tools.local.cfn import load_template

PAGE = REPO_ROOT / "docs" / "getting-started.md"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = write_page_file(PAGE, "template.yaml", tmp_path_factory.mktemp("page") / "t.yaml")
    return load_template(path)["Resources"]  # type: ignore[no-any-return]


def test_the_page_is_a_project_with_every_file_it_names() -> None:
    files = project_files(snippets(PAGE, REPO_ROOT))
    assert set(files) == {
        "template.yaml",
        "pyproject.toml",
        "src/app.py",
        "src/relay.py",
        "tests/test_app.py",
    }
    assert "--8<--" not in PAGE.read_text()  # readable outside the site


def test_the_pages_template_has_the_applications_inbox_table(template: dict[str, Any]) -> None:
    ours = load_template(REPO_ROOT / "template.yaml")["Resources"]["InboxTable"]["Properties"]
    shown = template["InboxTable"]["Properties"]
    for key in ("AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes"):
        assert shown[key] == ours[key], key
    assert shown["TimeToLiveSpecification"] == ours["TimeToLiveSpecification"]


def test_the_pages_function_reads_its_environment_and_reports_failures(
    template: dict[str, Any],
) -> None:
    function = template["OrdersFunction"]["Properties"]
    assert set(function["Environment"]["Variables"]) >= {"INBOX_TABLE", "DEAD_LETTER_QUEUE_URL"}
    (event,) = function["Events"].values()
    assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_the_pages_relay_reads_new_outbox_items_of_the_orders_stream(
    template: dict[str, Any], tmp_path: Path
) -> None:
    orders = template["OrdersTable"]["Properties"]
    assert orders["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    assert orders["TimeToLiveSpecification"]["AttributeName"] == "expires_at"
    relay = template["RelayFunction"]["Properties"]
    (event,) = relay["Events"].values()
    assert event["Type"] == "DynamoDB"
    assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert "OUTBOX#" in event["Properties"]["FilterCriteria"]["Filters"][0]["Pattern"]
    assert event["Properties"]["DestinationConfig"]["OnFailure"]["Type"] == "SQS"


# ---- scripts/check_getting_started.py: what it runs of the page ----------------------------


def _checker() -> dict[str, Any]:
    import runpy

    return runpy.run_path(str(REPO_ROOT / "scripts" / "check_getting_started.py"))


def test_the_checker_follows_the_pages_marked_steps_in_order() -> None:
    checker = _checker()
    found = checker["steps"](PAGE.read_text())
    kinds = [step.kind for step in found]
    assert kinds[0] == "run"  # the install comes first
    assert {"run", "until ready", "with its exports", "file"} == set(kinds)
    assert kinds.index("until ready") < kinds.index("with its exports")
    files = [step.file for step in found if step.file]
    assert set(files) == set(project_files(snippets(PAGE, REPO_ROOT)))
    script = checker["session_script"](found, REPO_ROOT, Path("/tmp/log"))
    assert f"git clone --quiet {REPO_ROOT} lambda-inbox" in script
    assert "pip install" in script and "pytest -q" in script and "sam validate" in script


def test_the_checker_refuses_a_page_it_cannot_follow(tmp_path: Path) -> None:
    checker = _checker()
    with pytest.raises(checker["PageError"], match="a run mark on a python block"):
        checker["steps"]("<!-- run -->\n```python\nx = 1\n```\n")
    other = checker["steps"]("<!-- run -->\n```bash\ngit clone https://example.com/x.git\n```\n")
    with pytest.raises(checker["PageError"], match=r"the page clones https://example\.com/x\.git"):
        checker["session_script"](other, REPO_ROOT, tmp_path / "log")
    (step,) = checker["steps"]("Text.\n\n<!-- run -->\n```bash\na \\\n  b\nc  # two\n```\n")
    assert checker["commands"](step) == [(5, "a \\\n  b"), (7, "c  # two")]


def test_a_step_that_fails_is_named_by_its_page_line(tmp_path: Path) -> None:
    import subprocess

    checker = _checker()
    page = "Text.\n\n<!-- snippet: file a.txt -->\n```yaml\nx: 1\n```\n\n<!-- run -->\n```bash\ntrue\nfalse\necho never\n```\n"
    script = checker["session_script"](checker["steps"](page), REPO_ROOT, tmp_path / "log")
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert "the step at getting-started.md:11 failed" in done.stderr
    assert "never" not in done.stdout
    assert (tmp_path / "a.txt").read_text() == "x: 1\n"
