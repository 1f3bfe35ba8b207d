"""msk-payment-formats.json: payments in Avro and Protobuf, as MSK teams send them.

Encoded with the payment function's own schemas (`functions/payment_events/schemas/`) by the
avro and protobuf libraries (`pip install 'lambda-inbox[kafka-codecs]'`), which the rest of
this directory does not need. The encodings are deterministic, so the file is reproducible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builders import BASE_MS, HERE, kafka_record, msk_event, payment

SCHEMAS = HERE.parent / "functions" / "payment_events" / "schemas"


def _avro(record: dict[str, Any], schema_id: int | None) -> bytes:
    from lambda_inbox_tools.testing.values import avro_value

    return avro_value(Path(SCHEMAS / "payment_captured.avsc"), record, schema_id=schema_id)


def _protobuf(record: dict[str, Any], schema_id: int | None) -> bytes:
    from lambda_inbox._sources.values import generated_message
    from lambda_inbox_tools.testing.values import protobuf_value

    return protobuf_value(
        generated_message(SCHEMAS / "payment_captured_pb2.py", "PaymentCaptured")()(**record),
        schema_id=schema_id,
    )


def msk_payment_formats() -> dict[str, Any]:
    """Four payments, one per way a binary value arrives (Avro and Protobuf, each in the Confluent
    wire format and as a schema registry in SOURCE mode hands it over), and one framed value that
    does not decode (poison)."""
    t = BASE_MS + 900_000
    avro_framed = payment(701, 1701, "cust-011", 1500)
    protobuf_framed = payment(702, 1702, "cust-011", 2500)
    avro_registry = payment(703, 1703, "cust-012", 700)
    protobuf_registry = payment(704, 1704, "cust-012", 300)
    records = [
        kafka_record(
            partition=0,
            offset=40,
            timestamp_ms=t,
            key="ord-1701",
            value=_avro(avro_framed, schema_id=11),
        ),
        kafka_record(
            partition=0,
            offset=41,
            timestamp_ms=t + 10,
            key="ord-1702",
            value=_protobuf(protobuf_framed, schema_id=12),
        ),
        kafka_record(
            partition=1,
            offset=7,
            timestamp_ms=t + 20,
            key="ord-1703",
            value=_avro(avro_registry, schema_id=None),
        ),
        kafka_record(
            partition=1,
            offset=8,
            timestamp_ms=t + 30,
            key="ord-1704",
            value=b"\x00" + _protobuf(protobuf_registry, schema_id=None),
        ),
        kafka_record(
            partition=1,
            offset=9,
            timestamp_ms=t + 40,
            key="ord-1705",
            value=b"\x00\x00\x00\x00\x0b\x0a\xff\xff",
        ),
    ]
    records[2]["valueSchemaMetadata"] = {"dataFormat": "AVRO", "schemaId": "11"}
    records[3]["valueSchemaMetadata"] = {"dataFormat": "PROTOBUF", "schemaId": "12"}
    return msk_event(records)
