"""The Powertools version the project relies on: 3.15.1 is the first whose Kafka Protobuf reader
takes the record's schema metadata (`get_deserializer(format, schema, metadata)`) and strips the
byte an AWS Glue Schema Registry producer puts before the record (3.15.0 takes no metadata and
reads the byte as part of the record). Every place that installs Powertools names that floor
(InboxLayer's lock pins a version inside it), the installed version meets it, and the reader
behaves as `lambda_inbox.ValueFormats` expects."""

from __future__ import annotations

import base64
import inspect
import tomllib
from importlib.metadata import version

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from devkit.locks import INBOX, pins
from devkit.paths import REPO_ROOT
from lambda_inbox.wire import aggregated_record_class

PIN = SpecifierSet(">=3.15.1,<4")
GLUE_SCHEMA_ID = "1ccd1b6c-2b5a-4a0f-9d3f-4f1a0c4b6f7e"


def _powertools_requirements() -> dict[str, Requirement]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    lines = {f"pyproject {line}": line for line in project["dependencies"]}
    for extra, listed in project["optional-dependencies"].items():
        lines |= {f"pyproject [{extra}] {line}": line for line in listed}
    requirements = {where: Requirement(line) for where, line in lines.items() if line.strip()}
    return {w: r for w, r in requirements.items() if r.name == "aws-lambda-powertools"}


def test_every_place_that_installs_powertools_names_the_pin() -> None:
    requirements = _powertools_requirements()
    assert len(requirements) >= 2  # the library, the kafka-codecs extra
    for where, requirement in requirements.items():
        assert requirement.specifier == PIN, where
    # InboxLayer installs its lock (made from those ranges, tests/unit/project/test_layer_locks.py).
    assert pins(INBOX.path.read_text())["aws-lambda-powertools"] in PIN


def test_the_installed_powertools_meets_the_pin() -> None:
    assert version("aws-lambda-powertools") in PIN
    assert "3.15.0" not in PIN and "3.15.1" in PIN  # the pin itself: 3.15.0 lacks the reader


def _record() -> bytes:
    message = aggregated_record_class()()
    message.partition_key_table.append("pk-1")
    return bytes(message.SerializeToString())


def _read(value: bytes, schema_id: str | None) -> dict[str, object]:
    from aws_lambda_powertools.utilities.kafka.deserializer.deserializer import get_deserializer

    metadata = None if schema_id is None else {"dataFormat": "PROTOBUF", "schemaId": schema_id}
    reader = get_deserializer("PROTOBUF", aggregated_record_class(), metadata)
    result = reader.deserialize(base64.b64encode(value).decode("ascii"))
    assert isinstance(result, dict)
    return result


def test_the_reader_takes_the_records_schema_metadata() -> None:
    from aws_lambda_powertools.utilities.kafka.deserializer.deserializer import get_deserializer

    assert "field_metadata" in inspect.signature(get_deserializer).parameters


def test_the_reader_strips_the_glue_byte_and_the_confluent_index_list() -> None:
    expected = {"partition_key_table": ["pk-1"]}
    assert _read(_record(), None) == expected
    assert _read(b"\x00" + _record(), GLUE_SCHEMA_ID) == expected  # Glue: one byte
    assert _read(b"\x00" + _record(), "42") == expected  # Confluent: the list [0], one 0
    # Without the metadata the byte is read as part of the record, which then does not parse.
    from aws_lambda_powertools.utilities.kafka.exceptions import (
        KafkaConsumerDeserializationError,
    )

    with pytest.raises(KafkaConsumerDeserializationError):
        _read(b"\x00" + _record(), None)
