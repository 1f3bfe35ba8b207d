"""One chaos run end to end, its rendering, and the command line (`benchmarks/chaos.py`)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass

import boto3

from devkit.handlers import load_function
from devkit.tables import create_domain_table, create_inbox_table, delete_table, seed_stock
from lambda_inbox_tools.services.offline import patched_environ

from .containers import Container, EventSource, consume
from .meters import Stats
from .relay import RelayStats, relay_outbox
from .verdict import Verdict, verify
from .webhook import WebhookReceiver, running_webhook
from .workload import (
    CRASH_KINDS,
    FUNCTIONS,
    POWERTOOLS_ENV,
    THROTTLE_CODES,
    WORKLOADS,
    ChaosConfig,
    Workload,
    build_workload,
)

# ------------------------------------------------------------------------------------ the run


@dataclass
class ChaosResult:
    config: ChaosConfig
    workload: Workload
    stats: Stats
    verdict: Verdict
    seconds: float
    cpu_seconds: float
    redelivered: Counter[str]
    relay: RelayStats
    #: Messages the relay left on the notifications queue (duplicates of crashed sends included).
    relayed_messages: int

    @property
    def lost(self) -> int:
        return sum(self.verdict.lost.values())

    @property
    def double_applied(self) -> int:
        return sum(self.verdict.double_applied.values())

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.double_applied == 0 and not self.verdict.problems

    def summary(self) -> str:
        return render(self)


def run_chaos(config: ChaosConfig, dynamodb_endpoint: str, sqs_endpoint: str) -> ChaosResult:
    """One chaos run against running DynamoDB Local and SQS (moto server) endpoints."""
    workload = build_workload(config)
    admin = boto3.client("dynamodb", endpoint_url=dynamodb_endpoint, region_name="us-east-1")
    sqs = boto3.client("sqs", endpoint_url=sqs_endpoint, region_name="us-east-1")
    suffix = uuid.uuid4().hex[:10]
    inbox_table, domain_table = f"chaos-inbox-{suffix}", f"chaos-domain-{suffix}"
    create_inbox_table(admin, inbox_table)
    create_domain_table(admin, domain_table, stream=True)
    dlq_urls = {
        w: sqs.create_queue(QueueName=f"chaos-{w}-dlq-{suffix}")["QueueUrl"] for w in WORKLOADS
    }
    webhook = WebhookReceiver(config.webhook_error_rate, config.seed)
    try:
        seed_stock(admin, domain_table, workload.stock)
        with running_webhook(webhook), open(os.devnull, "w") as null:
            common = {
                **POWERTOOLS_ENV,
                "INBOX_TABLE": inbox_table,
                "DOMAIN_TABLE": domain_table,
                "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_endpoint,
                "AWS_ENDPOINT_URL_SQS": sqs_endpoint,
                "NOTIFY_WEBHOOK_URL": webhook.url,
                "NOTIFY_LEASE_SECONDS": str(config.lease_seconds),
                # Chaos must not exhaust a message's leased attempts (that would dead-letter a
                # valid notification): every retry here is made by the chaos itself.
                "NOTIFY_MAX_ATTEMPTS": "1000",
                "INBOX_DUPLICATE_READ": config.duplicate_read,
            }
            containers = []
            # Clients read their endpoints when they are created: build everything inside.
            with patched_environ(common), contextlib.redirect_stdout(null):
                for index in range(config.consumers):
                    modules = {}
                    for name in WORKLOADS:
                        with patched_environ({"DEAD_LETTER_QUEUE_URL": dlq_urls[name]}):
                            modules[name] = load_function(FUNCTIONS[name])
                    containers.append(Container(index, modules, config))
            source = EventSource(workload.stream, config)
            threads = [
                threading.Thread(target=consume, args=(c, source), name=f"chaos-consumer-{c.index}")
                for c in containers
            ]
            started = time.perf_counter()
            cpu_started = time.process_time()
            with contextlib.redirect_stdout(null):
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            # The outbox leg: the shipped orders' notification requests, relayed from the
            # table's stream (the relay crashing after sends), then consumed like the rest.
            streams = boto3.client(
                "dynamodbstreams", endpoint_url=dynamodb_endpoint, region_name="us-east-1"
            )
            with patched_environ(common), contextlib.redirect_stdout(null):
                relayed, relay_stats = relay_outbox(
                    admin, streams, domain_table, config, sqs_endpoint
                )
                second = EventSource(relayed, config)
                threads = [
                    threading.Thread(
                        target=consume, args=(c, second), name=f"chaos-relayed-{c.index}"
                    )
                    for c in containers
                ]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            seconds = time.perf_counter() - started
            cpu_seconds = time.process_time() - cpu_started
        stats = Stats()
        for container in containers:
            stats.merge(container.stats)
        verdict = verify(workload, admin, inbox_table, domain_table, sqs, dlq_urls, webhook)
        return ChaosResult(
            config,
            workload,
            stats,
            verdict,
            seconds,
            cpu_seconds,
            source.redelivered + second.redelivered,
            relay_stats,
            len(relayed),
        )
    finally:
        for table in (inbox_table, domain_table):
            delete_table(admin, table)
        for url in dlq_urls.values():
            with contextlib.suppress(Exception):
                sqs.delete_queue(QueueUrl=url)


def render(result: ChaosResult) -> str:
    config, stats, verdict, workload = result.config, result.stats, result.verdict, result.workload
    deliveries = sum(stats.deliveries.values())
    stream = len(workload.stream)
    dups = sum(workload.stream_duplicates.values())
    same = sum(workload.same_id_duplicates.values())
    lines = [
        f"chaos: seed {config.seed}, {config.consumers} consumers, DynamoDB Local, "
        f"duplicate read {config.duplicate_read}",
        f"stream: {stream:,} deliveries of {len(workload.events):,} distinct events; "
        f"duplicates {dups:,} ({100 * dups / stream:.1f}%: {same:,} same transport id, "
        f"{dups - same:,} new); logical duplicates and poison included",
        f"handled: {deliveries:,} deliveries in {sum(stats.invocations.values()):,} invocations "
        f"({deliveries - stream:,} redeliveries after reported failures, crashes and lost responses)",
        "crashes: "
        + ", ".join(f"{kind} {stats.crashes[kind]}" for kind in CRASH_KINDS)
        + f" (total {sum(stats.crashes.values())})",
        "throttles injected: "
        + ", ".join(f"{code} {stats.throttles[code]}" for code in THROTTLE_CODES),
        f"cancelled transactions: {stats.cancelled_transactions} (reasons: "
        + ", ".join(f"{code} {n}" for code, n in sorted(stats.reasons.items()))
        + ")",
        f"transaction conflicts: {stats.conflict_transactions} transactions cancelled by "
        f"TransactionConflict, {stats.injected_conflicts} of them injected, "
        f"{stats.conflict_transactions - stats.injected_conflicts} real (concurrent consumers)",
        f"outbox: {verdict.notification_requests} notification requests for "
        f"{verdict.shipped_orders} shipped orders, {result.relayed_messages} messages relayed "
        f"through {'an SNS topic to its queue' if config.relay_via == 'sns' else 'the queue'} "
        f"({result.relay.invocations} relay invocations, {result.relay.crashes} crashes after a send)",
        f"webhook: {verdict.webhook_calls} calls, {verdict.webhook_keys_called_again} keys called "
        "more than once (absorbed by Idempotency-Key)",
        f"lost: {result.lost}",
        f"double-applied: {result.double_applied}",
        "dead-lettered (distinct keys / poison sent / DLQ messages): "
        + ", ".join(
            f"{w} {verdict.dead_lettered[w]}/{verdict.poison_sent[w]}/{verdict.dlq_messages[w]}"
            for w in WORKLOADS
        ),
        f"wall time: {result.seconds:.1f} s, {deliveries / result.seconds:,.0f} deliveries/s "
        f"(CPU of the consumers' process, webhook and moto server included: {result.cpu_seconds:.1f} s)",
        "",
        "| workload | distinct events | deliveries | invocations | batch ms median (p90) "
        "| requests / delivery | requests / event | WCU / event | of which cancelled "
        "| RCU / event | requests by operation |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for w in WORKLOADS:
        events = sum(1 for e in workload.events.values() if e.workload == w)
        requests = sum(n for (wl, _), n in stats.requests.items() if wl == w)
        ops = ", ".join(f"{op} {n}" for (wl, op), n in sorted(stats.requests.items()) if wl == w)
        times = sorted(stats.batch_seconds[w]) or [0.0]
        p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
        wcu = stats.wcu[w] + stats.wcu_cancelled[w]
        lines.append(
            f"| {w} | {events:,} | {stats.deliveries[w]:,} | {stats.invocations[w]:,} "
            f"| {1000 * statistics.median(times):.0f} ({1000 * p90:.0f}) "
            f"| {requests / max(1, stats.deliveries[w]):.2f} | {requests / max(1, events):.2f} "
            f"| {wcu / max(1, events):.2f} | {stats.wcu_cancelled[w] / max(1, events):.2f} "
            f"| {stats.rcu_halves[w] / 2 / max(1, events):.2f} | {ops} |"
        )
    lines.append(
        "WCU computed as in docs/PERFORMANCE.md (2 per KB per transaction action, 1 per KB per "
        "standard write, also when its condition fails); cancelled transactions counted at full "
        "cost (upper bound); throttled sends cost nothing. Per event = per distinct event_id."
    )
    if verdict.problems:
        lines.append("problems:")
        lines.extend(f"  {problem}" for problem in verdict.problems)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    defaults = ChaosConfig()
    parser.add_argument("--deliveries", type=int, default=defaults.deliveries)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--consumers", type=int, default=defaults.consumers)
    parser.add_argument("--duplicates", type=float, default=defaults.duplicates)
    parser.add_argument("--crash-rate", type=float, default=defaults.crash_rate)
    parser.add_argument(
        "--lost-response-rate",
        type=float,
        default=defaults.lost_response_rate,
        help="per invocation (default: the crash rate)",
    )
    parser.add_argument("--throttle-rate", type=float, default=defaults.throttle_rate)
    parser.add_argument(
        "--duplicate-read", choices=("auto", "always", "never"), default=defaults.duplicate_read
    )
    parser.add_argument(
        "--relay-via",
        choices=("sqs", "sns"),
        default=defaults.relay_via,
        help="the outbox leg: to the queue, or through an SNS topic to it (moto server)",
    )
    args = parser.parse_args()
    config = ChaosConfig(
        deliveries=args.deliveries,
        seed=args.seed,
        consumers=args.consumers,
        duplicates=args.duplicates,
        crash_rate=args.crash_rate,
        lost_response_rate=args.lost_response_rate,
        throttle_rate=args.throttle_rate,
        duplicate_read=args.duplicate_read,
        relay_via=args.relay_via,
    )
    from moto.server import ThreadedMotoServer

    from lambda_inbox_tools.services.dynamodb_local import dynamodb_local_or_exit
    from lambda_inbox_tools.services.offline import use_offline_aws

    use_offline_aws(**POWERTOOLS_ENV)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto server's request log
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        with dynamodb_local_or_exit() as endpoint:
            result = run_chaos(config, endpoint, f"http://{host}:{port}")
    finally:
        server.stop()
    print(
        "command: .venv/bin/python benchmarks/chaos.py "
        f"--deliveries {config.deliveries} --seed {config.seed}"
        + (f" --duplicate-read {config.duplicate_read}" if config.duplicate_read != "auto" else "")
        + (f" --relay-via {config.relay_via}" if config.relay_via != "sqs" else "")
    )
    print(result.summary())
    sys.exit(0 if result.ok else 1)


if __name__ == "__main__":
    main()
