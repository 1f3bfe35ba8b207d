"""docs/concepts.md's table of every record's fate and the reference model (tests/outcome_model.py)
say the same thing, line by line, and name only codes the library has."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace

import pytest

from devkit.paths import REPO_ROOT
from lambda_inbox import ErrorCode, Outcome
from tests.outcome_model import NONE, RULES, Rule

CONCEPTS = REPO_ROOT / "docs" / "concepts.md"
HEADING = "### Every record's fate"
COLUMNS = [
    "rule",
    "step",
    "the record",
    "outcome",
    "code",
    "reported",
    "inbox record after",
    "dead letter",
]


def table_rules(page: str) -> list[Rule]:
    """The rows of the table under `HEADING`, as `Rule`s (the prose column left out)."""
    lines = page.split(HEADING, 1)[1].splitlines()
    start = next(number for number, line in enumerate(lines) if line.startswith("|"))
    rows = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start:]))
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    assert header == COLUMNS, header
    rules = []
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == len(COLUMNS), row
        name, step, _, outcome, code, reported, record_after, dead_letter = cells
        rules.append(
            Rule(name.strip("`"), step, outcome, code, reported, record_after, dead_letter)
        )
    return rules


def differences(documented: list[Rule], modelled: tuple[Rule, ...]) -> list[str]:
    """Each line where the docs and the model part ways (empty when they agree)."""
    found = [
        f"line {number}: docs {doc} != model {model}"
        for number, (doc, model) in enumerate(zip(documented, modelled, strict=False), 1)
        if doc != model
    ]
    if len(documented) != len(modelled):
        found.append(f"{len(documented)} lines in the docs, {len(modelled)} in the model")
    return found


def test_the_docs_table_and_the_model_agree_line_by_line() -> None:
    assert differences(table_rules(CONCEPTS.read_text(encoding="utf-8")), RULES) == []


def test_every_outcome_and_code_of_the_table_is_the_librarys() -> None:
    for rule in RULES:
        assert rule.outcome in {outcome.value for outcome in Outcome}, rule
        assert rule.reported == ("yes" if Outcome(rule.outcome).needs_redelivery else "no"), rule
        codes = [] if rule.code == NONE else rule.code.split(", ")
        assert all(code in {c.value for c in ErrorCode} for code in codes), rule


@pytest.mark.parametrize(
    "broken",
    [
        lambda rules: rules[1:],  # a line missing
        lambda rules: [rules[1], rules[0], *rules[2:]],  # two lines swapped
        lambda rules: [replace(rules[0], code="handler_error"), *rules[1:]],  # a code changed
    ],
    ids=["missing", "swapped", "code changed"],
)
def test_the_comparison_catches_a_table_that_drifted(
    broken: Callable[[list[Rule]], list[Rule]],
) -> None:
    documented = table_rules(CONCEPTS.read_text(encoding="utf-8"))
    assert differences(broken(documented), RULES)
