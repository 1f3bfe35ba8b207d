"""Each in-process function sees its own environment, at import and for every invocation, as in
Lambda: the template's variables and the ones Lambda defines for every function
(`AWS_LAMBDA_FUNCTION_NAME`, its version, memory, log group and stream, `AWS_REGION`,
`_HANDLER`, `LAMBDA_TASK_ROOT`; plus `AWS_SAM_LOCAL`, which `sam local` sets too, so that a
library that would reach Lambda-only services, such as Powertools' tracer, knows it is local).

Functions run on threads of one process, several at once, and `os.environ` is the process's.
While `invocation_environments()` is active, `os.environ` (and so `os.getenv`) answers each
thread from its invocation's variables first, then from the process environment: two
functions with the same variable name see their own values at the same moment. Writes go to
the process environment. A child process a function starts inherits the process environment
only.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from .template import REGION, FunctionSpec


def lambda_variables(function: FunctionSpec, *, log_stream: str = "") -> dict[str, str]:
    """What Lambda defines for `function`, then the template's variables."""
    defined = {
        "AWS_LAMBDA_FUNCTION_NAME": function.name,
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size),
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function.name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": log_stream,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "_HANDLER": function.handler,
        "LAMBDA_TASK_ROOT": str(function.code_uri),
        "AWS_SAM_LOCAL": "true",
    }
    return {**defined, **function.environment}


class _ThreadEnviron(MutableMapping[str, str]):
    """`os.environ` with a per-thread overlay (see the module)."""

    def __init__(self, base: MutableMapping[str, str]) -> None:
        self.base = base
        self._local = threading.local()

    @property
    def overlay(self) -> Mapping[str, str] | None:
        value: Mapping[str, str] | None = getattr(self._local, "overlay", None)
        return value

    @overlay.setter
    def overlay(self, value: Mapping[str, str] | None) -> None:
        self._local.overlay = value

    def __getitem__(self, key: str) -> str:
        overlay = self.overlay
        if overlay is not None and key in overlay:
            return overlay[key]
        return self.base[key]

    def __setitem__(self, key: str, value: str) -> None:
        self.base[key] = value

    def __delitem__(self, key: str) -> None:
        del self.base[key]

    def __iter__(self) -> Iterator[str]:
        overlay = self.overlay or {}
        yield from overlay
        yield from (key for key in self.base if key not in overlay)

    def __len__(self) -> int:
        return len(set(self.base) | set(self.overlay or {}))

    def copy(self) -> dict[str, str]:
        return dict(self)

    def __repr__(self) -> str:
        return f"environ({dict(self)!r})"


_INSTALL_LOCK = threading.Lock()
_GLOBAL_LOCK = threading.Lock()


@contextlib.contextmanager
def invocation_environments() -> Iterator[None]:
    """`os.environ` answers per thread while the block runs (see the module)."""
    with _INSTALL_LOCK:
        installed = isinstance(os.environ, _ThreadEnviron)
        if not installed:
            # Replacing the mapping on purpose (B003): the process environment stays as it is.
            os.environ = _ThreadEnviron(os.environ)  # type: ignore[assignment]  # noqa: B003
    try:
        yield
    finally:
        if not installed:
            with _INSTALL_LOCK:
                environ: Any = os.environ
                os.environ = environ.base  # noqa: B003


@contextlib.contextmanager
def function_environment(variables: Mapping[str, str]) -> Iterator[None]:
    """`variables` over the environment while the block runs: for this thread alone under
    `invocation_environments()`, else in the process environment (serialised across threads)."""
    environ: Any = os.environ
    if isinstance(environ, _ThreadEnviron):
        previous = environ.overlay
        environ.overlay = {**(previous or {}), **variables}
        try:
            yield
        finally:
            environ.overlay = previous
        return
    with _GLOBAL_LOCK:
        saved = {name: os.environ.get(name) for name in variables}
        os.environ.update(variables)
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
