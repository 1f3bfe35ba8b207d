"""docs/getting-started.md, run as a reader would: its handler written to app.py, its tests to
test_app.py, and pytest run on them in a fresh interpreter, with no AWS credentials, the handler
imported before moto starts. Its template's inbox table is the application's."""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from devkit.paths import REPO_ROOT
from lambda_inbox import PoisonMessage, UnitOfWork
from lambda_inbox_tools.local.cfn import load_template

PAGE = REPO_ROOT / "docs" / "getting-started.md"
SNIPPET = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
TEMPLATE = REPO_ROOT / "docs" / "snippets" / "getting-started.yaml"


def test_the_pages_handler_passes_the_pages_tests(tmp_path: Path) -> None:
    handler, tests, kit_tests, _ = SNIPPET.findall(PAGE.read_text())
    (tmp_path / "app.py").write_text(handler)
    (tmp_path / "test_app.py").write_text(tests + "\n\n" + kit_tests)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "INBOX_"))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO_ROOT / "layers" / "inbox")]),
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_app.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def _write(source: str) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
        file.write(source)
    return file.name


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


def test_the_business_outcome_consumer_builds_and_books(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last snippet, run: its consumer is built from the environment, and `book` and `hold`
    fills a unit of work with the two writes the page shows, and refuses another currency as
    poison."""
    *_, snippet = SNIPPET.findall(PAGE.read_text())
    monkeypatch.setenv("INBOX_TABLE", "inbox")
    monkeypatch.setenv("DOMAIN_TABLE", "ledger")
    namespace = runpy.run_path(_write(snippet), run_name="invoices")
    invoice = namespace["InvoiceIssued"](
        event_id="e-1", invoice_id="i-1", account_id="a-1", currency="EUR", amount_cents=100
    )
    uow = UnitOfWork()
    namespace["book"](invoice, uow)
    assert [(action.kind, action.table) for action in uow.actions] == [
        ("Update", "ledger"),
        ("Put", "ledger"),
    ]
    with pytest.raises(PoisonMessage):
        namespace["book"](invoice.model_copy(update={"currency": "USD"}), UnitOfWork())
    assert callable(namespace["handler"])
