"""The starter's Jinja extension (cookiecutter's `_extensions`): `starter_checkout`, the
lambda-inbox checkout this template lives in, the default of `lambda_inbox_checkout`, and
`starter_version`, the library's version there. A project generated before lambda-inbox is on the
package index builds the library's wheels from there and names that version."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from jinja2.ext import Extension

CHECKOUT = Path(__file__).resolve().parent.parent
#: The one version number (lambda_inbox.__version__), read as text: nothing is imported.
VERSION = re.search(
    r'^__version__ = "([^"]+)"',
    (CHECKOUT / "layers" / "inbox" / "lambda_inbox" / "__init__.py").read_text(),
    re.MULTILINE,
)


class StarterCheckout(Extension):
    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        environment.globals["starter_checkout"] = str(CHECKOUT)
        environment.globals["starter_version"] = VERSION[1] if VERSION else ""
