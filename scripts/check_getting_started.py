"""`make getting-started-check`: docs/getting-started.md followed word for word, as a new user
would, in a fresh folder with nothing of this checkout's environment.

    .venv/bin/python scripts/check_getting_started.py [--keep]

The page's steps, in its order, become one bash session: a ```` ```bash ```` block marked
`<!-- run -->` runs as it is written; a block marked `<!-- snippet: file X -->` (Python, TOML,
YAML) is written to X in the folder the session is in at that point, its parts joined as the
page joins them. Two marks say what a person does by hand: `<!-- run: until ready -->` starts a
command that keeps running (the local stack) and waits until it prints its `export` lines;
`<!-- run: with its exports -->` runs its block after pasting those lines, as the page asks.
Nothing else is run or written: a step the page lacks fails the run.

The session has a new HOME and folder, a PATH of the system's directories only (Debian's
python3, git, Java, npm; no virtualenv, no pyenv), no AWS credentials or endpoints. The one
substitution: the page's `git clone` of the repository clones this checkout's HEAD instead (the
script checks the page's URL is the repository's, mkdocs.yml's `repo_url`). pip keeps the
machine's download cache and package settings, which only make it faster.

A failure names the page's line of the step that failed. After the session: the project's tests
passed, `sam validate` found the template valid, and `lambda-inbox show` read the order sent as
COMPLETED.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "getting-started.md"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: What a session must have printed, in order: the page's promises.
EXPECTED = [
    (re.compile(r"^\d+ passed", re.MULTILINE), "the project's tests passed"),
    (re.compile(r"is a valid SAM Template"), "sam validate found the template valid"),
    (re.compile(r"COMPLETED"), "lambda-inbox show read the order as COMPLETED"),
]
READY = re.compile(r"^\s*export INBOX_TABLE=", re.MULTILINE)
READY_TIMEOUT = 300.0

_STEP = re.compile(
    r"^(?P<indent>[ \t]*)<!--\s*(?P<mark>run(?::[^>]*?)?|snippet:\s*file\s+(?P<file>\S+))\s*-->\n"
    r"(?P=indent)```(?P<language>\w+)[ \t]*\n(?P<source>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


class PageError(Exception):
    """The page cannot be followed: a mark on the wrong block, a clone of another repository."""


@dataclass(frozen=True)
class Step:
    line: int  # the page's line of the block's first source line
    kind: str  # "run", "until ready", "with its exports", "file"
    source: str
    file: str | None = None


def steps(text: str) -> list[Step]:
    """The page's marked blocks, in order."""
    found = []
    for match in _STEP.finditer(text):
        line = text.count("\n", 0, match.start("source")) + 1
        source = "".join(
            part.removeprefix(match["indent"]) for part in match["source"].splitlines(keepends=True)
        )
        if match["file"]:
            found.append(Step(line, "file", source, match["file"]))
            continue
        kind = match["mark"].partition(":")[2].strip() or "run"
        if match["language"] != "bash" or kind not in ("run", "until ready", "with its exports"):
            raise PageError(
                f"{PAGE.name}:{line}: a run mark on a {match['language']} block: {kind}"
            )
        found.append(Step(line, kind, source))
    return found


def commands(step: Step) -> list[tuple[int, str]]:
    """The step's commands, each with its page line (a line ending in `\\` goes on)."""
    result: list[tuple[int, str]] = []
    pending: list[str] = []
    start = step.line
    for offset, line in enumerate(step.source.splitlines()):
        if not pending:
            start = step.line + offset
        pending.append(line)
        if not line.rstrip().endswith("\\"):
            command = "\n".join(pending)
            if command.strip() and not command.lstrip().startswith("#"):
                result.append((start, command))
            pending = []
    return result


def repository_url() -> str:
    found = re.search(r"^repo_url:\s*(\S+)", (ROOT / "mkdocs.yml").read_text(), re.MULTILINE)
    if found is None:
        raise PageError("mkdocs.yml has no repo_url")
    return f"{found[1]}.git"


def session_script(page_steps: list[Step], clone_from: Path, log: Path) -> str:
    """One bash script for the whole page: each command preceded by its page line."""
    url = repository_url()
    out = [
        "set -eEuo pipefail",
        "PAGE_LINE=0",
        f"trap 'echo \"getting-started: the step at {PAGE.name}:$PAGE_LINE failed\" >&2' ERR",
        "BACKGROUND=''",
        'trap \'[ -n "$BACKGROUND" ] && kill "$BACKGROUND" 2>/dev/null; true\' EXIT',
    ]
    written: set[str] = set()
    for step in page_steps:
        if step.file:
            redirect = ">>" if step.file in written else ">"
            separator = (
                "" if step.file not in written else "printf '\\n' >> " + shlex.quote(step.file)
            )
            written.add(step.file)
            out += [
                f"PAGE_LINE={step.line}",
                f"mkdir -p {shlex.quote(str(Path(step.file).parent))}",
                separator,
                f"cat {redirect} {shlex.quote(step.file)} <<'PAGE_FILE_END'",
                step.source.rstrip("\n"),
                "PAGE_FILE_END",
            ]
            continue
        if step.kind == "with its exports":
            out += [
                f"PAGE_LINE={step.line}",
                f"eval \"$(grep -E '^[[:space:]]*export ' {shlex.quote(str(log))})\"",
            ]
        for line, command in commands(step):
            if command.startswith("git clone "):
                if command.split()[2] != url:
                    raise PageError(f"{PAGE.name}:{line}: the page clones {command.split()[2]}")
                command = f"git clone --quiet {shlex.quote(str(clone_from))} lambda-inbox"
            out.append(f"PAGE_LINE={line}")
            if step.kind == "until ready":
                out += [
                    f"{command} > {shlex.quote(str(log))} 2>&1 &",
                    "BACKGROUND=$!",
                    f'wait_until_ready {shlex.quote(str(log))} "$BACKGROUND"',
                ]
            else:
                out.append(command)
    return "\n".join(out) + "\n"


WAIT_UNTIL_READY = f"""
wait_until_ready() {{
  local log="$1" pid="$2" waited=0
  until grep -qE '{READY.pattern.removeprefix("^")}' "$log"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "getting-started: the command at {PAGE.name}:$PAGE_LINE stopped:" >&2; cat "$log" >&2
      return 1
    fi
    if (( waited >= {int(READY_TIMEOUT)} )); then
      echo "getting-started: no export lines after {int(READY_TIMEOUT)} s:" >&2; cat "$log" >&2
      return 1
    fi
    sleep 1; waited=$((waited + 1))
  done
  echo "(the local stack is up after $waited s)"
}}
"""


def clean_environment(home: Path) -> dict[str, str]:
    keep = ("LANG", "LC_ALL", "TERM", "TZ", "JAVA_HOME")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("PIP_")}
    env.update(
        HOME=str(home),
        PATH=SYSTEM_PATH,
        SAM_CLI_TELEMETRY="0",
        PIP_CACHE_DIR=os.environ.get(
            "PIP_CACHE_DIR", str(Path(os.environ.get("HOME", "/root")) / ".cache" / "pip")
        ),
        npm_config_cache=str(Path(os.environ.get("HOME", "/root")) / ".npm"),
        COLUMNS="200",
    )
    return env


def follow(keep: bool = False) -> int:
    page_steps = steps(PAGE.read_text())
    folder = Path(tempfile.mkdtemp(prefix="getting-started-"))
    home, work = folder / "home", folder / "work"
    home.mkdir()
    work.mkdir()
    log = folder / "local-stack.log"
    script = folder / "page.sh"
    script.write_text(WAIT_UNTIL_READY + session_script(page_steps, ROOT, log))
    started = time.monotonic()
    print(f"getting-started: {len(page_steps)} steps of {PAGE.relative_to(ROOT)} in {work}")
    try:
        done = subprocess.run(
            ["/bin/bash", str(script)],
            cwd=work,
            env=clean_environment(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        print(done.stdout)
        if done.returncode != 0:
            print(f"getting-started: FAILED (exit {done.returncode})", file=sys.stderr)
            return 1
        missing = [what for pattern, what in EXPECTED if not pattern.search(done.stdout)]
        if missing:
            print(f"getting-started: FAILED: not shown: {'; '.join(missing)}", file=sys.stderr)
            return 1
        print(f"getting-started: followed word for word in {time.monotonic() - started:.0f} s")
        return 0
    finally:
        if keep:
            print(f"getting-started: kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the folder it ran in")
    return follow(parser.parse_args(argv).keep)


if __name__ == "__main__":
    sys.exit(main())
