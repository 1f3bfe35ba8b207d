"""The AWS environment of every local run (tests, demo, benchmarks): fake credentials, one
region, no ~/.aws files, and no inherited profile or endpoint, so nothing reaches a real account
or a developer's own endpoints."""

from __future__ import annotations

import os
from collections.abc import Mapping

REGION = "us-east-1"
OFFLINE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
_PROFILES = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")


def inherited_aws_settings(environ: Mapping[str, str]) -> list[str]:
    """The names in `environ` that could point a client at a real account or endpoint."""
    return [name for name in environ if name in _PROFILES or name.startswith("AWS_ENDPOINT_URL")]


def use_offline_aws(**extra: str) -> None:
    """For scripts: drop inherited profiles and endpoints from `os.environ`, then set
    `OFFLINE_AWS_ENV` and `extra` (Powertools settings, say)."""
    for name in inherited_aws_settings(os.environ):
        del os.environ[name]
    os.environ.update(OFFLINE_AWS_ENV, **extra)
