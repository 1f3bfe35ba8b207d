"""Generate the sample Lambda events in this directory.

The output is deterministic: IDs, receipt handles and timestamps are derived from fixed seeds, and
md5OfBody / base64 values are computed from the bodies, so running this script reproduces the
committed JSON files byte for byte.

    python events/generate.py           # rewrite the JSON files next to this script
    python events/generate.py --check   # exit 1 if any committed file differs from the output

Standard library only, but for msk-payment-formats.json (`formats.py`: the avro and protobuf
libraries, extra kafka-codecs); no AWS access.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from builders import HERE
from catalogue import (
    ddb_outbox_notifications,
    msk_payment_hot_customer,
    msk_payment_multi_partition,
    msk_payment_poison,
    msk_payment_single,
    schedule_reaper_run,
    sqs_notification_batch_duplicates,
    sqs_notification_poison,
    sqs_notification_single,
    sqs_order_batch_duplicates,
    sqs_order_fifo,
    sqs_order_insufficient_stock,
    sqs_order_poison,
    sqs_order_single,
    sqs_payment_replay,
)
from formats import msk_payment_formats

# --------------------------------------------------------------------------- output

EVENTS = {
    "sqs-order-single.json": sqs_order_single,
    "sqs-order-batch-duplicates.json": sqs_order_batch_duplicates,
    "sqs-order-poison.json": sqs_order_poison,
    "sqs-order-fifo.json": sqs_order_fifo,
    "sqs-order-insufficient-stock.json": sqs_order_insufficient_stock,
    "msk-payment-single.json": msk_payment_single,
    "msk-payment-multi-partition.json": msk_payment_multi_partition,
    "msk-payment-poison.json": msk_payment_poison,
    "msk-payment-hot-customer.json": msk_payment_hot_customer,
    "msk-payment-formats.json": msk_payment_formats,
    "sqs-payment-replay.json": sqs_payment_replay,
    "sqs-notification-single.json": sqs_notification_single,
    "sqs-notification-batch-duplicates.json": sqs_notification_batch_duplicates,
    "sqs-notification-poison.json": sqs_notification_poison,
    "schedule-reaper-run.json": schedule_reaper_run,
    "ddb-outbox-notifications.json": ddb_outbox_notifications,
}

_INT_LIST = re.compile(r"\[\n\s+(-?\d+(?:,\n\s+-?\d+)*)\n\s*\]")


def render(event: dict[str, Any]) -> str:
    """Two-space indented JSON; lists of ints (Kafka header bytes) are kept on one line."""
    text = json.dumps(event, indent=2)
    text = _INT_LIST.sub(lambda m: "[" + ", ".join(re.split(r",\s+", m.group(1))) + "]", text)
    return text + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    stale = []
    for name, build in EVENTS.items():
        path = HERE / name
        text = render(build())
        assert json.loads(text) == build()
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
