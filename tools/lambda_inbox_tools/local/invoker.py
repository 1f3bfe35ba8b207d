"""Invoke the template's functions: in this process, or through a Lambda Invoke endpoint.

In-process: the handler module (`CodeUri` + `Handler`) is imported, and every invocation runs,
with the function's own environment (the template's variables and those Lambda defines, such as
`AWS_LAMBDA_FUNCTION_NAME`: `environment`), and called with a context whose
`get_remaining_time_in_millis()` counts down from the template's `Timeout`. One invocation at a
time per function (reserved concurrency 1), so each function behaves like one warm execution
environment.

Through an endpoint (`--invoke-endpoint URL`, e.g. `sam local start-lambda`): the boto3 Lambda
client's `invoke` with `endpoint_url`, function name = logical ID; the environment is the
container's.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from .environment import function_environment, lambda_variables
from .template import ACCOUNT, REGION, FunctionSpec

_counter = itertools.count(1)


class InjectedCrash(BaseException):
    """Ends an in-process invocation the way a killed execution environment does: no response.
    A BaseException so that no `except Exception` in the handler can absorb it."""


@dataclass(frozen=True)
class Invocation:
    """What the event source mapping sees: the response, or an error (no response at all)."""

    response: Any
    error: str | None
    seconds: float

    @property
    def failed(self) -> bool:
        return self.error is not None


class Invoker(Protocol):
    def invoke(self, function: FunctionSpec, event: Mapping[str, Any]) -> Invocation: ...


class LocalContext:
    """The Lambda context: name, ARN, memory, request ID, and the time left before `Timeout`."""

    function_version = "$LATEST"

    def __init__(self, function: FunctionSpec) -> None:
        self.function_name = function.name
        self.memory_limit_in_mb = function.memory_size
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function.name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function.name}"
        self.log_stream_name = f"{time.strftime('%Y/%m/%d')}/[$LATEST]{uuid.uuid4().hex}"
        self._deadline = time.monotonic() + function.timeout

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


MODULE_PREFIX = "_lambda_fn_"


def _drop_modules_under(folder: Path) -> None:
    """Forget the modules imported from `folder` (a function's siblings of its handler), except
    the handler modules themselves, which keep their unique names."""
    prefix = os.path.join(folder, "")  # `folder` is resolved, and so is its place on sys.path
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file is None or name.startswith(MODULE_PREFIX):
            continue
        if os.path.abspath(file).startswith(prefix):
            del sys.modules[name]


def import_fresh(path: Path, *, label: str) -> ModuleType:
    """Import the file at `path` anew, as a uniquely named module.

    Handlers read their environment (table names, endpoints) at import time, so each load is a
    new import. As in Lambda, the file's folder is first on `sys.path` while it runs; the sibling
    modules it imports from there are dropped from `sys.modules` afterwards, so that the next
    load imports them anew too."""
    folder = path.parent.resolve()
    name = f"{MODULE_PREFIX}{label}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    _drop_modules_under(folder)
    sys.modules[name] = module  # pydantic and dataclasses look the module up by name
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(folder))
        _drop_modules_under(folder)
    return module


def load_handler_module(function: FunctionSpec) -> ModuleType:
    """Import the handler's module from the function's CodeUri with the function's environment
    set (`import_fresh`)."""
    module_file = function.handler.rsplit(".", 1)[0].replace(".", "/") + ".py"
    with function_environment(lambda_variables(function)):
        return import_fresh(function.code_uri / module_file, label=function.logical_id)


def boto_clients(module: ModuleType) -> list[Any]:
    """The botocore clients a handler module holds (module globals, and those of the library's
    objects among them: its consumer, its relay)."""
    found: list[Any] = []
    candidates = list(vars(module).values())
    for value in list(candidates):  # the library's objects (a consumer, a relay) hold theirs
        if type(value).__module__.startswith("lambda_inbox.") and hasattr(value, "__dict__"):
            candidates.extend(vars(value).values())
    for value in candidates:
        meta = getattr(value, "meta", None)
        if meta is not None and hasattr(meta, "events") and value not in found:
            found.append(value)
    return found


class InProcessInvoker:
    """Calls `handler(event, context)` of each function in this process."""

    def __init__(self, functions: list[FunctionSpec], *, serial: bool = False) -> None:
        """`serial`: one invocation at a time over all functions (moto loses writes under
        concurrent transactions); otherwise one at a time per function, as Lambda's warm
        container does."""
        self.modules: dict[str, ModuleType] = {}
        self._locks: dict[str, threading.Lock] = {}
        shared = threading.Lock()
        for function in functions:
            self.modules[function.logical_id] = load_handler_module(function)
            self._locks[function.logical_id] = shared if serial else threading.Lock()

    def handler(self, function: FunctionSpec) -> Callable[[Any, Any], Any]:
        attribute = function.handler.rsplit(".", 1)[1]
        handler: Callable[[Any, Any], Any] = getattr(self.modules[function.logical_id], attribute)
        return handler

    def invoke(self, function: FunctionSpec, event: Mapping[str, Any]) -> Invocation:
        handler = self.handler(function)
        with self._locks[function.logical_id]:
            started = time.monotonic()
            context = LocalContext(function)
            variables = lambda_variables(function, log_stream=context.log_stream_name)
            try:
                with function_environment(variables):
                    response = handler(dict(event), context)
            except InjectedCrash as crash:
                return Invocation(None, f"crashed: {crash}", time.monotonic() - started)
            except Exception as error:
                return Invocation(
                    None, f"{type(error).__name__}: {error}", time.monotonic() - started
                )
            # The response crosses a JSON boundary in Lambda.
            response = json.loads(json.dumps(response, default=str))
            return Invocation(response, None, time.monotonic() - started)


class EndpointInvoker:
    """Invokes through a Lambda Invoke API endpoint (function name = logical ID)."""

    def __init__(self, endpoint_url: str) -> None:
        import boto3
        from botocore.config import Config

        self.endpoint_url = endpoint_url
        self._client = boto3.client(
            "lambda",
            endpoint_url=endpoint_url,
            region_name=REGION,
            config=Config(read_timeout=900, connect_timeout=5, retries={"max_attempts": 0}),
        )

    def invoke(self, function: FunctionSpec, event: Mapping[str, Any]) -> Invocation:
        started = time.monotonic()
        try:
            answer = self._client.invoke(
                FunctionName=function.logical_id, Payload=json.dumps(event).encode()
            )
        except Exception as error:
            return Invocation(None, f"invoke failed: {error}", time.monotonic() - started)
        payload = answer["Payload"].read()
        seconds = time.monotonic() - started
        try:
            response = json.loads(payload) if payload else None
        except ValueError:
            response = payload.decode(errors="replace")
        if answer.get("FunctionError"):
            return Invocation(None, f"{answer['FunctionError']}: {response}", seconds)
        return Invocation(response, None, seconds)
