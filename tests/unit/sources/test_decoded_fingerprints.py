"""A Kafka value's fingerprint is its decoded record's (identity.fingerprint): the same payment
sent as JSON, Avro or Protobuf, by any encoder, is one payment, and records stored when the
fingerprint was the hash of the encoded record still match the same bytes (moto)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from devkit.app_state import AppState
from devkit.events import inbound_message, kafka_event, kafka_record
from devkit.paths import FUNCTIONS_DIR
from devkit.payloads import payment
from lambda_inbox import Outcome
from lambda_inbox._sources.identity import fingerprint
from lambda_inbox_tools.testing.values import avro_value, json_value, protobuf_value

AVSC = FUNCTIONS_DIR / "payment_events" / "schemas" / "payment_captured.avsc"
CONSUMER = "payment-events"


def proto(module: ModuleType, body: dict[str, Any]) -> Any:
    return module.VALUE_FORMATS.protobuf_class()(**body)


def reordered_protobuf(module: ModuleType, body: dict[str, Any]) -> bytes:
    """The same message as another encoder may write it: fields in reverse order (Protobuf
    parsers accept any order), with Confluent's prefix and message indexes."""
    fields = b"".join(
        proto(module, {name: body[name]}).SerializeToString() for name in reversed(body)
    )
    framed = protobuf_value(proto(module, body), schema_id=7)
    assert framed.endswith(proto(module, body).SerializeToString()) and fields not in framed
    return framed[: len(framed) - len(proto(module, body).SerializeToString())] + fields


def outcomes(module: ModuleType, *values: bytes) -> list[tuple[Outcome, str | None]]:
    event = kafka_event([kafka_record(0, 10 + n, value) for n, value in enumerate(values)])
    results = module.consumer.process(module.consumer.sources[0].messages(event))
    return [(result.outcome, result.error_code) for result in results]


def test_the_same_payment_in_json_avro_and_protobuf_is_one_payment(
    aws: AppState, payment_events: ModuleType
) -> None:
    body = payment(1, "cust-f", 1250)
    forms = [
        json_value(body),
        avro_value(AVSC, body, schema_id=3),
        protobuf_value(proto(payment_events, body), schema_id=7),  # amount_cents: int64
        reordered_protobuf(payment_events, body),
    ]
    assert len(set(forms)) == 4  # four different encodings
    assert (
        outcomes(payment_events, *forms)
        == [(Outcome.COMMITTED, None)] + [(Outcome.DUPLICATE, None)] * 3
    )
    for form in forms:  # and each alone, in a later batch
        assert outcomes(payment_events, form) == [(Outcome.DUPLICATE, None)]
    assert aws.balance("cust-f") == (1250, 1)
    aws.assert_dlq_empty()


def test_another_amount_in_another_format_is_still_a_mismatch(
    aws: AppState, payment_events: ModuleType
) -> None:
    assert outcomes(payment_events, json_value(payment(2, "cust-m", 100))) == [
        (Outcome.COMMITTED, None)
    ]
    changed = avro_value(AVSC, payment(2, "cust-m", 101), schema_id=3)
    assert outcomes(payment_events, changed) == [(Outcome.DEAD_LETTERED, "fingerprint_mismatch")]
    assert aws.balance("cust-m") == (100, 1)


def test_a_decoded_records_fingerprint_is_its_canonical_json() -> None:
    document = {"b": 2, "a": [1, "x"]}
    binary = inbound_message(b"\x01\x02", encoded_record=b"\x01\x02", decode=lambda: document)
    assert fingerprint(binary) == fingerprint(inbound_message('{"a": [1, "x"], "b": 2}'))
    raw = inbound_message(b"\x07", encoded_record=b"\x07", decode=lambda: {"blob": b"\x00\xff"})
    assert fingerprint(raw) == fingerprint(inbound_message('{"blob": "AP8="}'))  # bytes: base64
