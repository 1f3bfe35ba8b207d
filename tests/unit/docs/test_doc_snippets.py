"""Every Python snippet of README.md and docs/ runs (devkit/doc_snippets.py says how a page's
blocks are read and annotated).

A page's blocks run in order in one namespace, like a doctest session, after the page's preamble
below: the environment, and the reader's own names a fragment refers to (a payload model, a
`decide` function, an order). A preamble gives no name of the library or the testing kit: what a
snippet uses of them, it imports. After a block, the page's checks may call what it defined. A
page whose blocks name files (Getting started) is a project: pytest runs its tests in a fresh
interpreter with no AWS credentials (a process: marked `integration`, so `make test` runs it and
`make check` does not). A block annotated `skip` says why; it is reported as skipped, with its
reason."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import BuiltinFunctionType, FunctionType, ModuleType
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from moto import mock_aws
from pydantic import BaseModel

from devkit.doc_snippets import (
    Snippet,
    SnippetNoteError,
    doc_pages,
    private_imports,
    project_files,
    public_names,
    snippets,
)
from devkit.emf import emf_records
from devkit.meters import RequestMeter
from devkit.paths import REPO_ROOT
from devkit.tables import create_domain_table, create_inbox_table
from lambda_inbox import InboxConsumer, PoisonMessage, UnitOfWork
from lambda_inbox_tools.testing import (
    FakeLambdaContext,
    check_effectively_once,
    delivered_again,
    payload,
    sns_notification,
    sqs_event,
    sqs_record,
)

Namespace = dict[str, Any]
EXAMPLE_TEMPLATE = REPO_ROOT / "examples" / "invoices" / "template.yaml"
EXAMPLE_TESTS = REPO_ROOT / "examples" / "invoices" / "tests" / "test_record_invoice.py"
PAYMENT_FUNCTION = REPO_ROOT / "functions" / "payment_events" / "app.py"


class SnippetFailed(AssertionError):
    """A block that cannot run as its page shows it."""


# ---- the runner ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PageSession:
    """What a page's blocks run with: `environment` set, the names `preamble` gives, and checks
    run after the block of that number (1: the page's first block that runs in the session)."""

    environment: Mapping[str, str] = field(default_factory=dict)
    preamble: Callable[[pytest.FixtureRequest], Namespace] = lambda request: {}
    after: Mapping[int, Callable[[Namespace, pytest.FixtureRequest], None]] = field(
        default_factory=dict
    )


def library_names(namespace: Mapping[str, object]) -> list[str]:
    """The names of `namespace` bound to a module, class or function of the library or the kit
    (a preamble must leave those to the snippets' own imports)."""
    found = []
    for name, value in namespace.items():
        if isinstance(value, ModuleType):
            origin = value.__name__
        elif isinstance(value, (type, FunctionType, BuiltinFunctionType)):
            origin = value.__module__
        else:
            continue
        if origin.split(".")[0] in ("lambda_inbox", "lambda_inbox_tools"):
            found.append(name)
    return found


def run_session(
    blocks: list[Snippet],
    namespace: Namespace,
    after: Mapping[int, Callable[[Namespace], None]] | None = None,
) -> int:
    """Run the blocks that run in the page's session, in order, in `namespace`; each is first
    checked to import public names only. Returns how many ran."""
    leaked = library_names(namespace)
    if leaked:
        raise SnippetFailed(f"the preamble gives library names {leaked}: a snippet imports them")
    public = public_names()
    ran = 0
    for block in blocks:
        if block.skip or block.file:
            continue
        if found := private_imports(block.source, public):
            raise SnippetFailed(f"{block.where}: imports private names {found}")
        try:
            exec(block.compiled(), namespace)  # the docs' own code, as a reader runs it
        except Exception as error:
            raise SnippetFailed(f"{block.where}: {type(error).__name__}: {error}") from error
        ran += 1
        if check := (after or {}).get(ran):
            check(namespace)
    return ran


#: The project's pytest without the plugins it does not use (xdist, Hypothesis, pytest's cache):
#: a reader's project has none of them, and each costs its start.
QUIET_PLUGINS = [
    *("-p", "no:cacheprovider", "-p", "no:randomly"),
    *("-p", "no:xdist", "-p", "no:hypothesispytest"),
]


def run_project(files: Mapping[str, str], folder: Path) -> str:
    """Write the project to `folder` and run pytest there in a fresh interpreter, with no AWS
    credentials; every test function it holds must pass. Only the library is put on the path
    (standing in for its `pip install`): the project's own code is found as the page's files say
    (its `pyproject.toml`), never by this runner."""
    public = public_names()
    for name, source in files.items():
        if name.endswith(".py") and (found := private_imports(source, public)):
            raise SnippetFailed(f"{name}: imports private names {found}")
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "INBOX_"))}
    env.pop("PYTEST_ADDOPTS", None)
    env.update(
        PYTHONPATH=str(REPO_ROOT / "layers" / "inbox"),
        AWS_CONFIG_FILE=str(folder / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(folder / "none"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *QUIET_PLUGINS],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    tests = sum(
        len(re.findall(r"^def test_", source, re.MULTILINE))
        for name, source in files.items()
        if name.endswith(".py")
    )
    if done.returncode != 0 or not re.search(rf"\b{tests} passed\b", done.stdout):
        raise SnippetFailed(f"the page's project ({tests} tests):\n{done.stdout}{done.stderr}")
    return done.stdout


# ---- the pages' sessions -------------------------------------------------------------------


def front_page_consumer(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    """The consumer in a few lines: built, its `decide` fills a unit of work, an empty batch
    answered."""
    assert isinstance(namespace["consumer"], InboxConsumer)
    order = namespace["OrderPlaced"](event_id="e-1", order_id="o-1", sku="RED", quantity=2)
    uow = UnitOfWork()
    namespace["reserve_stock"](order, uow)
    assert [(action.kind, action.table) for action in uow.actions] == [("Update", "stock")]
    assert namespace["handler"]({"Records": []}, None) == {"batchItemFailures": []}


class _OrderPlaced(BaseModel):
    event_id: str
    order_id: str
    amount_cents: int


def getting_started_preamble(request: pytest.FixtureRequest) -> Namespace:
    """The names of Getting started's `src/app.py` its later fragments build on (the page shows
    them in that file, which runs as the page's project)."""

    def record_order(order: _OrderPlaced, uow: UnitOfWork) -> None:
        uow.put("orders", {"pk": f"ORDER#{order.order_id}", "amount_cents": order.amount_cents})

    return {"OrderPlaced": _OrderPlaced, "record_order": record_order, "ORDERS_TABLE": "orders"}


def reads_inside_the_notification(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    """The SNS consumer records the order inside a notification once, also when SNS delivers
    the notification again under a new SQS message id, and keeps what wrapped it."""
    order = {"event_id": "evt-1", "order_id": "O-1", "amount_cents": 1250}
    body = sns_notification(order, message_id="notification-1")
    with mock_aws():
        dynamodb = boto3.client("dynamodb")
        create_inbox_table(dynamodb, "inbox")
        create_key_table(dynamodb, "orders")
        consumer = namespace["consumer"]
        for _ in range(2):  # the second: SNS's redelivery, a new SQS messageId
            assert consumer.handle(sqs_event(sqs_record(body)), None) == {"batchItemFailures": []}
        (record,) = dynamodb.scan(TableName="inbox")["Items"]
        orders = [item["pk"]["S"] for item in dynamodb.scan(TableName="orders")["Items"]]
    assert record["pk"]["S"] == "orders#evt-1"
    assert "notification-1" in str(record), record
    assert orders == ["ORDER#O-1"]


def writes_the_outbox_item(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    """The order and its outbox item: two puts in one unit of work."""
    uow = UnitOfWork()
    order = _OrderPlaced(event_id="evt-1", order_id="O-1", amount_cents=5)
    namespace["record_order_and_tell_shipping"](order, uow)
    assert [(action.kind, action.table) for action in uow.actions] == [
        ("Put", "orders"),
        ("Put", "orders"),
    ]
    assert "OUTBOX#order-placed-O-1" in str(uow.actions[1])


def books_and_holds(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    """Getting started's business outcomes: `book` writes the two items, and refuses another
    currency as poison."""
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


class _Order(BaseModel):
    event_id: str
    order_id: str
    customer_id: str = "C-1"


def concepts_preamble(request: pytest.FixtureRequest) -> Namespace:
    """The reader's own names concepts.md's fragments refer to."""

    def place(order: _Order, uow: UnitOfWork) -> None:
        uow.put("orders", {"pk": f"ORDER#{order.order_id}"})

    def payment_captured_proto() -> type[Any]:
        spec = importlib.util.spec_from_file_location(
            "payment_captured_pb2",
            PAYMENT_FUNCTION.with_name("schemas") / "payment_captured_pb2.py",
        )
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.PaymentCaptured  # type: ignore[no-any-return]

    def record_payment(payment: Mapping[str, Any], uow: UnitOfWork) -> None:
        uow.put("payments", {"pk": f"PAYMENT#{payment['payment_id']}"})

    def post_webhook(payload: Mapping[str, Any], context: object) -> None:
        return None

    return {
        "__file__": str(PAYMENT_FUNCTION),
        "OrderPlaced": _Order,
        "place": place,
        "PaymentCaptured": dict,
        "record_payment": record_payment,
        "payment_captured_proto": payment_captured_proto,
        "uow": UnitOfWork(),
        "DOMAIN_TABLE": "shop",
        "order": _Order(event_id="evt-1", order_id="O-1"),
        "notification_id": lambda order_id: f"order-shipped-{order_id}",
        "CustomerNotification": _Order,
        "record_notification": place,
        "post_webhook": post_webhook,
    }


def keyed_by_the_sns_attribute(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    """The key extractor reads the SNS notification's message attribute: on moto, a message
    whose attribute names the order is recorded under that key, whatever its body says."""
    body = sns_notification({"event_id": "e-1", "order_id": "O-1"}, attributes={"order-id": "A-7"})
    with mock_aws():
        dynamodb = boto3.client("dynamodb")
        create_inbox_table(dynamodb, "inbox")
        create_key_table(dynamodb, "orders")
        response = namespace["consumer"].handle(sqs_event(sqs_record(body)), None)
        keys = [item["pk"]["S"] for item in dynamodb.scan(TableName="inbox")["Items"]]
    assert response == {"batchItemFailures": []}
    assert keys == ["orders#A-7"]


def created_once(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    """The `CreatesItem` consumer, on moto: a message delivered twice is one item that names
    its message, and no inbox record."""
    body = '{"order_id": "O-1", "tracking_number": "1Z9"}'
    with mock_aws():
        dynamodb = boto3.client("dynamodb")
        create_inbox_table(dynamodb, "inbox")
        create_domain_table(dynamodb, "shipments")
        for receive_count in (1, 2):
            record = sqs_record(body, message_id="m-1", receive_count=receive_count)
            assert namespace["consumer"].handle(sqs_event(record), None) == {
                "batchItemFailures": []
            }
        (item,) = dynamodb.scan(TableName="shipments")["Items"]
        assert dynamodb.scan(TableName="inbox")["Items"] == []
    assert item["pk"] == {"S": "ORDER#O-1"}
    assert item["inbox_consumer"] == {"S": "record-shipment"}


def create_key_table(dynamodb: Any, name: str, key: str = "pk") -> None:
    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
    )


def consumer_built(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    assert isinstance(namespace["consumer"], InboxConsumer)


def outbox_request_written(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    """The outbox request is one conditional `Put` in the domain table."""
    (action,) = namespace["uow"].actions
    assert (action.kind, action.table) == ("Put", "shop")


def _example_tests() -> ModuleType:
    spec = importlib.util.spec_from_file_location("invoices_example_tests", EXAMPLE_TESTS)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_moto(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """The kit's `local_app` fixture with the tables on its moto server (no Java)."""
    factory = request.getfixturevalue("local_app")
    return lambda template, **options: factory(template, dynamodb="moto", **options)


#: Enough invoices for several batches: the check's owed crashes, duplicates and new ids need more
#: than one invocation.
INVOICES = 12


def invoices_preamble(*, poison: bool) -> Callable[[pytest.FixtureRequest], Namespace]:
    """The example application's test helpers, its app on the kit's moto server, and its
    records (with `poison`, one invalid invoice too)."""

    def preamble(request: pytest.FixtureRequest) -> Namespace:
        example = _example_tests()
        app = on_moto(request)(EXAMPLE_TEMPLATE)
        arn = app.stack.queue("InvoicesQueue").arn
        bodies = [example.invoice(n, customer=f"C-{n % 4}") for n in range(INVOICES)]
        records = [example.sqs_record(body, arn=arn) for body in bodies]
        if poison:
            records.append(example.sqs_record(example.invoice(99, amount=0), arn=arn))
        return {
            "TEMPLATE": EXAMPLE_TEMPLATE,
            "invoice": example.invoice,
            "ledger": example.ledger,
            "app": app,
            "records": records,
        }

    return preamble


def redelivered_posted_once(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    namespace["test_an_invoice_redelivered_is_posted_once"](on_moto(request))


def checked_effectively_once(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    report = namespace["report"]
    assert report.duplicates and report.new_ids, report
    posted = Counter({f"INV-{n}": 1 for n in range(INVOICES)})
    assert namespace["ledger"](namespace["app"])[0] == posted


def security_preamble(request: pytest.FixtureRequest) -> Namespace:
    """The reader's own `decide` security.md's tenant-keyed consumer refers to."""

    def record_payment(payment: Mapping[str, Any], uow: UnitOfWork) -> None:
        uow.put("payments", {"pk": f"PAYMENT#{payment['tenant_id']}#{payment['event_id']}"})

    return {"record_payment": record_payment}


def keyed_by_tenant(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    """Two tenants' payments under one `event_id` are two records, each under its tenant."""
    bodies = [{"tenant_id": tenant, "event_id": "e-1"} for tenant in ("t-a", "t-b")]
    with mock_aws():
        dynamodb = boto3.client("dynamodb")
        create_inbox_table(dynamodb, "inbox")
        create_key_table(dynamodb, "payments")
        response = namespace["consumer"].handle(sqs_event(*map(sqs_record, bodies)), None)
        keys = sorted(item["pk"]["S"] for item in dynamodb.scan(TableName="inbox")["Items"])
    assert response == {"batchItemFailures": []}
    assert keys == ["payments#t-a/e-1", "payments#t-b/e-1"]


#: What docs/powertools.md's handlers run with: Powertools names every idempotency key after the
#: Lambda function, and the page's code is the module `app` (its `function="app.record_order"`).
POWERTOOLS_ENVIRONMENT = {
    "INBOX_TABLE": "inbox",
    "ORDERS_TABLE": "orders",
    "IDEMPOTENCY_TABLE": "idempotency",
    "AWS_LAMBDA_FUNCTION_NAME": "orders-function",
    "POWERTOOLS_TRACE_DISABLED": "true",
}


def powertools_tables() -> Any:
    """Under moto (the caller's `mock_aws`): the page's inbox, orders and idempotency tables."""
    dynamodb = boto3.client("dynamodb")
    create_inbox_table(dynamodb, "inbox")
    create_key_table(dynamodb, "orders")
    create_key_table(dynamodb, "idempotency", key="id")  # Powertools' default key attribute
    return dynamodb


def amounts(dynamodb: Any) -> dict[str, int]:
    """Each order's amount in the orders table: an order applied twice shows double."""
    items = dynamodb.scan(TableName="orders")["Items"]
    return {item["pk"]["S"]: int(item["amount_cents"]["N"]) for item in items}


def placed(n: int) -> dict[str, Any]:
    return {"event_id": f"evt-{n}", "order_id": f"O-{n}", "amount_cents": 100}


def sns_envelope_dedupes(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    """`envelope=envelopes.SnsSqsEnvelope`: SNS's redelivery of a notification under a new SQS
    messageId is a duplicate, as with `envelope="sns"`."""
    body = sns_notification(placed(1), message_id="notification-1")
    with mock_aws():
        dynamodb = powertools_tables()
        for _ in range(2):
            response = namespace["consumer"].handle(sqs_event(sqs_record(body)), None)
            assert response == {"batchItemFailures": []}
        assert amounts(dynamodb) == {"ORDER#O-1": 100}
        (record,) = dynamodb.scan(TableName="inbox")["Items"]  # one: the second is a duplicate
    assert record["pk"]["S"].endswith("/notification-1")


def one_request_and_effectively_once(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    """The migrated batch handler: 10 new records are one `TransactWriteItems`, their
    redelivery one `BatchGetItem`, and the kit's check finds every order applied once."""
    handler, processor = namespace["handler"], namespace["processor"]
    with mock_aws():
        dynamodb = powertools_tables()
        records = [sqs_record(placed(n)) for n in range(10)]
        meter = RequestMeter(processor.consumer.dynamodb)
        assert handler(sqs_event(*records), None) == {"batchItemFailures": []}
        assert meter.operations() == ["TransactWriteItems"]
        meter.clear()
        handler(sqs_event(*map(delivered_again, records)), None)
        assert meter.operations() == ["BatchGetItem"]
        meter.detach(processor.consumer.dynamodb)
    with mock_aws():
        dynamodb = powertools_tables()
        report = check_effectively_once(
            handler,
            [sqs_record(placed(n)) for n in range(12)],
            effects=lambda: {pk: cents // 100 for pk, cents in amounts(dynamodb).items()},
            key=lambda record: f"ORDER#{payload(record)['order_id']}",
            clients=[processor.consumer.dynamodb],
            seed=7,
        )
    assert report.duplicates and report.new_ids and report.crashes


def cut_over_applies_nothing_twice(namespace: Namespace, request: pytest.FixtureRequest) -> None:
    """The cut-over on the page's own code: ten orders applied by the "before" handler (its
    block run again, as it ran in production), one left in progress by a crash, then all of
    them delivered again to the migrated handler, with new ones: each order applied once."""
    before_block = PAGES["docs/powertools.md"][1]
    before: Namespace = {"__name__": "app"}
    with mock_aws():
        dynamodb = powertools_tables()
        exec(before_block.compiled(), before)  # the page's own code, as it ran before
        first = [sqs_record(placed(n)) for n in range(10)]
        assert before["handler"](sqs_event(*first), FakeLambdaContext()) == {
            "batchItemFailures": []
        }
        crashed = placed(10)  # in progress when its invocation died: its write never happened
        before["persistence"].save_inprogress(data=crashed, remaining_time_in_millis=1)
        statuses = {i["status"]["S"] for i in dynamodb.scan(TableName="idempotency")["Items"]}
        assert statuses == {"COMPLETED", "INPROGRESS"}
        migration = namespace["migration"]
        stored = {i["id"]["S"] for i in dynamodb.scan(TableName="idempotency")["Items"]}
        keys = {migration.idempotency_key(SQSRecord(sqs_record(placed(n)))) for n in range(11)}
        assert stored == keys  # Powertools' own ids, computed again by the bridge
        handler = namespace["handler"]
        for batch in (
            [sqs_record(placed(n)) for n in range(10)],
            [sqs_record(placed(n)) for n in range(10, 15)],
        ):
            assert handler(sqs_event(*batch), None) == {"batchItemFailures": []}
        assert amounts(dynamodb) == {f"ORDER#O-{n}": 100 for n in range(15)}
        again = [sqs_record(placed(n)) for n in range(15)]
        for batch in (again[:10], again[10:]):
            assert handler(sqs_event(*batch), None) == {"batchItemFailures": []}
        assert amounts(dynamodb) == {f"ORDER#O-{n}": 100 for n in range(15)}


def one_emf_document_and_the_function_s_logger(
    namespace: Namespace, request: pytest.FixtureRequest
) -> None:
    """The function's metric and the inbox's in one EMF document; the inbox's log lines through
    the function's `Logger`, with its service and the Lambda context's keys."""
    capsys = request.getfixturevalue("capsys")
    logs = io.StringIO()  # the Logger's handler holds the stream it was made with (maybe closed)
    handler = namespace["logger"].registered_handler
    made_with, handler.stream = handler.stream, logs
    try:
        with mock_aws():
            powertools_tables()
            capsys.readouterr()
            event = sqs_event(*(sqs_record(placed(n)) for n in range(3)))
            assert namespace["handler"](event, FakeLambdaContext()) == {"batchItemFailures": []}
    finally:
        handler.stream = made_with
    (document,) = emf_records(capsys.readouterr().out)
    names = {m["Name"] for m in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert {"OrdersReceived", "MessagesCommitted", "Transactions"} <= names
    lines = [json.loads(line) for line in logs.getvalue().splitlines()]
    batch = [line for line in lines if line["message"] == "batch processed"]
    assert batch and batch[0]["service"] == "orders"
    assert batch[0]["function_name"] == "lambda-inbox-local"  # inject_lambda_context's key


SESSIONS: dict[str, PageSession] = {
    "README.md": PageSession({"INBOX_TABLE": "inbox"}, after={1: front_page_consumer}),
    "docs/index.md": PageSession({"INBOX_TABLE": "inbox"}, after={1: front_page_consumer}),
    "docs/getting-started.md": PageSession(
        {"INBOX_TABLE": "inbox", "DOMAIN_TABLE": "ledger"},
        getting_started_preamble,
        after={1: reads_inside_the_notification, 2: writes_the_outbox_item, 3: books_and_holds},
    ),
    "docs/concepts.md": PageSession(
        {"INBOX_TABLE": "inbox"},
        concepts_preamble,
        after={
            1: created_once,
            2: keyed_by_the_sns_attribute,
            3: consumer_built,
            4: outbox_request_written,
            5: consumer_built,
        },
    ),
    "docs/example-application.md": PageSession(
        preamble=invoices_preamble(poison=True), after={1: checked_effectively_once}
    ),
    "docs/testing.md": PageSession(
        preamble=invoices_preamble(poison=False),
        after={1: redelivered_posted_once, 2: checked_effectively_once},
    ),
    "docs/powertools.md": PageSession(
        POWERTOOLS_ENVIRONMENT,
        lambda request: {"__name__": "app"},
        after={
            1: sns_envelope_dedupes,
            3: one_request_and_effectively_once,
            4: cut_over_applies_nothing_twice,
            5: one_emf_document_and_the_function_s_logger,
        },
    ),
    "docs/security.md": PageSession(
        {"INBOX_TABLE": "inbox"}, security_preamble, after={1: keyed_by_tenant}
    ),
}


def pages_with_snippets() -> dict[str, list[Snippet]]:
    found = {}
    for page in doc_pages(REPO_ROOT):
        if blocks := snippets(page, REPO_ROOT):
            found[str(page.relative_to(REPO_ROOT))] = blocks
    return found


PAGES = pages_with_snippets()


@pytest.fixture
def session_environment(monkeypatch: pytest.MonkeyPatch) -> Callable[[Mapping[str, str]], None]:
    def apply(environment: Mapping[str, str]) -> None:
        for key, value in environment.items():
            monkeypatch.setenv(key, value)

    return apply


def run_page(
    name: str, request: pytest.FixtureRequest, apply: Callable[[Mapping[str, str]], None]
) -> int:
    blocks = PAGES[name]
    session = SESSIONS.get(name, PageSession())
    apply(session.environment)
    after = {n: (lambda ns, c=check: c(ns, request)) for n, check in session.after.items()}
    return run_session(blocks, session.preamble(request), after)


# ---- every page ----------------------------------------------------------------------------


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_page_s_snippets_run(
    page: str,
    request: pytest.FixtureRequest,
    session_environment: Callable[[Mapping[str, str]], None],
) -> None:
    blocks = PAGES[page]
    ran = run_page(page, request, session_environment)
    skipped = [block for block in blocks if block.skip]
    assert ran + sum(1 for block in blocks if block.file) + len(skipped) == len(blocks)
    assert set(SESSIONS.get(page, PageSession()).after) <= set(range(1, ran + 1))


PROJECT_PAGES = sorted(page for page, blocks in PAGES.items() if project_files(blocks))


@pytest.mark.integration  # a pytest process per page
@pytest.mark.parametrize("page", PROJECT_PAGES)
def test_the_page_s_project_passes_its_own_tests(page: str, tmp_path: Path) -> None:
    run_project(project_files(PAGES[page]), tmp_path)


SKIPPED = [block for blocks in PAGES.values() for block in blocks if block.skip]

if SKIPPED:  # each block left out is reported as skipped, with its reason (`pytest -ra`)

    @pytest.mark.parametrize("block", SKIPPED, ids=[block.where for block in SKIPPED])
    def test_a_snippet_that_does_not_run_says_why(block: Snippet) -> None:
        pytest.skip(f"{block.where}: {block.skip}")


def test_the_docs_hold_the_snippets_this_module_runs() -> None:
    """A page named here keeps its Python blocks (a session for a page without them is stale),
    and the pages people copy from most are among them."""
    assert set(SESSIONS) <= set(PAGES)
    assert {"README.md", "docs/getting-started.md", "docs/testing.md"} <= set(PAGES)


# ---- the runner catches a broken snippet ---------------------------------------------------


def _page(tmp_path: Path, text: str) -> list[Snippet]:
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "planted.md").write_text(text)
    return snippets(tmp_path / "docs" / "planted.md", tmp_path)


def test_a_snippet_that_raises_fails_at_its_line(tmp_path: Path) -> None:
    blocks = _page(
        tmp_path,
        "# Planted\n\n```python\nx = 1\n```\n\nText.\n\n```python\ny = x\nz = y / 0\n```\n",
    )
    with pytest.raises(SnippetFailed, match=r"docs/planted.md:10: ZeroDivisionError") as caught:
        run_session(blocks, {})
    frames = [frame.tb_lineno for frame in _traceback(caught.value.__cause__)]
    assert frames[-1] == 11  # the page's own line


def _traceback(error: BaseException | None) -> Iterator[Any]:
    assert error is not None
    tb = error.__traceback__
    while tb is not None:
        yield tb
        tb = tb.tb_next


def test_a_later_block_sees_the_earlier_blocks_and_the_preamble(tmp_path: Path) -> None:
    blocks = _page(tmp_path, "```python\nx = given + 1\n```\n\n```python\ny = x * 2\n```\n")
    namespace: Namespace = {"given": 1}
    assert run_session(blocks, namespace) == 2
    assert namespace["y"] == 4


def test_a_snippet_that_imports_a_private_name_fails(tmp_path: Path) -> None:
    blocks = _page(
        tmp_path, "```python\nfrom lambda_inbox._commit.unit_of_work import UnitOfWork\n```\n"
    )
    with pytest.raises(SnippetFailed, match="imports private names"):
        run_session(blocks, {})
    with pytest.raises(SnippetFailed, match="imports private names"):
        run_project({"tests/test_x.py": blocks[0].source}, tmp_path / "project")


def test_a_preamble_that_gives_a_library_name_fails(tmp_path: Path) -> None:
    blocks = _page(tmp_path, "```python\nuow = UnitOfWork()\n```\n")
    with pytest.raises(SnippetFailed, match=r"library names \['UnitOfWork'\]"):
        run_session(blocks, {"UnitOfWork": UnitOfWork})


def test_a_skip_without_its_reason_is_refused(tmp_path: Path) -> None:
    for note in ("skip", "skip:", "skip:   ", "skipped because"):
        with pytest.raises(SnippetNoteError, match="must say why"):
            _page(tmp_path, f"<!-- snippet: {note} -->\n```python\nraise SystemExit\n```\n")


def test_an_unknown_or_stray_annotation_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SnippetNoteError, match="unknown snippet annotation"):
        _page(tmp_path, "<!-- snippet: later -->\n```python\nx = 1\n```\n")
    with pytest.raises(SnippetNoteError, match="on no Python block"):
        _page(tmp_path, "<!-- snippet: skip: needs AWS -->\n```bash\nsam deploy\n```\n")


def test_a_skipped_block_is_counted_not_run(tmp_path: Path) -> None:
    blocks = _page(
        tmp_path,
        "<!-- snippet: skip: needs a deployed stack -->\n```python\nraise SystemExit\n```\n\n"
        "```python\nx = 1\n```\n",
    )
    assert [block.skip for block in blocks] == ["needs a deployed stack", None]
    assert run_session(blocks, {}) == 1


PLANTED_PROJECT = (
    "<!-- snippet: file src/app.py -->\n```python\ndef double(x):\n    return x + x\n```\n\n"
    "<!-- snippet: file tests/test_app.py -->\n```python\nimport app\n\n\n"
    "def test_double():\n    assert app.double(2) == {expected}\n```\n"
)
PLANTED_PYPROJECT = '<!-- snippet: file pyproject.toml -->\n```toml\n[tool.pytest.ini_options]\npythonpath = ["src"]\n```\n'


@pytest.mark.integration  # a pytest process
def test_a_project_whose_test_fails_fails(tmp_path: Path) -> None:
    blocks = _page(tmp_path, PLANTED_PROJECT.format(expected=5) + PLANTED_PYPROJECT)
    assert [block.file for block in blocks] == ["src/app.py", "tests/test_app.py", "pyproject.toml"]
    assert blocks[2].language == "toml"
    with pytest.raises(SnippetFailed, match="1 failed"):
        run_project(project_files(blocks), tmp_path / "project")
    run_project(
        project_files(_page(tmp_path, PLANTED_PROJECT.format(expected=4) + PLANTED_PYPROJECT)),
        tmp_path / "passing",
    )


@pytest.mark.integration  # a pytest process
def test_a_project_that_does_not_say_where_its_code_is_fails(tmp_path: Path) -> None:
    """The runner puts no code folder on the path: a page whose tests import `src/app.py`
    without saying so (pytest's `pythonpath`) fails here as it fails for its reader."""
    blocks = _page(tmp_path, PLANTED_PROJECT.format(expected=4))
    with pytest.raises(SnippetFailed, match="No module named 'app'"):
        run_project(project_files(blocks), tmp_path / "project")


def test_a_yaml_or_toml_block_is_a_project_file_only_when_it_names_one(tmp_path: Path) -> None:
    blocks = _page(tmp_path, "```yaml\nkey: value\n```\n\n```toml\n[x]\n```\n")
    assert blocks == []
    with pytest.raises(SnippetNoteError, match="on no Python block"):
        _page(tmp_path, "<!-- snippet: skip: later -->\n```yaml\nkey: value\n```\n")


def test_a_block_in_a_list_item_runs_without_its_indentation(tmp_path: Path) -> None:
    blocks = _page(
        tmp_path,
        "1. Step:\n\n    ```python\n    x = 1\n    if x:\n        y = 2\n    ```\n\n"
        "2. Then:\n\n    <!-- snippet: skip: needs an AWS account -->\n    ```python\n"
        "    boto3.client('sts').get_caller_identity()\n    ```\n",
    )
    assert [(block.line, block.skip) for block in blocks] == [
        (4, None),
        (13, "needs an AWS account"),
    ]
    namespace: Namespace = {}
    assert run_session(blocks, namespace) == 1
    assert namespace["y"] == 2


@pytest.mark.parametrize(
    "fence", ["```py", "```python3", "```pycon", '```python title="app.py"', "```{.python}"]
)
def test_a_python_block_the_runner_would_not_find_is_refused(tmp_path: Path, fence: str) -> None:
    with pytest.raises(SnippetNoteError, match="fence a Python block as"):
        _page(tmp_path, f"Text.\n\n{fence}\nx = 1\n```\n")
