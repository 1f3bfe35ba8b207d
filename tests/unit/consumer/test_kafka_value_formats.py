"""payment-events reads JSON, Avro and Protobuf values (moto): with and without the Confluent
prefix, as the event source's schema registry hands them over, and replayed through SQS."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.events import (
    PAYMENT_REPLAY_QUEUE_ARN,
    kafka_event,
    kafka_record,
    load_event,
    sqs_event,
    sqs_record_from,
)
from devkit.paths import FUNCTIONS_DIR
from devkit.payloads import payment
from lambda_inbox import (
    ConfigurationError,
    InboxConfig,
    InboxConsumer,
    PoisonMessage,
    SourceSettings,
    ValueFormats,
)
from lambda_inbox_tools.testing.values import avro_value, json_value, protobuf_value

SCHEMAS = FUNCTIONS_DIR / "payment_events" / "schemas"
AVSC = SCHEMAS / "payment_captured.avsc"


def proto(module: ModuleType, body: dict[str, Any]) -> Any:
    return module.VALUE_FORMATS.protobuf_class()(**body)


def encoded(module: ModuleType, fmt: str, body: dict[str, Any], schema_id: int | None) -> bytes:
    if fmt == "AVRO":
        return avro_value(AVSC, body, schema_id=schema_id)
    if fmt == "PROTOBUF":
        return protobuf_value(proto(module, body), schema_id=schema_id)
    return json_value(body, schema_id=schema_id)


@pytest.mark.parametrize("fmt", ["JSON", "AVRO", "PROTOBUF"])
@pytest.mark.parametrize("framing", ["confluent prefix", "schema registry metadata"])
def test_each_format_commits_through_payment_events(
    aws: AppState, payment_events: ModuleType, fmt: str, framing: str
) -> None:
    body = payment(1, "cust-f", 1250)
    if framing == "confluent prefix":
        record = kafka_record(0, 7, encoded(payment_events, fmt, body, schema_id=42))
    else:  # SOURCE mode: the prefix stripped, the format said in valueSchemaMetadata
        value = encoded(payment_events, fmt, body, schema_id=None)
        if fmt == "PROTOBUF":  # a Confluent registry: the message indexes stay in front
            value = b"\x00" + value
        record = kafka_record(0, 7, value, value_schema={"dataFormat": fmt, "schemaId": "42"})

    assert payment_events.handler(kafka_event([record]), None) == {"batchItemFailures": []}

    assert aws.balance("cust-f") == (1250, 1)
    assert aws.inbox_records()["evt-1"]["status"] == "COMPLETED"
    aws.assert_dlq_empty()


def test_a_glue_registry_protobuf_value_decodes(aws: AppState, payment_events: ModuleType) -> None:
    """AWS Glue's registry: a UUID schema id, one byte before the record (Powertools' rule)."""
    value = b"\x00" + protobuf_value(proto(payment_events, payment(2, "cust-g", 300)))
    metadata = {"dataFormat": "PROTOBUF", "schemaId": "1ccd1b6c-2b5a-4a0f-9d3f-4f1a0c4b6f7e"}
    record = kafka_record(0, 1, value, value_schema=metadata)
    assert payment_events.handler(kafka_event([record]), None) == {"batchItemFailures": []}
    assert aws.balance("cust-g") == (300, 1)


def test_the_same_record_framed_and_stripped_is_a_duplicate(
    aws: AppState, payment_events: ModuleType
) -> None:
    """The fingerprint is the decoded record's, not the framing's: the same payment delivered
    with the prefix and again through a schema registry is a duplicate, not a mismatch."""
    body = payment(3, "cust-d", 500)
    framed = kafka_record(0, 1, avro_value(AVSC, body, schema_id=9))
    stripped = kafka_record(
        0, 2, avro_value(AVSC, body), value_schema={"dataFormat": "AVRO", "schemaId": "9"}
    )
    results = [
        payment_events.consumer.process(payment_events.consumer.sources[0].messages(event))
        for event in (kafka_event([framed]), kafka_event([stripped]))
    ]
    assert [r.outcome.value for batch in results for r in batch] == ["committed", "duplicate"]
    assert aws.balance("cust-d") == (500, 1)


def test_a_value_that_does_not_decode_is_dead_lettered_with_its_bytes_and_the_partition_goes_on(
    aws: AppState, payment_events: ModuleType
) -> None:
    garbage = b"\x00\x00\x00\x00\x2a" + b"\x0a\xff\xff\xff"  # framed, not a PaymentCaptured
    good = avro_value(AVSC, payment(4, "cust-u", 900), schema_id=42)
    metadata = {"dataFormat": "AVRO", "schemaId": "42"}
    event = kafka_event(
        [
            kafka_record(0, 1, garbage),
            kafka_record(0, 2, b"\x02", value_schema=metadata),  # a truncated Avro record
            kafka_record(0, 3, good),
        ]
    )

    assert payment_events.handler(event, None) == {"batchItemFailures": []}

    assert aws.balance("cust-u") == (900, 1)
    letters = {m["MessageAttributes"]["kafka-offset"]["StringValue"]: m for m in aws.dead_letters()}
    assert set(letters) == {"1", "2"}
    for letter in letters.values():
        assert letter["MessageAttributes"]["inbox-error-code"]["StringValue"] == (
            "undecodable_value"
        )
    # The original bytes, recoverable: base64 in the body, as the envelope says.
    assert letters["1"]["MessageAttributes"]["inbox-body-encoding"]["StringValue"] == "base64"
    assert "does not decode" in letters["2"]["MessageAttributes"]["inbox-error"]["StringValue"]
    assert letters["2"]["MessageAttributes"]["kafka-value-format"]["StringValue"] == "AVRO"


def test_a_dead_lettered_avro_value_replays_through_sqs_and_commits_once(
    aws: AppState, payment_events: ModuleType
) -> None:
    """An Avro payment dead-lettered by a handler bug comes back through the replay queue: the
    SQS path reads the same bytes as Avro (the dead letter says so), commits it, and Kafka
    redelivering the original offset afterwards is a duplicate."""
    body = payment(5, "cust-r", 700)
    record = kafka_record(
        0, 5, avro_value(AVSC, body), value_schema={"dataFormat": "AVRO", "schemaId": "7"}
    )

    def reject(payment_: Any, uow: Any) -> None:
        raise PoisonMessage("a bug, since fixed")

    buggy: InboxConsumer[Any] = InboxConsumer(
        "payment-events",
        model=payment_events.PaymentCaptured,
        decide=reject,
        key="event_id",
        config=InboxConfig.from_env(
            "payment-events", sources=SourceSettings(value_formats=payment_events.VALUE_FORMATS)
        ),
    )
    assert buggy.handle(kafka_event([record])) == {"batchItemFailures": []}
    (letter,) = aws.dead_letters()

    replay = sqs_event(sqs_record_from(letter, arn=PAYMENT_REPLAY_QUEUE_ARN, message_id="r-1"))
    assert payment_events.handler(replay, None) == {"batchItemFailures": []}
    assert payment_events.handler(kafka_event([record]), None) == {"batchItemFailures": []}

    assert aws.balance("cust-r") == (700, 1)
    assert aws.inbox_records()["evt-5"]["status"] == "COMPLETED"


def test_json_only_consumers_read_values_as_before() -> None:
    formats = ValueFormats()
    value = json.dumps(payment(6)).encode()
    assert formats.classify(value).format == "JSON"
    assert formats.classify(value).record is value  # nothing to decode differently
    framed = formats.classify(json_value(payment(6), schema_id=3))
    assert (framed.format, framed.schema_id) == ("JSON", "3")
    assert formats.decode(framed) == payment(6)


def test_configuration_errors_are_clear() -> None:
    with pytest.raises(ConfigurationError, match="needs avro_schema"):
        ValueFormats(default="AVRO")
    with pytest.raises(ConfigurationError, match="not JSON"):
        ValueFormats(avro_schema="{not json")
    with pytest.raises(ConfigurationError, match="default must be one of"):
        ValueFormats(default="XML")  # type: ignore[arg-type]


def test_value_formats_are_settings_equal_by_value_frozen_and_replaced_with_checks() -> None:
    from google.protobuf.struct_pb2 import Struct

    made: list[int] = []

    def message_class() -> type[Any]:
        made.append(1)
        return Struct

    formats = ValueFormats(protobuf_message=message_class)
    assert formats == ValueFormats(protobuf_message=message_class)
    assert hash(formats) == hash(ValueFormats(protobuf_message=message_class))
    assert formats.protobuf_class() is Struct
    assert formats.protobuf_class() is Struct
    assert made == [1]  # the function is called once
    with pytest.raises(AttributeError, match="frozen"):
        formats.default = "PROTOBUF"
    assert formats.replace(default="PROTOBUF").default == "PROTOBUF"
    with pytest.raises(ConfigurationError, match="needs avro_schema"):
        formats.replace(default="AVRO")


def test_the_formats_sample_event_commits_four_payments_and_dead_letters_one(
    aws: AppState, payment_events: ModuleType
) -> None:
    """events/msk-payment-formats.json, as events/README.md says it ends."""
    event = load_event("msk-payment-formats.json")
    assert payment_events.handler(event, None) == {"batchItemFailures": []}
    assert aws.balance("cust-011") == (4000, 2)
    assert aws.balance("cust-012") == (1000, 2)
    (letter,) = aws.dead_letters()
    attributes = {name: v["StringValue"] for name, v in letter["MessageAttributes"].items()}
    assert attributes["inbox-error-code"] == "undecodable_value"
    assert attributes["inbox-message-key"] == "payments-1-9"
