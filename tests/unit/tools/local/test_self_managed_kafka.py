"""The local stack hands a self-managed Kafka trigger events that name the bootstrap servers the
template configures, as AWS does (its sample, tests/fixtures/aws/self-managed-kafka-event.json),
not the local cluster it reads from; and it reads a stream trigger's ParallelizationFactor."""

from __future__ import annotations

from pathlib import Path

from devkit.aws_documents import aws_document, shape_problems
from lambda_inbox_tools.local.kafka_poller import KafkaRecord
from lambda_inbox_tools.local.kafka_poller import kafka_event as local_kafka_event
from lambda_inbox_tools.local.template import KafkaEventSpec, KinesisEventSpec, read_stack

SQS = "http://127.0.0.1:9999"
SAMPLE_SERVERS = str(aws_document("self-managed-kafka-event.json")["bootstrapServers"])
SERVERS_YAML = "\n".join(f"            - {server}" for server in SAMPLE_SERVERS.split(","))

TEMPLATE = f"""
Transform: AWS::Serverless-2016-10-31
Resources:
  Payments:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: src/
      Handler: app.handler
      Runtime: python3.13
      Events:
        FromKafka:
          Type: SelfManagedKafka
          Properties:
            Topics: [payments]
            KafkaBootstrapServers:
{SERVERS_YAML}
        FromStream:
          Type: Kinesis
          Properties:
            Stream: arn:aws:kinesis:us-east-1:123456789012:stream/points
            StartingPosition: TRIM_HORIZON
            ParallelizationFactor: 4
  Mapping:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      FunctionName: !Ref Payments
      Topics: [refunds]
      SelfManagedEventSource:
        Endpoints:
          KafkaBootstrapServers: [broker-1.example.com:9092]
"""


def _stack(tmp_path: Path) -> object:
    path = tmp_path / "template.yaml"
    path.write_text(TEMPLATE)
    (tmp_path / "src").mkdir()
    return read_stack(path, sqs_endpoint=SQS, stack_name="s")


def test_the_template_names_its_servers_and_its_parallelization(tmp_path: Path) -> None:
    stack = _stack(tmp_path)
    events = stack.function("Payments").events  # type: ignore[attr-defined]
    kafka = {e.topics: e for e in events if isinstance(e, KafkaEventSpec)}
    assert kafka[("payments",)].bootstrap_servers == tuple(SAMPLE_SERVERS.split(","))
    assert kafka[("refunds",)].bootstrap_servers == ("broker-1.example.com:9092",)
    assert all(e.self_managed for e in kafka.values())
    (kinesis,) = [e for e in events if isinstance(e, KinesisEventSpec)]
    assert kinesis.parallelization_factor == 4


def test_a_self_managed_event_names_the_configured_servers_as_aws_sample_does(
    tmp_path: Path,
) -> None:
    stack = _stack(tmp_path)
    events = stack.function("Payments").events  # type: ignore[attr-defined]
    (spec,) = [e for e in events if isinstance(e, KafkaEventSpec) and e.topics == ("payments",)]
    records = [KafkaRecord("payments", 0, 15, 1545084650987, b"k", b"v", [("h", b"x")])]
    event = local_kafka_event(records, "127.0.0.1:50123", spec)
    sample = aws_document("self-managed-kafka-event.json")
    assert event["bootstrapServers"] == sample["bootstrapServers"]  # not the local cluster's
    assert shape_problems(sample, event) == []
