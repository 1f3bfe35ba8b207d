"""docs/security.md says what the template holds: the number of checkov skips and, for each
check, the resources it is skipped on; and the queue policy of the topic-fed queue lets the
topic, the relay and the redriver send, nothing else."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from devkit.paths import REPO_ROOT
from lambda_inbox_tools.local.cfn import load_template

TEMPLATE = load_template(REPO_ROOT / "template.yaml")
SECURITY = (REPO_ROOT / "docs" / "security.md").read_text()


def skips(template: dict[str, Any]) -> dict[str, set[str]]:
    """Check id -> the resources whose `Metadata.checkov.skip` names it."""
    found: dict[str, set[str]] = defaultdict(set)
    for name, resource in template["Resources"].items():
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
            found[skip["id"]].add(name)
    return dict(found)


def documented(text: str) -> tuple[int, dict[str, set[str]]]:
    """The skip count security.md states and its table: check id -> resources named."""
    (count,) = re.findall(r"0 failed,\s+(\d+) skipped", text)
    table: dict[str, set[str]] = defaultdict(set)
    for check, resources in re.findall(r"^\| (CKV_AWS_\d+) [^|]*\| ([^|]*) \|", text, re.M):
        table[check] |= set(re.findall(r"`(\w+)`", resources))
    return int(count), dict(table)


def mismatches(text: str) -> list[str]:
    """Where security.md's count or table of skips differs from the template's skips."""
    found = skips(TEMPLATE)
    count, table = documented(text)
    functions = {
        name
        for name, resource in TEMPLATE["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }
    # A row naming no resource ("the five functions") stands for every function.
    table = {check: names or functions for check, names in table.items()}
    problems = []
    if count != sum(len(resources) for resources in found.values()):
        problems.append(f"{count} skipped, the template has {found}")
    for check in sorted(set(found) | set(table)):
        if found.get(check) != table.get(check):
            problems.append(f"{check}: template {found.get(check)}, docs {table.get(check)}")
    return problems


def test_the_documented_skips_are_the_templates() -> None:
    assert mismatches(SECURITY) == []


def test_a_skip_the_document_leaves_out_or_miscounts_is_caught() -> None:
    count, _ = documented(SECURITY)
    without_a_row = re.sub(r"^\| CKV_AWS_26 .*\n", "", SECURITY, flags=re.M)
    miscounted = SECURITY.replace(f"0 failed,\n{count} skipped", f"0 failed,\n{count - 1} skipped")
    assert miscounted != SECURITY
    assert mismatches(without_a_row) and mismatches(miscounted)


def test_the_topic_fed_queue_denies_every_other_sender() -> None:
    statements = TEMPLATE["Resources"]["NotificationQueuePolicy"]["Properties"]["PolicyDocument"][
        "Statement"
    ]
    (deny,) = [s for s in statements if s["Effect"] == "Deny"]
    assert deny["Action"] == "sqs:SendMessage" and deny["Principal"] == "*"
    unless = deny["Condition"]
    assert set(unless["ArnNotEquals"]) == {"aws:SourceArn", "aws:PrincipalArn"}
    assert set(unless["StringNotLike"]) == {"aws:userid"}
