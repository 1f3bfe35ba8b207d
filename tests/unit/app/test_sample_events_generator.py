"""The committed sample events are exactly what events/generate.py produces."""

from __future__ import annotations

import subprocess
import sys

from devkit.paths import REPO_ROOT


def test_committed_events_match_their_generator() -> None:
    done = subprocess.run(
        [sys.executable, "events/generate.py", "--check"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
