"""The live display's rows: one line of counts per event source, and the dead-letter depths."""

from __future__ import annotations

from .stack import LocalStack


def progress_rows(local: LocalStack) -> list[tuple[str, str]]:
    rows = []
    for poller in local.sqs_pollers:
        s = poller.stats
        rows.append(
            (
                poller.label,
                f"{s.invocations} invocations, {s.records} records, {s.deleted} deleted, "
                f"{s.failed_records} back to the queue, {s.failed_invocations} failed",
            )
        )
    for kafka in local.kafka_pollers:
        k = kafka.stats
        rows.append(
            (
                kafka.label,
                f"{k.invocations} invocations, {k.records} records, {k.committed} committed, "
                f"{k.retried_records} retried, {k.failed_invocations} failed",
            )
        )
    for stream in local.stream_pollers:
        d = stream.stats
        rows.append(
            (
                stream.label,
                f"{d.invocations} invocations, {d.records} records, {d.filtered_out} filtered "
                f"out, {d.retried_records} retried, {d.given_up_batches} batches given up",
            )
        )
    for scheduler in local.schedulers:
        rows.append((scheduler.label, f"{scheduler.stats.invocations} runs"))
    for dlq, _ in local.stack.redrive_pairs():
        rows.append((dlq.name, f"{local.queue_depth(dlq.url)} messages"))
    return rows
