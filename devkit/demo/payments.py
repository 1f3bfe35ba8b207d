"""The demo's payments as bytes on the Kafka topic: JSON, Avro and Protobuf."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lambda_inbox._sources.values import generated_message


def payment_encoder(schemas: Path | None) -> Callable[[int, dict[str, Any]], bytes]:
    """Payments as MSK teams send them: one in three Avro, one in three Protobuf (both in the
    Confluent wire format, from the payment function's `schemas/`), the rest JSON; all JSON when
    the function has no schemas or the codecs are not installed."""
    avsc = schemas / "payment_captured.avsc" if schemas else None
    pb2 = schemas / "payment_captured_pb2.py" if schemas else None
    try:
        import avro.io  # noqa: F401  (the codecs: extra kafka-codecs)
        import google.protobuf  # noqa: F401

        from lambda_inbox_tools.testing.values import avro_value, protobuf_value
    except ImportError:
        avsc = None
    if avsc is None or pb2 is None or not avsc.is_file() or not pb2.is_file():

        def json_only(n: int, payment: dict[str, Any]) -> bytes:
            return json.dumps(payment).encode()

        return json_only
    proto = generated_message(pb2, "PaymentCaptured")()

    def encode(n: int, payment: dict[str, Any]) -> bytes:
        if n % 3 == 1:
            return avro_value(avsc, payment, schema_id=1)
        if n % 3 == 2:
            return protobuf_value(proto(**payment), schema_id=2)
        return json.dumps(payment).encode()

    return encode
