"""No record can exhaust the function (lambda_inbox._decoding): bombs in Avro, Protobuf, zlib
and JSON end as poison `too_large` with their bytes as delivered, before they cost more than a
few MB, and the rest of their batch commits (moto). What ordinary documents of the same kinds
read is unchanged."""

from __future__ import annotations

import json
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from devkit.app_state import AppState
from devkit.events import kafka_event, kafka_record, replayed, sqs_event, sqs_record
from devkit.hostile import (
    NULLS_SCHEMA,
    avro_long,
    avro_nulls_bomb,
    holder_class,
    protobuf_empties_bomb,
    zlib_dead_letter,
    zlib_zeros,
)
from lambda_inbox import (
    ConfigurationError,
    InboundMessage,
    InboxConsumer,
    MessageResult,
    Outcome,
    UnitOfWork,
    ValueFormats,
)
from lambda_inbox._decoding.limits import DecodingLimits, TooLarge, check_json
from lambda_inbox_tools.testing.limits import enforce_sqs_limits

#: What reading one bomb may allocate, traced (a few MB: the limits' own 6 MiB are for bytes).
FEW_MB = 8 * 1024 * 1024


def put_item(body: dict[str, Any], uow: UnitOfWork) -> None:
    uow.put("domain", {"pk": f"ITEM#{body['id']}", "sk": "V"})


def consumer(
    aws: AppState, formats: ValueFormats | None = None, **config: Any
) -> InboxConsumer[Any]:
    enforce_sqs_limits(aws.sqs)
    settings = {"value_formats": formats, **config}
    return aws.consumer("limits", config=settings, model=dict, decide=put_item, key="id")


def good(offset: int) -> dict[str, Any]:
    return kafka_record(0, offset, json.dumps({"id": f"ok-{offset}"}).encode())


def outcomes(results: list[MessageResult]) -> list[tuple[Outcome, str | None]]:
    return [(result.outcome, result.error_code) for result in results]


def traced_peak(read: Callable[[], object]) -> int:
    """Bytes allocated at most while `read` runs (it must refuse its input)."""
    tracemalloc.start()
    try:
        with pytest.raises(TooLarge):
            read()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def bomb_and_the_rest(
    aws: AppState, inbox: InboxConsumer[Any], messages: list[InboundMessage], bomb_at: int
) -> None:
    """The message at `bomb_at` is dead-lettered `too_large`, every other one commits."""
    results = inbox.process(messages)
    expected: list[tuple[Outcome, str | None]] = [(Outcome.COMMITTED, None)] * len(results)
    expected[bomb_at] = (Outcome.DEAD_LETTERED, "too_large")
    assert outcomes(results) == expected
    (letter,) = aws.dead_letters()
    assert letter["MessageAttributes"]["inbox-error-code"]["StringValue"] == "too_large"


def test_the_avro_array_of_nulls_bomb_is_too_large_at_once(aws: AppState) -> None:
    bomb = avro_nulls_bomb(9_990_000)
    assert len(bomb) <= 7
    inbox = consumer(aws, ValueFormats(avro_schema=NULLS_SCHEMA))
    metadata = {"dataFormat": "AVRO", "schemaId": "7"}
    event = kafka_event([good(1), kafka_record(0, 2, bomb, value_schema=metadata), good(3)])
    messages = inbox.sources[0].messages(event)
    assert messages[1].body == bomb  # what the dead letter keeps: the bytes as delivered
    bomb_and_the_rest(aws, inbox, messages, 1)
    fresh = inbox.sources[0].messages(event)[1]
    assert traced_peak(lambda: fresh.json) < 64 * 1024  # refused before any item is made


def test_avro_stops_at_the_limit_across_blocks_and_reads_what_is_within_it(
    aws: AppState,
) -> None:
    """Blocks each within the limit, together past it; and an array just within it reads."""
    formats = ValueFormats(avro_schema=NULLS_SCHEMA)
    limits = DecodingLimits(max_values=5_000)
    inbox = consumer(aws, formats, decoding_limits=limits)
    blocks = avro_long(3_000) + avro_long(3_000) + avro_long(0)
    within = avro_long(4_999) + avro_long(0)  # the array and its 4,999 items: 5,000 values
    metadata = {"dataFormat": "AVRO"}
    event = kafka_event(
        [
            kafka_record(0, n, value, value_schema=metadata)
            for n, value in enumerate([blocks, within])
        ]
    )
    results = inbox.process(inbox.sources[0].messages(event))
    assert results[0].error_code == "too_large"
    assert "5,000 values" in results[0].detail
    assert results[1].error_code == "missing_key"  # read whole: a list, which has no id


def test_a_protobuf_bomb_of_empty_sub_messages_is_too_large_before_it_is_parsed(
    aws: AppState,
) -> None:
    bomb = protobuf_empties_bomb(500_000)  # 1 MB: half a million sub-messages
    inbox = consumer(aws, ValueFormats(protobuf_message=holder_class()))
    metadata = {"dataFormat": "PROTOBUF"}
    event = kafka_event([good(1), good(2), kafka_record(0, 3, bomb, value_schema=metadata)])
    messages = inbox.sources[0].messages(event)
    assert messages[2].body == bomb
    bomb_and_the_rest(aws, inbox, messages, 2)
    fresh = inbox.sources[0].messages(event)[2]
    assert traced_peak(lambda: fresh.json) < FEW_MB


def test_a_protobuf_record_within_the_limit_reads_as_powertools_reads_it(aws: AppState) -> None:
    holder = holder_class()
    message = holder(id="p-1", flags=[True] * 70_000)  # 70,001 values, 70 KB packed: counted
    inbox = consumer(aws, ValueFormats(protobuf_message=holder))
    event = kafka_event(
        [kafka_record(0, 1, message.SerializeToString(), value_schema={"dataFormat": "PROTOBUF"})]
    )
    (read,) = inbox.sources[0].messages(event)
    assert read.json == {"id": "p-1", "flags": [True] * 70_000}
    small = DecodingLimits(max_values=60_000)
    inbox = consumer(aws, ValueFormats(protobuf_message=holder), decoding_limits=small)
    (result,) = inbox.process(inbox.sources[0].messages(event))
    assert result.error_code == "too_large"


def test_a_zlib_bomb_is_too_large_without_inflating_it_whole(aws: AppState) -> None:
    bomb = zlib_dead_letter(zlib_zeros(128 * 1024 * 1024), "bomb")  # 128 MiB in 130 KB
    ok = zlib_dead_letter(zlib.compress(json.dumps({"id": "z-1"}).encode()), "ok")
    inbox = consumer(aws)
    event = sqs_event(ok, bomb)
    bomb_and_the_rest(aws, inbox, inbox.sources[1].messages(event), 1)
    assert traced_peak(lambda: inbox.sources[1].messages(event)[1].json) < FEW_MB + 6 * 1024**2


@pytest.mark.parametrize(
    "body",
    [
        "[" + ",".join(["[]"] * 120_000) + "]",  # 240 KB, 120,001 values
        '{"id": "j", "n": [' + ",".join(["0"] * 100_000) + "]}",
    ],
    ids=["empty-arrays", "numbers"],
)
def test_a_json_document_of_too_many_values_is_too_large_before_it_is_parsed(
    aws: AppState, body: str
) -> None:
    inbox = consumer(aws)
    event = sqs_event(sqs_record(json.dumps({"id": "a"})), sqs_record(body))
    results = inbox.process(inbox.sources[1].messages(event))
    assert outcomes(results) == [(Outcome.COMMITTED, None), (Outcome.DEAD_LETTERED, "too_large")]
    (letter,) = aws.dead_letters()
    again = replayed(letter)
    assert (again.body, again.decode_error) == (body.encode(), None)  # kept whole


def test_json_strings_and_spacing_do_not_count_as_values() -> None:
    text = "a,b,[c],{d}, " * 20_000  # 260 KB of commas and brackets inside one string
    check_json(json.dumps({"id": "s", "text": text}, indent=4).encode())


def test_a_number_past_pythons_digit_limit_stays_with_its_record(aws: AppState) -> None:
    inbox = consumer(aws, None)
    huge = '{"id": "n", "amount": ' + "9" * 5_000 + "}"
    event = sqs_event(sqs_record(huge), sqs_record(json.dumps({"id": "b"})))
    results = inbox.process(inbox.sources[1].messages(event))
    assert outcomes(results) == [
        (Outcome.DEAD_LETTERED, "malformed_json"),
        (Outcome.COMMITTED, None),
    ]


def test_a_message_is_read_once_even_when_it_cannot_be_read() -> None:
    calls: list[int] = []

    def decode() -> object:
        calls.append(1)
        raise TooLarge("too many")

    message = InboundMessage("m", "m", b"x", "test", 0, decode=decode)
    for _ in range(3):
        with pytest.raises(TooLarge):
            _ = message.json
    assert calls == [1]


def test_limits_below_an_ordinary_message_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="max_values"):
        DecodingLimits(max_values=100)
    with pytest.raises(ConfigurationError, match="max_bytes"):
        DecodingLimits(max_bytes=1024)


class TickingClock:
    """Monotonic seconds that move on by `tick` each time they are read."""

    def __init__(self, tick: float) -> None:
        self.now = 100.0
        self.tick = tick

    def monotonic(self) -> float:
        self.now += self.tick
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def read_ints(count: int, *, budget: float, left: float) -> object:
    """An Avro array of `count` ints read with an invocation of `budget` seconds of which
    `left` remain, on a clock that moves 0.05 s each time it is read."""
    from lambda_inbox._decoding.avro_reader import read_avro
    from lambda_inbox._internal.deadline import DECODING, Deadline

    clock = TickingClock(0.05)
    deadline = Deadline(clock.now + left, clock)
    token = DECODING.set((None, deadline, budget))
    try:
        record = avro_long(count) + b"\x02" * count + avro_long(0)
        return read_avro(json.dumps({"type": "array", "items": "int"}), record)
    finally:
        DECODING.reset(token)


def test_a_record_with_the_invocation_before_it_stops_at_half_of_it_as_too_large() -> None:
    """Begun with the whole invocation ahead, it would not fit in any: dead-lettered, while
    half of the time is left to do it."""
    with pytest.raises(TooLarge, match="more than half of an invocation"):
        read_ints(50_000, budget=1.0, left=1.0)  # a look at the clock every 1,024 values


def test_a_record_begun_late_stops_at_the_deadline_for_redelivery() -> None:
    """Begun with less than half the invocation left, it stops at the deadline; dead-lettering
    then finds no time left and reports it for redelivery (`deadline`)."""
    with pytest.raises(TooLarge, match="stopped at the Lambda deadline"):
        read_ints(50_000, budget=1.0, left=0.4)
    assert read_ints(500, budget=1.0, left=0.4) == [1] * 500  # in time: read whole


def test_a_document_that_is_never_checked_is_within_the_smallest_limits() -> None:
    """Bodies of `UNCHECKED_BYTES` are parsed unchecked: the smallest limits allowed must hold
    them (n bytes of JSON hold at most (n + 1) / 2 values)."""
    from lambda_inbox._decoding.limits import MIN_BYTES, MIN_VALUES
    from lambda_inbox._messages import UNCHECKED_BYTES

    assert UNCHECKED_BYTES <= MIN_BYTES
    assert (UNCHECKED_BYTES + 1) // 2 <= MIN_VALUES
