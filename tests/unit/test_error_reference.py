"""Every error code and exception is in the documented error reference."""

from __future__ import annotations

import inspect
from pathlib import Path

from lambda_inbox import errors

REFERENCE = (Path(__file__).resolve().parents[2] / "docs" / "errors.md").read_text()


def test_every_error_code_is_documented() -> None:
    missing = [code.value for code in errors.ErrorCode if f"`{code.value}`" not in REFERENCE]
    assert missing == []


def test_every_exception_is_an_inbox_error_with_a_code_and_is_documented() -> None:
    exceptions = [
        value
        for value in vars(errors).values()
        if inspect.isclass(value)
        and issubclass(value, Exception)
        and value.__module__ == errors.__name__
    ]
    assert len(exceptions) >= 10
    for exception in exceptions:
        assert issubclass(exception, errors.InboxError), exception
        assert f"`{exception.__name__}`" in REFERENCE, exception
        assert isinstance(exception.code, str) and exception.code
