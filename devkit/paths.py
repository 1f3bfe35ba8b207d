"""Where things are in the checkout devkit is installed from (`pip install -e .`)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
EVENTS_DIR = REPO_ROOT / "events"
FUNCTIONS_DIR = REPO_ROOT / "functions"
