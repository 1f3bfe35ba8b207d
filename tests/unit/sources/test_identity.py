"""Message identity (key strategies) and payload fingerprints."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devkit.events import inbound_message
from lambda_inbox import KeyStrategy, PoisonMessage
from lambda_inbox._sources.identity import (
    MAX_KEY_BYTES,
    fingerprint,
    is_field_path,
    outbox_message_id_of,
)


def test_jmespath_expression_reads_the_body() -> None:
    strategy = KeyStrategy.from_body("meta.id")
    assert strategy.message_key(inbound_message('{"meta": {"id": "evt-1"}}')) == "evt-1"
    assert strategy.has_extractor


def test_numeric_key_becomes_text() -> None:
    assert KeyStrategy.from_body("n").message_key(inbound_message('{"n": 42}')) == "42"


def test_callable_extractor() -> None:
    def extract(body: Any) -> object:
        return f"{body['order']}:{body['seq']}"

    key = KeyStrategy.from_body(extract).message_key(inbound_message('{"order": "o1", "seq": 3}'))
    assert key == "o1:3"


@pytest.mark.parametrize(
    "body",
    [
        '{"other": 1}',
        '{"event_id": null}',
        '{"event_id": ""}',
        '{"event_id": {"a": 1}}',
        '{"event_id": [1]}',
        '{"event_id": true}',
    ],
)
def test_missing_or_unusable_key_raises_missing_message_key(body: str) -> None:
    with pytest.raises(PoisonMessage, match="jmespath:event_id found no message key"):
        KeyStrategy.from_body("event_id").message_key(inbound_message(body))


def test_extractor_on_a_non_json_body_raises_undecodable_body() -> None:
    with pytest.raises(PoisonMessage) as raised:
        KeyStrategy.from_body("event_id").message_key(inbound_message("{not json"))
    assert raised.value.code == "malformed_json"
    with pytest.raises(PoisonMessage) as raised:
        KeyStrategy.from_body("event_id").message_key(inbound_message(b"\xff\xfe"))
    assert raised.value.code == "undecodable_body"


def test_idempotency_key_attribute_comes_before_dedup_and_delivery_id() -> None:
    msg = inbound_message(
        "{}",
        attributes={"idempotency-key": "idem-1"},
        deduplication_id="dedup-1",
        delivery_id="mid-1",
    )
    assert KeyStrategy().message_key(msg) == "idem-1"


def test_explicit_extractor_wins_over_the_attribute() -> None:
    msg = inbound_message('{"event_id": "evt-9"}', attributes={"idempotency-key": "idem-1"})
    assert KeyStrategy.from_body("event_id").message_key(msg) == "evt-9"


def test_fifo_deduplication_id_then_delivery_id() -> None:
    fifo = inbound_message("x", deduplication_id="dedup-1", delivery_id="mid-1")
    assert KeyStrategy().message_key(fifo) == "dedup-1"
    plain = inbound_message("not json at all", delivery_id="mid-2")
    assert KeyStrategy().message_key(plain) == "mid-2"
    assert not KeyStrategy().has_extractor


def test_empty_idempotency_key_attribute_is_ignored() -> None:
    msg = inbound_message("{}", attributes={"idempotency-key": ""}, delivery_id="mid-3")
    assert KeyStrategy().message_key(msg) == "mid-3"


def test_very_long_keys_are_hashed_and_stable() -> None:
    long_key = "k" * (MAX_KEY_BYTES + 1)
    strategy = KeyStrategy.from_body("id")
    first = strategy.message_key(inbound_message(f'{{"id": "{long_key}"}}'))
    again = strategy.message_key(inbound_message(f'{{"id": "{long_key}"}}'))
    other = strategy.message_key(inbound_message(f'{{"id": "{long_key}x"}}'))
    assert first.startswith("sha256:") and len(first) == len("sha256:") + 64
    assert first == again != other
    at_limit = "k" * MAX_KEY_BYTES
    assert strategy.message_key(inbound_message(f'{{"id": "{at_limit}"}}')) == at_limit
    # Byte length counts, not characters: 512 two-byte characters + 1 is over the limit.
    wide = "é" * (MAX_KEY_BYTES // 2 + 1)
    assert strategy.message_key(inbound_message(f'{{"id": "{wide}"}}')).startswith("sha256:")
    header = inbound_message("{}", attributes={"idempotency-key": long_key})
    assert KeyStrategy().message_key(header) == first


def test_fingerprint_ignores_key_order_and_whitespace() -> None:
    compact = inbound_message('{"a":1,"b":{"c":[1,2],"d":"é"}}')
    spaced = inbound_message('{\n  "b": {"d": "\\u00e9", "c": [1, 2]},\n  "a": 1\n}')
    assert fingerprint(compact) == fingerprint(spaced)
    assert len(fingerprint(compact)) == 64


@pytest.mark.parametrize(
    "other",
    ['{"a":2,"b":{"c":[1,2],"d":"é"}}', '{"a":1,"b":{"c":[2,1],"d":"é"}}', '{"a":1}'],
)
def test_fingerprint_differs_for_different_payloads(other: str) -> None:
    assert fingerprint(inbound_message('{"a":1,"b":{"c":[1,2],"d":"é"}}')) != fingerprint(
        inbound_message(other)
    )


def test_fingerprint_of_a_non_json_body_hashes_the_bytes() -> None:
    assert fingerprint(inbound_message("{not json")) == fingerprint(inbound_message("{not json"))
    assert fingerprint(inbound_message("{not json")) != fingerprint(inbound_message("{not json "))
    assert fingerprint(inbound_message(b"\xff\xfe")) != fingerprint(inbound_message(b"\xff\xff"))


@pytest.mark.parametrize(
    "extractor",
    [
        lambda body: body["event_id"],
        lambda body: body[0],
        lambda body: body.event_id,
    ],
)
def test_an_extractor_that_raises_is_a_missing_key(extractor: Any) -> None:
    with pytest.raises(PoisonMessage, match="callable found no message key"):
        KeyStrategy.from_body(extractor).message_key(inbound_message('{"other": 1}'))


def test_an_extractor_never_hides_an_undecodable_body() -> None:
    with pytest.raises(PoisonMessage):
        KeyStrategy.from_body(lambda body: body["event_id"]).message_key(
            inbound_message("{not json")
        )


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["event_id", "detail", "id", "x"]), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(
    payload=JSON_VALUES,
    expression=st.sampled_from(["event_id", "detail.id", "detail.id.x", "_x9"]),
)
def test_a_plain_field_path_reads_what_jmespath_reads(payload: object, expression: str) -> None:
    """Field paths skip JMESPath's interpreter: the same value for every JSON payload."""
    import jmespath

    extractor = KeyStrategy.from_body(expression)._extractor
    assert extractor is not None
    assert extractor(payload) == jmespath.search(expression, payload)


def test_only_an_expression_beyond_field_names_is_evaluated_by_jmespath() -> None:
    import jmespath.parser

    def evaluator(expression: str) -> object:
        extractor = KeyStrategy.from_body(expression)._extractor
        return getattr(extractor, "__self__", None)

    assert evaluator("event_id") is None and evaluator("detail.id") is None
    assert isinstance(evaluator("items[0].id"), jmespath.parser.ParsedResult)
    extractor = KeyStrategy.from_body("detail.id")._extractor
    assert extractor is not None and extractor({"detail": {"id": 7}}) == 7


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aZ_09.é-[ ", max_size=8))
def test_a_field_path_is_ascii_field_names_joined_by_dots(expression: str) -> None:

    expected = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*", expression)
    assert is_field_path(expression) is (expected is not None)


def test_an_outbox_message_id_keys_a_message_with_no_key_configured() -> None:
    relayed = inbound_message(
        "{}", attributes={"outbox-message-id": "ntf-1"}, deduplication_id="d", delivery_id="m"
    )
    assert KeyStrategy().message_key(relayed) == "ntf-1"
    # The producer's own idempotency key, and a configured key, win over it.
    both = inbound_message("{}", attributes={"idempotency-key": "k", "outbox-message-id": "o"})
    assert KeyStrategy().message_key(both) == "k"
    keyed = inbound_message('{"event_id": "e"}', attributes={"outbox-message-id": "o"})
    assert KeyStrategy.from_body("event_id").message_key(keyed) == "e"
    empty = inbound_message("{}", attributes={"outbox-message-id": ""}, delivery_id="m-4")
    assert KeyStrategy().message_key(empty) == "m-4"


@pytest.mark.parametrize(
    ("resources", "found"),
    [
        (["outbox-message-id:ntf-1"], "ntf-1"),
        (["arn:aws:s3:::b", "outbox-message-id:ntf-2"], "ntf-2"),
        (["outbox-message-id:"], None),
        (["arn:aws:s3:::b"], None),
        ([], None),
        (None, None),
        ("outbox-message-id:x", None),
    ],
)
def test_an_events_resources_carry_its_outbox_message_id(resources: Any, found: str | None) -> None:
    assert outbox_message_id_of(resources) == found
