"""The example application's AWS resources in one place (inbox and domain tables, dead-letter
queues) and readers of their state. The same on moto, DynamoDB Local and the moto server."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from devkit import items
from devkit.tables import create_domain_table, create_inbox_table, seed_stock
from lambda_inbox import (
    Clients,
    GroupCommit,
    InboxConfig,
    InboxConsumer,
    Retention,
    SourceSettings,
    UnitOfWork,
)
from lambda_inbox.store import PARTITION_KEY, record_pk
from lambda_inbox_tools.services import queues

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

#: The principal whose copies of a dead letter the consumers believe (INBOX_TRUSTED_REDRIVERS):
#: a test redrives through moto (or `devkit.memory_aws`), and every message there has moto's one
#: SenderId, the operator's copies included, as the template's `RedriverPrincipalId` makes one.
REDRIVER = queues.MOTO_SENDER_ID
#: The consumer names of the example functions (the prefix of their inbox keys).
ORDER_EVENTS = "order-events"
PAYMENT_EVENTS = "payment-events"


#: `InboxConfig`'s groups, and the group each of their fields belongs to (`AppState.consumer`).
_GROUPS: dict[str, type[Retention | GroupCommit | SourceSettings]] = {
    "retention": Retention,
    "commit": GroupCommit,
    "sources": SourceSettings,
}
_GROUP_OF = {field: group for group, kind in _GROUPS.items() for field in kind.__slots__}


@dataclass(frozen=True)
class AppState:
    """Tables, queues and the clients bound to them, with readers of what the functions wrote.

    `endpoints` ("dynamodb", "sqs" -> URL) are the local endpoints the functions must use; empty
    under in-process moto, which needs none.
    """

    dynamodb: DynamoDBClient
    sqs: SQSClient
    inbox: str
    domain: str
    dlq_url: str
    fifo_dlq_url: str | None = None
    endpoints: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def created(
        cls, dynamodb: DynamoDBClient, sqs: SQSClient, *, dlq: str = "inbox-dlq"
    ) -> AppState:
        """Create the tables `inbox` and `domain` and the dead-letter queues `dlq` and
        `dlq.fifo` with these clients (moto, or `devkit.memory_aws`)."""
        create_inbox_table(dynamodb, "inbox")
        create_domain_table(dynamodb, "domain")
        return cls(
            dynamodb,
            sqs,
            inbox="inbox",
            domain="domain",
            dlq_url=queues.create_queue(sqs, dlq),
            fifo_dlq_url=queues.create_queue(sqs, f"{dlq}.fifo"),
        )

    def function_environment(self) -> dict[str, str]:
        """What the example functions read at import: INBOX_TABLE, DOMAIN_TABLE,
        DEAD_LETTER_QUEUE_URL, INBOX_TRUSTED_REDRIVERS (`REDRIVER`) and the
        `AWS_ENDPOINT_URL_*` of `endpoints`."""
        env = {
            "INBOX_TABLE": self.inbox,
            "DOMAIN_TABLE": self.domain,
            "DEAD_LETTER_QUEUE_URL": self.dlq_url,
            "INBOX_TRUSTED_REDRIVERS": REDRIVER,
        }
        for service, url in self.endpoints.items():
            env[f"AWS_ENDPOINT_URL_{service.upper()}"] = url
        return env

    def consumer(
        self, name: str, *, config: Mapping[str, Any] | None = None, **options: Any
    ) -> InboxConsumer[Any]:
        """An `InboxConsumer` named `name` on these tables, this dead-letter queue and these
        clients, trusting `REDRIVER`'s copies of dead letters. `config` overrides `InboxConfig`'s
        parameters (e.g. `retry`, `dead_letter_queue_url=None`) or a field of one of its groups
        by the field's name (`Retention`, `GroupCommit`, `SourceSettings`: e.g.
        `fifo_failure_mode`, `trusted_redrivers=()`); `options` are `InboxConsumer`'s (`model`,
        `decide`, `key`, `leased`, `observability`)."""
        settings: dict[str, Any] = {
            "consumer": name,
            "inbox_table": self.inbox,
            "dead_letter_queue_url": self.dlq_url,
        }
        fields: dict[str, Any] = {"trusted_redrivers": (REDRIVER,)}
        for setting, value in (config or {}).items():
            (fields if setting in _GROUP_OF else settings)[setting] = value
        for group, kind in (
            ("retention", Retention),
            ("commit", GroupCommit),
            ("sources", SourceSettings),
        ):
            chosen = {field: value for field, value in fields.items() if _GROUP_OF[field] == group}
            if chosen:
                settings[group] = settings.get(group, kind()).replace(**chosen)
        clients = Clients(dynamodb=self.dynamodb, sqs=self.sqs)
        return InboxConsumer(name, config=InboxConfig(**settings), clients=clients, **options)

    # ---- domain table ----------------------------------------------------------------------

    def seed_stock(self, stock: Mapping[str, int]) -> None:
        """Put `SKU#{sku}` / `STOCK` items: `available` = the given amount, `reserved` = 0."""
        seed_stock(self.dynamodb, self.domain, stock)

    def item(self, pk: str, sk: str) -> dict[str, Any] | None:
        """A domain item (attribute values), None when absent."""
        return items.get_item(self.dynamodb, self.domain, {"pk": pk, "sk": sk})

    def count_applied(self, uow: UnitOfWork, name: str) -> None:
        """Adds one to `name`'s count of applications in `uow` (an ADD: a second commit shows)."""
        key = {"pk": f"ORDER#{name}", "sk": "A"}
        uow.update(self.domain, key, "ADD applied :one", values={":one": 1})

    def applied(self, name: str) -> int:
        """How many committed transactions counted `name` (`count_applied`)."""
        item = self.item(f"ORDER#{name}", "A")
        return 0 if item is None else int(item["applied"]["N"])

    def scan(self, table: str) -> list[dict[str, Any]]:
        """Every item of `table` (attribute values)."""
        return items.scan_items(self.dynamodb, table)

    def domain_items(self) -> list[dict[str, Any]]:
        """Every domain item, as plain values."""
        return [items.plain(item) for item in self.scan(self.domain)]

    def stock(self, sku: str) -> tuple[int, int] | None:
        """(available, reserved) of a SKU, None if it has no stock item."""
        return items.stock_of(self.dynamodb, self.domain, sku)

    def balance(self, customer: str) -> tuple[int, int]:
        """(balance_cents, payments) of a customer, (0, 0) without a balance item."""
        return items.balance_of(self.dynamodb, self.domain, customer)

    def balances(self) -> dict[str, tuple[int, int]]:
        """(balance_cents, payments) of every customer with a balance item."""
        return items.balances(self.dynamodb, self.domain)

    def order_records(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Every ORDER# item as plain values, by (order_id, "SHIPMENT" | "REJECTION")."""
        return {
            (item["pk"].removeprefix("ORDER#"), item["sk"]): item
            for item in self.domain_items()
            if item["pk"].startswith("ORDER#")
        }

    def payment_items(self) -> dict[str, dict[str, Any]]:
        """Every PAYMENT# item as plain values, by payment id."""
        return {
            item["sk"].removeprefix("PAYMENT#"): item
            for item in self.domain_items()
            if item["sk"].startswith("PAYMENT#")
        }

    # ---- inbox table -----------------------------------------------------------------------

    def inbox_record(self, consumer: str, key: str) -> dict[str, Any] | None:
        """The inbox record of `consumer` for message key `key` (attribute values)."""
        return items.get_item(self.dynamodb, self.inbox, {PARTITION_KEY: record_pk(consumer, key)})

    def inbox_records(self, consumer: str | None = None) -> dict[str, dict[str, Any]]:
        """Every inbox record as plain values, by message key. With `consumer`, every record of
        the table must be one of its records (AssertionError otherwise)."""
        records: dict[str, dict[str, Any]] = {}
        for item in map(items.plain, self.scan(self.inbox)):
            if consumer is not None:
                assert item["pk"] == f"{consumer}#{item['message_key']}", item["pk"]
            records[item["message_key"]] = item
        return records

    def inbox_statuses(self) -> dict[str, str]:
        """The status of every inbox record, by message key."""
        return {key: record["status"] for key, record in self.inbox_records().items()}

    # ---- dead-letter queues ----------------------------------------------------------------

    def dead_letters(self, *, fifo: bool = False) -> list[MessageTypeDef]:
        """Drain the dead-letter queue (the FIFO one with `fifo`): every message in it, with all
        attributes, deleted once received."""
        url = self.fifo_dlq_url if fifo else self.dlq_url
        assert url is not None, "no FIFO dead-letter queue"
        return queues.receive_all(self.sqs, url, delete=True)

    def dead_letter_count(self) -> int:
        """The messages waiting in the dead-letter queue."""
        return queues.queue_depth(self.sqs, self.dlq_url)

    def assert_dlq_empty(self) -> None:
        """Nothing waits in the dead-letter queue, nothing is in flight there."""
        assert queues.queue_depth(self.sqs, self.dlq_url, in_flight=True) == 0
        assert self.dead_letters() == []
