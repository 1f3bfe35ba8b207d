"""Property-based fuzzing of `handle()` with generated SQS, FIFO and Kafka (MSK and self-managed)
events: hostile records mixed among valid ones.

Properties, for every generated batch:
- `handle()` never raises for a per-record problem and answers in the event source's shape;
- every record ends committed, reported for retry, or dead-lettered, and a dead letter (checked
  against SQS's own validation) gives back the record's original bytes when replayed;
- the valid records of the batch commit.

Each test runs twice. On `devkit.memory_aws` (tables and queues in memory behind real boto3
clients: botocore's parameter validation and the SQS and DynamoDB limits of `lambda_inbox_tools.testing.limits` apply,
only the sending is replaced) it tries `INBOX_FUZZ_EXAMPLES` examples (default 500). On moto,
whose every call costs tens of milliseconds, it tries `INBOX_FUZZ_MOTO_EXAMPLES` (default 10): the
same properties against moto's own DynamoDB and SQS, so the two stores cannot drift apart
unnoticed. A long run is a command: `.venv/bin/python benchmarks/fuzz.py --examples 20000
--moto-examples 200` (times in docs/bad-input.md).
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest
from google.protobuf.struct_pb2 import Struct
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devkit.app_state import AppState
from devkit.events import ORDER_FIFO_QUEUE_ARN, ORDER_QUEUE_ARN, replayed
from devkit.memory_aws import MemoryAws
from lambda_inbox import InboxConsumer, MessageResult, Outcome, UnitOfWork, ValueFormats
from lambda_inbox_tools.services.queues import receive_all
from lambda_inbox_tools.testing.limits import (
    enforce_dynamodb_key_limits,
    enforce_sqs_limits,
    sqs_problems,
)
from lambda_inbox_tools.testing.values import avro_value, json_value, protobuf_value

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef

EXAMPLES = int(os.environ.get("INBOX_FUZZ_EXAMPLES", "500"))
MOTO_EXAMPLES = int(os.environ.get("INBOX_FUZZ_MOTO_EXAMPLES", "10"))
FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
_serial = itertools.count()

# --- hostile values --------------------------------------------------------------------------

nasty_text = st.text(
    alphabet=st.one_of(
        st.characters(codec=None, categories=None),  # surrogates and control characters included
        st.sampled_from(["\x00", "\ud800", "\udfff", "\x7f", "\ufffe", '"', "\\"]),
    ),
    max_size=40,
)
huge_text = st.sampled_from(["x" * 300_000, "é" * 150_000, "[" * 2_000])
deep_json = st.integers(min_value=500, max_value=5_000).map(lambda n: "[" * n + "]" * n)
json_escapes = st.sampled_from(
    ['{"id": "\\ud800"}', '{"id": "a", "note": "\\udc00"}', '{"id": "\\u0000"}', '{"id": 1e999}']
)
oversize_item = st.just(json.dumps({"id": "big", "note": "n" * 420_000}))  # beyond 400 KB
wrong_types = st.sampled_from([None, 0, -1, 1.5, True, [], ["x"], {}, {"a": None}])
hostile_body = st.one_of(nasty_text, huge_text, deep_json, json_escapes, oversize_item)


def attribute_values() -> st.SearchStrategy[Any]:
    return st.one_of(
        nasty_text.map(lambda text: {"stringValue": text, "dataType": "String"}),
        nasty_text.map(lambda text: {"binaryValue": text, "dataType": "Binary"}),
        st.binary(max_size=20).map(
            lambda raw: {"binaryValue": base64.b64encode(raw).decode(), "dataType": "Binary"}
        ),
        st.fixed_dictionaries({"stringValue": nasty_text, "dataType": nasty_text}),
        huge_text.map(lambda text: {"stringValue": text[:100_000], "dataType": "String"}),
        wrong_types,
    )


attribute_names = st.one_of(
    st.sampled_from(["idempotency-key", "inbox-message-key", "inbox-body-encoding", "AWS.x"]),
    nasty_text,
)
message_attributes = st.one_of(
    st.dictionaries(attribute_names, attribute_values(), max_size=12), wrong_types
)

# --- SQS -------------------------------------------------------------------------------------


def valid_body(serial: int, index: int) -> str:
    return json.dumps({"id": f"v-{serial}-{index}", "note": "ok"})


@st.composite
def sqs_records(draw: st.DrawFn, fifo: bool, serial: int) -> list[dict[str, Any]]:
    count = draw(st.integers(min_value=1, max_value=6))
    records = []
    for index in range(count):
        record: dict[str, Any] = {
            "messageId": f"m-{serial}-{index}",
            "receiptHandle": "AQEB",
            "body": valid_body(serial, index),
            "attributes": {"ApproximateReceiveCount": "1"},
            "messageAttributes": {},
            "eventSource": "aws:sqs",
            "eventSourceARN": ORDER_FIFO_QUEUE_ARN if fifo else ORDER_QUEUE_ARN,
        }
        if fifo:
            record["attributes"]["MessageGroupId"] = draw(st.sampled_from(["g1", "g2"]))
            record["attributes"]["MessageDeduplicationId"] = f"d-{serial}-{index}"
        if draw(st.booleans()):  # hostile
            mutation = draw(
                st.sampled_from(["body", "body-type", "no-body", "attributes", "system", "both"])
            )
            if mutation in ("body", "both"):
                record["body"] = draw(hostile_body)
            if mutation == "body-type":
                record["body"] = draw(wrong_types)
            if mutation == "no-body":
                del record["body"]
            if mutation in ("attributes", "both"):
                record["messageAttributes"] = draw(message_attributes)
            if mutation == "system":
                record["attributes"] = draw(
                    st.one_of(
                        wrong_types,
                        st.dictionaries(
                            st.sampled_from(["MessageGroupId", "MessageDeduplicationId"]),
                            st.one_of(nasty_text, wrong_types),
                        ),
                    )
                )
        records.append(record)
    return records


def sqs_original(record: dict[str, Any]) -> bytes:
    body = record.get("body")
    return body.encode("utf-8", "surrogatepass") if isinstance(body, str) else b""


def sqs_valid(record: dict[str, Any], serial: int, index: int) -> bool:
    return record.get("body") == valid_body(serial, index) and record["messageAttributes"] == {}


# --- Kafka -----------------------------------------------------------------------------------

signed_headers = st.lists(
    st.dictionaries(
        nasty_text,
        st.one_of(
            st.lists(st.integers(min_value=-128, max_value=127), max_size=12),
            st.lists(st.integers(min_value=-1000, max_value=1000), max_size=4),
            wrong_types,
        ),
        max_size=3,
    ),
    max_size=4,
)
hostile_value = st.one_of(
    st.none(),
    st.just(""),
    nasty_text,  # mostly not base64
    wrong_types,
    st.binary(max_size=64).map(lambda raw: base64.b64encode(raw).decode()),  # not UTF-8
    hostile_body.map(lambda text: base64.b64encode(text.encode("utf-8", "surrogatepass")).decode()),
)


FUZZ_AVRO = json.dumps(
    {
        "type": "record",
        "name": "Fuzz",
        "fields": [{"name": "id", "type": "string"}, {"name": "note", "type": "string"}],
    }
)
#: Avro (above) and Protobuf (a `Struct`, which reads back as the same JSON object) beside JSON.
FUZZ_FORMATS = ValueFormats(avro_schema=FUZZ_AVRO, protobuf_message=Struct)


def encoded_body(draw: st.DrawFn, serial: int, index: int, record: dict[str, Any]) -> bytes:
    """A valid value in one of the formats, framed or described by schema registry metadata."""
    body = json.loads(valid_body(serial, index))
    fmt = draw(st.sampled_from(["JSON", "AVRO", "PROTOBUF"]))
    framed = draw(st.booleans())
    schema_id = draw(st.integers(min_value=0, max_value=2**31)) if framed else None
    if fmt == "AVRO":
        value = avro_value(FUZZ_AVRO, body, schema_id=schema_id)
    elif fmt == "PROTOBUF":
        message = Struct()
        message.update(body)
        value = protobuf_value(message, schema_id=schema_id)
    else:
        value = json_value(body, schema_id=schema_id)
    if not framed and fmt != "JSON":
        if fmt == "PROTOBUF":
            value = b"\x00" + value  # a Confluent registry leaves the message indexes
        record["valueSchemaMetadata"] = {"dataFormat": fmt, "schemaId": "7"}
    return value


hostile_metadata = st.one_of(
    wrong_types,
    st.fixed_dictionaries(
        {
            "dataFormat": st.one_of(
                st.sampled_from(["AVRO", "PROTOBUF", "JSON", "XML"]), nasty_text
            ),
            "schemaId": st.one_of(nasty_text, wrong_types),
        }
    ),
)
framed_garbage = st.binary(max_size=40).map(
    lambda raw: base64.b64encode(b"\x00\x00\x00\x00\x07" + raw).decode()
)


@st.composite
def kafka_records(
    draw: st.DrawFn, serial: int, formats: bool = False
) -> list[tuple[str, dict[str, Any], bool]]:
    count = draw(st.integers(min_value=1, max_value=6))
    records = []
    for index in range(count):
        partition = draw(st.integers(min_value=0, max_value=2))
        topic = f"t{serial}"
        record: dict[str, Any] = {
            "topic": topic,
            "partition": partition,
            "offset": index,
            "timestamp": 1,
            "timestampType": "CREATE_TIME",
            "value": base64.b64encode(valid_body(serial, index).encode()).decode(),
            "headers": [],
        }
        if formats:
            value = encoded_body(draw, serial, index, record)
            record["value"] = base64.b64encode(value).decode()
        hostile = draw(st.booleans())
        if hostile:
            mutations = ["value", "headers", "key", "topic", "all"]
            mutation = draw(st.sampled_from(mutations + (["metadata"] if formats else [])))
            if mutation in ("value", "all"):
                record["value"] = draw(
                    st.one_of(hostile_value, framed_garbage) if formats else hostile_value
                )
            if mutation == "metadata":
                record["valueSchemaMetadata"] = draw(hostile_metadata)
            if mutation in ("headers", "all"):
                record["headers"] = draw(st.one_of(signed_headers, wrong_types))
            if mutation in ("key", "all"):
                record["key"] = draw(st.one_of(hostile_value, wrong_types))
            if mutation == "topic":
                record["topic"] = draw(st.one_of(nasty_text, wrong_types))
        records.append((f"{topic}-{partition}", record, not hostile))
    return records


def kafka_original(record: dict[str, Any]) -> bytes:
    value = record.get("value")
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return value.encode("utf-8", "surrogatepass")
    return b"" if value is None else json.dumps(value).encode()


# --- the properties --------------------------------------------------------------------------


def put_item(body: dict[str, Any], uow: UnitOfWork) -> None:
    uow.put("domain", {"pk": f"ITEM#{body['id']}", "sk": "V", "note": str(body.get("note"))})


@dataclass(frozen=True)
class Backend:
    """Where an example's requests go, how many examples run there, and how to empty the
    tables between examples (keys are unique per example anyway; small tables keep each
    transaction cheap)."""

    aws: AppState
    examples: int
    empty_tables: Callable[[], None]
    #: Every dead letter of a queue, deleted once read (a FIFO group stays blocked while a
    #: message of it is in flight), as ReceiveMessage returns them.
    dead_letters: Callable[[str], list[MessageTypeDef]]


@pytest.fixture(params=["memory", "moto"])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "memory":
        memory = MemoryAws()  # lambda_inbox_tools.testing.limits enforced on its clients
        dynamodb, sqs = memory.client("dynamodb"), memory.client("sqs")
        aws = AppState.created(dynamodb, sqs)
        return Backend(aws, EXAMPLES, memory.clear_items, memory.drain)  # type: ignore[arg-type]
    aws = request.getfixturevalue("aws")
    enforce_sqs_limits(aws.sqs)
    enforce_dynamodb_key_limits(aws.dynamodb)
    return Backend(
        aws,
        MOTO_EXAMPLES,
        lambda: empty_moto_tables(aws),
        lambda url: receive_all(aws.sqs, url, delete=True),
    )


def empty_moto_tables(aws: AppState) -> None:
    """moto copies every table for each transaction: keeping them small keeps examples fast."""
    for table, names in ((aws.inbox, ("pk",)), (aws.domain, ("pk", "sk"))):
        for item in aws.dynamodb.scan(TableName=table)["Items"]:
            key = {name: item[name] for name in names}
            aws.dynamodb.delete_item(TableName=table, Key=key)


def fuzz_consumer(
    aws: AppState, dlq_url: str, formats: ValueFormats | None = None
) -> tuple[InboxConsumer[Any], list[MessageResult]]:
    inbox = aws.consumer(
        "fuzz",
        config={"dead_letter_queue_url": dlq_url, "value_formats": formats or ValueFormats()},
        model=dict,
        decide=put_item,
        key="id",
    )
    seen: list[MessageResult] = []
    process = inbox.process

    def recording(messages: Any, context: Any = None) -> list[MessageResult]:
        results = process(messages, context)
        seen[:] = results
        return results

    inbox.process = recording  # type: ignore[method-assign]
    return inbox, seen


def check_outcomes(
    backend: Backend,
    dlq_url: str,
    results: list[MessageResult],
    response: dict[str, Any],
    originals: list[bytes],
    valid: list[bool],
    identifier: Callable[[MessageResult], Any],
) -> None:
    assert set(response) == {"batchItemFailures"}
    reported = [failure["itemIdentifier"] for failure in response["batchItemFailures"]]
    letters = backend.dead_letters(dlq_url)
    recovered = [replayed(letter).body for letter in letters]
    assert len(results) == len(originals)
    for result in results:
        sequence = result.message.sequence
        outcome = result.outcome
        if outcome is Outcome.DEAD_LETTERED:
            assert originals[sequence] in recovered, result
        elif outcome.needs_redelivery:
            assert identifier(result) in reported, result
        else:
            assert outcome in (Outcome.COMMITTED, Outcome.DUPLICATE, Outcome.BUSINESS_OUTCOME)
        if valid[sequence]:
            assert outcome is Outcome.COMMITTED, result
    # Nothing failed for lack of a valid request: SQS and DynamoDB accepted every one.
    assert not [r for r in results if r.error_code in ("dead_letter_failed", "inbox_unavailable")]
    backend.empty_tables()


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_fuzz_sqs(backend: Backend, fifo: bool) -> None:
    aws = backend.aws
    dlq_url = aws.fifo_dlq_url if fifo else aws.dlq_url
    assert dlq_url is not None
    inbox, seen = fuzz_consumer(aws, dlq_url)

    @settings(FUZZ, max_examples=backend.examples)
    @given(st.data())
    def example(data: st.DataObject) -> None:
        serial = next(_serial)
        records = data.draw(sqs_records(fifo, serial))
        response = inbox.handle({"Records": records})
        check_outcomes(
            backend,
            dlq_url,
            seen,
            response,
            [sqs_original(record) for record in records],
            [sqs_valid(record, serial, index) for index, record in enumerate(records)],
            lambda result: result.message.item_identifier,
        )
        assert all(isinstance(f["itemIdentifier"], str) for f in response["batchItemFailures"])

    example()


@pytest.mark.parametrize(
    ("source", "formats"),
    [("aws:kafka", False), ("SelfManagedKafka", False), ("aws:kafka", True)],
    ids=["msk", "self-managed", "msk-avro-protobuf"],
)
def test_fuzz_kafka(backend: Backend, source: str, formats: bool) -> None:
    aws = backend.aws
    inbox, seen = fuzz_consumer(aws, aws.dlq_url, FUZZ_FORMATS if formats else None)

    @settings(FUZZ, max_examples=backend.examples)
    @given(st.data())
    def example(data: st.DataObject) -> None:
        serial = next(_serial)
        drawn = data.draw(kafka_records(serial, formats))
        grouped: dict[str, list[dict[str, Any]]] = {}
        for topic_partition, record, _ in drawn:
            grouped.setdefault(topic_partition, []).append(record)
        event = {"eventSource": source, "records": grouped}
        response = inbox.handle(event)
        # The messages come in (topic-partition, offset) order: line the originals up likewise.
        ordered = sorted(drawn, key=lambda entry: (entry[0], entry[1]["offset"]))
        check_outcomes(
            backend,
            aws.dlq_url,
            seen,
            response,
            [kafka_original(record) for _, record, _ in ordered],
            [valid for _, _, valid in ordered],
            lambda result: result.message.item_identifier,
        )
        for failure in response["batchItemFailures"]:
            assert set(failure["itemIdentifier"]) == {"topic-partition", "offset"}

    example()


def test_the_sqs_rules_of_the_fuzz_tests_refuse_what_sqs_refuses() -> None:
    assert sqs_problems({"MessageBody": ""})
    assert sqs_problems({"MessageBody": "a\x00"})
    assert sqs_problems(
        {"MessageBody": "x", "MessageAttributes": {"a": {"DataType": "String", "StringValue": ""}}}
    )
    assert not sqs_problems(
        {"MessageBody": "x", "MessageAttributes": {"a": {"DataType": "String", "StringValue": "v"}}}
    )
