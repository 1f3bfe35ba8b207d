"""Credits each deposit to its account once, through the inbox, from the Kinesis stream and from
the replay queue. A deposit whose `account` is "broken" fails until the file FIXED_MARKER names
exists (the fix deployed); "flaky" fails the first time it is decided only."""

import os

from pydantic import BaseModel, Field

from lambda_inbox import InboxConsumer, UnitOfWork

LEDGER_TABLE = os.environ["LEDGER_TABLE"]
raised: set[str] = set()


class Deposit(BaseModel):
    event_id: str = Field(min_length=1)
    account: str = Field(min_length=1)
    amount: int = Field(gt=0)


def credit(deposit: Deposit, uow: UnitOfWork) -> None:
    broken = deposit.account == "broken" and not os.path.exists(os.environ["FIXED_MARKER"])
    if broken or (deposit.account == "flaky" and deposit.event_id not in raised):
        raised.add(deposit.event_id)
        raise RuntimeError(f"cannot credit {deposit.event_id}")
    uow.update(
        LEDGER_TABLE,
        {"pk": f"ACCOUNT#{deposit.account}", "sk": "BALANCE"},
        "ADD balance :amount, deposits :one",
        values={":amount": deposit.amount, ":one": 1},
    )


consumer = InboxConsumer("deposits", model=Deposit, decide=credit, key="event_id")


def handler(event: dict[str, object], context: object) -> dict[str, object]:
    return consumer.handle(event, context)
