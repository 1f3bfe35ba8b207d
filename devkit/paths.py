"""Where things are in the checkout devkit is installed from (`pip install -e .`)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
EVENTS_DIR = REPO_ROOT / "events"
FUNCTIONS_DIR = REPO_ROOT / "functions"
#: The library, as the layer ships it.
LAYER_DIR = REPO_ROOT / "layers" / "inbox"
#: PYTHONPATH for commands run as processes: this checkout's library and tools first (also in a
#: worktree whose .venv has another checkout installed).
CHECKOUT_PYTHONPATH = os.pathsep.join(str(REPO_ROOT / d) for d in ("layers/inbox", "tools"))
#: CHECKOUT_PYTHONPATH with this checkout's devkit too: for `lambda-inbox local` running the demo
#: (`devkit.demo`, found by its entry point or named with --workload).
DEMO_PYTHONPATH = os.pathsep.join((CHECKOUT_PYTHONPATH, str(REPO_ROOT)))
