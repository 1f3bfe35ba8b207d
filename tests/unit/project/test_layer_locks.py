"""The layers' locks: made from today's pyproject.toml (a lock left stale by a change of a range
fails here, in `make check`, without the network), every requirement pinned `==` with hashes,
every input pinned inside its range; each rule proven by the broken lock it must catch. The
layers' Makefiles install nothing else (`--require-hashes` from the lock)."""

from __future__ import annotations

import re

import pytest

from devkit.locks import (
    INBOX,
    KAFKA_CODECS,
    LOCKS,
    LayerLock,
    lock_problems,
    pins,
    pyproject_inputs,
)
from devkit.paths import REPO_ROOT
from lambda_inbox_tools.local.cfn import load_template

INBOX_TEXT = INBOX.path.read_text()


def problems_of(
    lock: LayerLock, text: str | None = None, inputs: list[str] | None = None
) -> list[str]:
    below = lock.builds_on.path.read_text() if lock.builds_on else None
    return lock_problems(
        lock.path.read_text() if text is None else text,
        pyproject_inputs(lock) if inputs is None else inputs,
        below,
    )


@pytest.mark.parametrize("lock", LOCKS, ids=[lock.layer for lock in LOCKS])
def test_each_lock_is_made_from_todays_pyproject_and_pins_everything(lock: LayerLock) -> None:
    assert problems_of(lock) == []


def test_the_inbox_lock_holds_the_librarys_closure() -> None:
    pinned = pins(INBOX_TEXT)
    assert {"aws-lambda-powertools", "pydantic", "pydantic-core", "jmespath"} <= pinned.keys()
    assert "boto3" not in pinned and "botocore" not in pinned  # the runtime's


def test_the_codecs_lock_adds_only_what_inbox_layer_lacks() -> None:
    codecs = pins(KAFKA_CODECS.path.read_text())
    assert {"avro", "protobuf"} <= codecs.keys()
    assert codecs.keys().isdisjoint(pins(INBOX_TEXT))


@pytest.mark.parametrize("lock", LOCKS, ids=[lock.layer for lock in LOCKS])
def test_each_layer_installs_its_lock_and_nothing_else(lock: LayerLock) -> None:
    makefile = (lock.path.parent / "Makefile").read_text()
    install = re.search(r"pip install(?:[^\n]*\\\n)*[^\n]*", makefile)
    assert install is not None
    assert "--require-hashes" in install[0] and install[0].rstrip().endswith("-r requirements.lock")
    assert sorted(p.name for p in lock.path.parent.glob("requirements*")) == ["requirements.lock"]


# ---- each rule proven by a broken lock --------------------------------------------------------

PYDANTIC = re.search(r"^pydantic==(\S+) \\$", INBOX_TEXT, re.MULTILINE)


def test_a_lock_made_from_other_ranges_is_stale() -> None:
    inputs = [*pyproject_inputs(INBOX)]
    inputs[1] = "pydantic>=2.7"
    (problem,) = problems_of(INBOX, inputs=inputs)
    assert problem.startswith("stale: made from") and "run `make locks`" in problem


def test_a_range_instead_of_a_pin_is_named() -> None:
    assert PYDANTIC is not None
    text = INBOX_TEXT.replace(PYDANTIC[0], "pydantic>=2.6 \\")
    assert "not pinned with ==: pydantic>=2.6" in problems_of(INBOX, text)


def test_a_pin_without_hashes_is_named() -> None:
    text = re.sub(
        r"^(typing-inspection==\S+) \\\n(    --hash=\S+( \\)?\n)+", r"\1\n", INBOX_TEXT, flags=re.M
    )
    version = pins(INBOX_TEXT)["typing-inspection"]
    assert f"no hash: typing-inspection=={version}" in problems_of(INBOX, text)


def test_a_pin_outside_its_input_range_is_named() -> None:
    assert PYDANTIC is not None
    (pydantic,) = [line for line in pyproject_inputs(INBOX) if line.startswith("pydantic")]
    text = INBOX_TEXT.replace(PYDANTIC[0], "pydantic==1.10.2 \\")
    found = problems_of(INBOX, text)
    assert f"input {pydantic} is pinned at 1.10.2, outside its range" in found


def test_an_input_pinned_nowhere_is_named() -> None:
    """The codecs lock leaves Powertools to InboxLayer's lock; read alone, it lacks it."""
    text = KAFKA_CODECS.path.read_text()
    found = lock_problems(text, pyproject_inputs(KAFKA_CODECS), builds_on=None)
    assert found == [f"input {pyproject_inputs(KAFKA_CODECS)[0]} is not pinned"]


def test_a_lock_without_its_moment_is_named() -> None:
    text = re.sub(r"^# resolved: .*\n", "", INBOX_TEXT, flags=re.M)
    assert problems_of(INBOX, text) == [
        "no `# resolved:` line: the index's moment it was resolved against"
    ]


def test_anything_beside_a_pin_and_its_hashes_is_named() -> None:
    text = INBOX_TEXT + "\nrequests==2.32.3 --hash=sha256:" + "0" * 64 + " --index-url http://x\n"
    assert any(
        p.startswith("more than a pin and its hashes: requests") for p in problems_of(INBOX, text)
    )


def test_both_powertools_choices_run_the_locked_powertools() -> None:
    """template.yaml's PowertoolsLayer: the bundled copy by default (works offline); AWS's
    managed layer, when chosen, at the release InboxLayer's lock pins (`make locks` sets it)."""
    parameters = load_template(REPO_ROOT / "template.yaml")["Parameters"]
    assert parameters["PowertoolsLayer"]["Default"] == "bundled"
    assert parameters["PowertoolsLayer"]["AllowedValues"] == ["bundled", "managed"]
    locked = pins(INBOX_TEXT)["aws-lambda-powertools"]
    assert parameters["ManagedPowertoolsVersion"]["Default"] == locked
