"""Chaos at suite scale: `benchmarks/chaos.py` on the session's DynamoDB Local and moto server.

Orders (SQS), payments (MSK) and notifications (SQS, leased, webhook on 127.0.0.1) with 8
concurrent consumers, 35% duplicates (same and new transport ids), crashes before and after every
committing call and before acknowledgement, throttling and conflicts, poison to the DLQs; every
failed or crashed delivery redelivered until settled. Then the outbox leg: the shipped orders'
notification requests read from the domain table's stream, relayed with crashes after sends,
and consumed by customer-notifications like the rest. Then, from the tables: nothing lost,
nothing applied twice (one request and one notification per shipped order included), every
poison message dead-lettered. A second, smaller run relays the outbox leg through an SNS topic
to the queue (`relay_via="sns"`), as template.yaml does.

The suite runs `CHAOS_SUITE_DELIVERIES` deliveries (default 3,000: about a minute alone on a shared
2-core machine, see docs/PERFORMANCE.md); `CHAOS_SEED` changes the seed and
`CHAOS_SUITE_CRASH_RATE` the crash rate (default 2%). `make test` runs 1,000 deliveries at 6%, so
that the DLQ's crash points are met as often as at 3,000 and 2%; `make soak` runs 3,000 at 2%.
"""

from __future__ import annotations

import os

import pytest

from devkit.chaos import CRASH_KINDS, WORKLOADS, ChaosConfig, run_chaos
from devkit.chaos.workload import NOTIFICATIONS, ORDERS, PAYMENTS

pytestmark = pytest.mark.integration

SUITE_DELIVERIES = int(os.environ.get("CHAOS_SUITE_DELIVERIES", "3000"))
SEED = int(os.environ.get("CHAOS_SEED", "7"))
CRASH_RATE = float(os.environ.get("CHAOS_SUITE_CRASH_RATE", "0.02"))


@pytest.mark.timeout(1800)
def test_chaos_loses_nothing_and_applies_nothing_twice(
    dynamodb_local_endpoint: str, moto_server_endpoint: str
) -> None:
    # More poison and crashes than the benchmark's defaults, so that every crash point is met
    # at this smaller size too. A lost batch response is rolled once per invocation (about 440
    # here), not per call: at the 2% crash rate it came 4 to 7 times, and in one CI run never.
    # The SQS and Kafka consumers never read a batch's inbox keys before its commit unless it
    # holds poison (`INBOX_DUPLICATE_READ=never`): every duplicate, under every fault, is found
    # by the transaction's inbox `Put` alone. (The default, "auto", reads first whenever
    # something suggests a duplicate; benchmarks/chaos.py runs both, docs/PERFORMANCE.md.)
    config = ChaosConfig(
        deliveries=SUITE_DELIVERIES,
        seed=SEED,
        poison=0.03,
        crash_rate=CRASH_RATE,
        lost_response_rate=0.05,
        # Injected per TransactWriteItems send (about 370 at 1,000 deliveries): at the default
        # 0.5% a run could meet none, and real conflicts between the consumers are rarer still.
        conflict_rate=0.02,
        consumers=8,
        duplicate_read="never",
    )
    result = run_chaos(config, dynamodb_local_endpoint, moto_server_endpoint)
    summary = result.summary()
    print(summary)

    assert result.lost == 0, summary
    assert result.double_applied == 0, summary
    assert result.verdict.problems == [], summary
    workload, stats, verdict = result.workload, result.stats, result.verdict
    # The chaos really happened.
    duplicates = sum(workload.stream_duplicates.values())
    assert duplicates >= 0.3 * len(workload.stream)
    assert 0 < sum(workload.same_id_duplicates.values()) < duplicates
    dlq_kinds = {kind for kind in CRASH_KINDS if "DLQ" in kind}
    for kind in set(CRASH_KINDS) - dlq_kinds:
        assert stats.crashes[kind] > 0, f"no crash {kind!r}\n{summary}"
    # The outbox leg really ran: a request per shipped order, the relay crashed after sends and
    # so relayed some twice, and the receiving inbox absorbed them (no double-applied above).
    assert verdict.shipped_orders > 0
    assert verdict.notification_requests == verdict.shipped_orders
    assert result.relay.crashes > 0 and result.relayed_messages > verdict.shipped_orders
    assert sum(stats.crashes[kind] for kind in dlq_kinds) > 0, summary
    assert sum(stats.throttles.values()) > 0
    assert stats.conflict_transactions > 0
    assert sum(stats.deliveries.values()) > len(workload.stream)  # redeliveries happened
    # The optimistic path carried the duplicates: only batches holding poison read first (most
    # 10-message order batches hold none; a 50-record payment batch at 3% poison mostly does),
    # and the inbox `Put`s of the transactions refused the duplicates.
    order_reads = stats.requests[(ORDERS, "BatchGetItem")]
    assert 0 < order_reads < stats.invocations[ORDERS] / 2, summary
    assert 0 < stats.requests[(PAYMENTS, "BatchGetItem")] < stats.invocations[PAYMENTS], summary
    assert stats.reasons["ConditionalCheckFailed"] > 0, summary
    assert stats.requests[(NOTIFICATIONS, "BatchGetItem")] > 0  # leased: always read first
    for name in WORKLOADS:
        assert verdict.poison_sent[name] > 0
        assert verdict.dead_lettered[name] == verdict.poison_sent[name], summary


@pytest.mark.soak  # `make soak`; `make test` proves the leg on DynamoDB Local in
# tests/integration/outbox/test_relay_to_sns_fifo.py and through the local stack
@pytest.mark.timeout(900)
def test_the_outbox_leg_through_an_sns_topic_loses_nothing_and_applies_nothing_twice(
    dynamodb_local_endpoint: str, moto_server_endpoint: str
) -> None:
    """outbox -> SNS -> SQS -> inbox, as template.yaml relays: the relay publishes to a topic on
    the moto server whose subscription (raw message delivery) fills the queue customer-
    notifications reads, and dies after a `PublishBatch` often enough to publish copies. A
    smaller run: the leg, not the consumers' chaos, is what it adds."""
    config = ChaosConfig(
        deliveries=800,
        seed=SEED,
        crash_rate=CRASH_RATE,
        relay_crash_rate=0.1,
        relay_via="sns",
    )
    result = run_chaos(config, dynamodb_local_endpoint, moto_server_endpoint)
    summary = result.summary()
    print(summary)

    assert result.lost == 0, summary
    assert result.double_applied == 0, summary
    assert result.verdict.problems == [], summary
    verdict = result.verdict
    assert "through an SNS topic to its queue" in summary
    assert verdict.shipped_orders > 0
    assert verdict.notification_requests == verdict.shipped_orders
    # Copies were published, delivered by the topic, and absorbed by the receiving inbox.
    assert result.relay.crashes > 0 and result.relayed_messages > verdict.shipped_orders, summary
    assert result.relay.sent == result.relayed_messages, summary
