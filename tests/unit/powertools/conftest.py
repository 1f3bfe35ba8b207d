"""The Powertools bridge's tests run on devkit's in-memory AWS: Powertools' own calls and the
consumer's go to the same tables, and each test makes many of them."""

from __future__ import annotations

import pytest

from devkit.app_state import AppState


@pytest.fixture
def aws(in_memory_aws: AppState) -> AppState:
    return in_memory_aws
