"""`make template-lint`'s check that every inbox of this repository's templates keeps its records
as long as its queue and dead-letter queue can hold a message (lambda_inbox_tools.local.retention).

    .venv/bin/python scripts/check_retention.py [TEMPLATE ...]

Without arguments: template.yaml, the Getting started template and every example's. Exit 1 with
what to fix when one is too short.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lambda_inbox_tools.local.retention import retention_problems
from lambda_inbox_tools.local.stack import read_local_stack

ROOT = Path(__file__).resolve().parents[1]


def main(arguments: list[str]) -> int:
    templates = [Path(name) for name in arguments] or [
        ROOT / "template.yaml",
        ROOT / "docs" / "snippets" / "getting-started.yaml",
        *sorted((ROOT / "examples").glob("*/template.yaml")),
    ]
    failed = False
    for template in templates:
        stack = read_local_stack(template, sqs_endpoint="http://127.0.0.1:4566")
        problems = retention_problems(stack)
        name = template.relative_to(ROOT) if template.is_relative_to(ROOT) else template
        print(f"{name}: {'ok' if not problems else 'too short'}")
        for problem in problems:
            print(f"  {problem}")
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
