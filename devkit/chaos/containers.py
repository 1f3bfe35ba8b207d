"""Warm Lambda containers (a thread each, with its own copy of the functions and its own
clients) that consume the stream with crashes, throttling and conflicts injected, and an event
source that redelivers what failed or crashed."""

from __future__ import annotations

import base64
import heapq
import json
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from botocore.awsrequest import AWSPreparedRequest, AWSResponse

from lambda_inbox.store._record import claims_lease
from lambda_inbox_tools.testing.faults import dynamodb_error

from .meters import Stats, read_half_units, write_units
from .workload import (
    KAFKA_ARN,
    NOTIFICATIONS,
    PAYMENTS,
    THROTTLE_CODES,
    TOPIC,
    WORKLOADS,
    ChaosConfig,
    Crash,
    Delivery,
)


class Container:
    """One warm Lambda container: the three functions with their clients, meters and faults."""

    def __init__(
        self,
        index: int,
        modules: dict[str, ModuleType],
        config: ChaosConfig,
    ) -> None:
        self.index = index
        self.modules = modules
        self.config = config
        self.rng = random.Random(f"{config.seed}/{index}")
        self.stats = Stats()
        self._lock = threading.Lock()
        for workload, module in modules.items():
            self._instrument(workload, module)

    def roll(self, probability: float) -> bool:
        with self._lock:
            return self.rng.random() < probability

    def crash(self, kind: str) -> None:
        with self._lock:
            self.stats.crashes[kind] += 1
        raise Crash(kind)

    def _instrument(self, workload: str, module: ModuleType) -> None:
        dynamodb = module.consumer.dynamodb
        events = dynamodb.meta.events
        rate = self.config.crash_rate

        def before_parameter_build(
            model: Any, params: Mapping[str, Any], context: dict[str, Any], **_: Any
        ) -> None:
            operation = model.name
            context["chaos_wcu"] = write_units(operation, params)
            context["chaos_rcu_halves"] = read_half_units(operation, params)
            item = params.get("Item", {}) if operation == "PutItem" else {}
            context["chaos_claim"] = claims_lease(item)

        def before_call(model: Any, context: dict[str, Any], **_: Any) -> None:
            with self._lock:
                self.stats.requests[(workload, model.name)] += 1
                self.stats.rcu_halves[workload] += int(context.get("chaos_rcu_halves", 0))
            if context.get("chaos_claim") and self.roll(rate):
                self.crash("before lease claim PutItem")

        def before_send(request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
            with self._lock:
                self.stats.sends[workload] += 1
            if self.roll(self.config.throttle_rate):
                code = THROTTLE_CODES[self.rng.randrange(2)]
                with self._lock:
                    self.stats.throttles[code] += 1
                return dynamodb_error(
                    request, code, "injected: rate of requests exceeds the allowed"
                )
            return None

        def before_send_transaction(request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
            if self.roll(rate):
                self.crash("before TransactWriteItems")
            if self.roll(self.config.conflict_rate):
                body = request.body
                items = json.loads(body if isinstance(body, (bytes, str)) else b"{}")
                count = len(items.get("TransactItems", []))
                with self._lock:
                    self.stats.injected_conflicts += 1
                return dynamodb_error(
                    request,
                    "TransactionCanceledException",
                    "Transaction cancelled, please refer cancellation reasons for specific reasons "
                    f"[{', '.join(['TransactionConflict'] * count)}]",
                    CancellationReasons=[
                        {"Code": "TransactionConflict", "Message": "injected conflict"}
                    ]
                    * count,
                )
            return None

        def after_call(
            http_response: Any,
            parsed: Mapping[str, Any],
            model: Any,
            context: dict[str, Any],
            **_: Any,
        ) -> None:
            operation = model.name
            units = int(context.get("chaos_wcu", 0))
            code = (
                parsed.get("Error", {}).get("Code", "") if http_response.status_code >= 300 else ""
            )
            with self._lock:
                if not code or code == "ConditionalCheckFailedException":
                    self.stats.wcu[workload] += units
                elif code == "TransactionCanceledException":
                    self.stats.wcu_cancelled[workload] += units
                    self.stats.cancelled_transactions += 1
                    codes = [r.get("Code", "None") for r in parsed.get("CancellationReasons") or []]
                    self.stats.reasons.update(code for code in codes if code != "None")
                    if "TransactionConflict" in codes:
                        self.stats.conflict_transactions += 1
            if http_response.status_code == 200:
                if operation == "TransactWriteItems" and self.roll(rate):
                    self.crash("after TransactWriteItems")
                if context.get("chaos_claim") and self.roll(rate):
                    self.crash("after lease claim PutItem")

        events.register("before-parameter-build.dynamodb", before_parameter_build)
        events.register("before-call.dynamodb", before_call)
        events.register("before-send.dynamodb", before_send)
        events.register("before-send.dynamodb.TransactWriteItems", before_send_transaction)
        events.register("after-call.dynamodb", after_call)

        queue = module.consumer.dead_letter_queue
        if queue is None:
            return
        sqs = queue.client  # built now, so the hooks are on the client that sends

        def before_dlq(**_: Any) -> None:
            if self.roll(rate):
                self.crash("before a DLQ send")

        def after_dlq(http_response: Any, **_: Any) -> None:
            if http_response.status_code == 200 and self.roll(rate):
                self.crash("after a DLQ send")

        # A batch's poison goes ten a SendMessageBatch; an entry it refuses, alone.
        for operation in ("SendMessageBatch", "SendMessage"):
            sqs.meta.events.register(f"before-call.sqs.{operation}", before_dlq)
            sqs.meta.events.register(f"after-call.sqs.{operation}", after_dlq)


class LambdaContext:
    def __init__(self, seconds: float) -> None:
        self._ends = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return int(max(0.0, self._ends - time.monotonic()) * 1000)


# -------------------------------------------------------------------------------- the source


class EventSource:
    """Pending deliveries per workload; failed ones come back after a visibility delay."""

    def __init__(self, stream: list[Delivery], config: ChaosConfig) -> None:
        self.config = config
        self.ready: dict[str, list[Delivery]] = {w: [] for w in WORKLOADS}
        for delivery in reversed(stream):  # popped from the end: stream order
            self.ready[delivery.workload].append(delivery)
        self.delayed: list[tuple[float, int, Delivery]] = []
        self.in_flight = 0
        self.redelivered: Counter[str] = Counter()
        self._seq = 0
        self._cond = threading.Condition()

    def take(self, turn: int) -> tuple[str, list[Delivery]] | None:
        """The next batch (one workload), or None when everything is settled."""
        with self._cond:
            while True:
                now = time.monotonic()
                while self.delayed and self.delayed[0][0] <= now:
                    _, _, delivery = heapq.heappop(self.delayed)
                    self.ready[delivery.workload].append(delivery)
                order = WORKLOADS[turn % 3 :] + WORKLOADS[: turn % 3]
                for workload in order:
                    if self.ready[workload]:
                        self.in_flight += 1
                        return workload, self._batch(workload)
                if not self.delayed and self.in_flight == 0:
                    self._cond.notify_all()
                    return None
                wait = self.delayed[0][0] - now if self.delayed else 0.5
                self._cond.wait(max(0.001, min(wait, 0.5)))

    def _batch(self, workload: str) -> list[Delivery]:
        size = self.config.kafka_batch if workload == PAYMENTS else self.config.sqs_batch
        pending = self.ready[workload]
        batch: list[Delivery] = []
        seen: set[str] = set()
        skipped: list[Delivery] = []
        while pending and len(batch) < size:
            delivery = pending.pop()
            if delivery.transport_id in seen:  # a broker never hands out one id twice in a batch
                skipped.append(delivery)
            else:
                seen.add(delivery.transport_id)
                batch.append(delivery)
        pending.extend(reversed(skipped))
        return batch

    def settle(self, workload: str, again: list[Delivery]) -> None:
        with self._cond:
            self.in_flight -= 1
            delay = self.config.redelivery_delay
            if workload == NOTIFICATIONS:  # a held lease needs its expiry before a retry helps
                delay = max(delay, self.config.lease_seconds / 4)
            for delivery in again:
                self.redelivered[workload] += 1
                self._seq += 1
                heapq.heappush(
                    self.delayed, (time.monotonic() + delay, self._seq, _redeliver(delivery))
                )
            self._cond.notify_all()


def _redeliver(delivery: Delivery) -> Delivery:
    record = dict(delivery.record)
    if delivery.workload != PAYMENTS:
        attributes = dict(record["attributes"])
        attributes["ApproximateReceiveCount"] = str(delivery.attempt + 1)
        record["attributes"] = attributes
        record["receiptHandle"] = base64.b64encode(uuid.uuid4().bytes).decode("ascii")
    return Delivery(
        delivery.workload, delivery.event_id, delivery.transport_id, record, delivery.attempt + 1
    )


def _event(workload: str, batch: list[Delivery]) -> dict[str, Any]:
    if workload != PAYMENTS:
        return {"Records": [delivery.record for delivery in batch]}
    grouped: dict[str, list[dict[str, Any]]] = {}
    for delivery in batch:
        grouped.setdefault(f"{TOPIC}-{delivery.record['partition']}", []).append(delivery.record)
    for records in grouped.values():
        records.sort(key=lambda raw: int(raw["offset"]))
    return {"eventSource": "aws:kafka", "eventSourceArn": KAFKA_ARN, "records": grouped}


def _failed(workload: str, batch: list[Delivery], response: Mapping[str, Any]) -> list[Delivery]:
    ids = set()
    for failure in response["batchItemFailures"]:
        ident = failure["itemIdentifier"]
        ids.add(f"{ident['topic-partition']}:{ident['offset']}" if workload == PAYMENTS else ident)
    return [delivery for delivery in batch if delivery.transport_id in ids]


def consume(container: Container, source: EventSource) -> None:
    stats = container.stats
    turn = container.index
    while True:
        taken = source.take(turn)
        if taken is None:
            return
        turn += 1
        workload, batch = taken
        again: list[Delivery] = batch
        try:
            started = time.perf_counter()
            try:
                response = container.modules[workload].handler(
                    _event(workload, batch), LambdaContext(container.config.lambda_timeout)
                )
            finally:
                elapsed = time.perf_counter() - started
                with container._lock:
                    stats.invocations[workload] += 1
                    stats.deliveries[workload] += len(batch)
                    stats.batch_seconds[workload].append(elapsed)
            lost = container.config.lost_response_rate
            if container.roll(container.config.crash_rate if lost is None else lost):
                container.crash("before acknowledgement (batch response lost)")
            again = _failed(workload, batch, response)
            with container._lock:
                stats.failures_reported[workload] += len(again)
        except Crash:
            again = batch
        finally:
            source.settle(workload, again)
