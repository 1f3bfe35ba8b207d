"""The starter's Jinja extension (cookiecutter's `_extensions`): `starter_checkout`, the
lambda-inbox checkout this template lives in, the default of `lambda_inbox_checkout`. A project
generated before lambda-inbox is on the package index installs the library from there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2.ext import Extension

CHECKOUT = Path(__file__).resolve().parent.parent


class StarterCheckout(Extension):
    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        environment.globals["starter_checkout"] = str(CHECKOUT)
