"""Real boto3 clients whose sending is replaced by `MemoryAws` (botocore's validation and the
`lambda_inbox_tools.testing.limits` hooks still run)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ParamValidationError
from botocore.hooks import first_non_none_response
from botocore.validate import ParamValidator

if TYPE_CHECKING:
    pass

#: DynamoDB: the largest item, in bytes (attribute names and values).


class _MemoryClient:
    """A boto3 client answered from memory: its operations, `meta` (events included) and
    `exceptions` are the real client's. An operation runs the client's `provide-client-params`
    and `before-parameter-build` hooks (the limits) and botocore's parameter validation, then is
    answered; the request serialization, endpoint resolution and signing an answer from memory
    never uses are skipped (so `before-call`, `before-send` and later hooks do not run). Waiters,
    paginators and anything else go to the real client, whose `before-call` hook answers from
    memory too."""

    def __init__(
        self,
        real: Any,
        respond: Callable[[str, str, dict[str, Any]], tuple[AWSResponse, dict[str, Any]]],
    ) -> None:
        self._real = real
        self._respond = respond
        self.meta = real.meta
        self.exceptions = real.exceptions
        self._service_id = real.meta.service_model.service_id.hyphenize()
        self._validator = ParamValidator()

    def __getattr__(self, name: str) -> Any:
        operation = self.meta.method_to_api_mapping.get(name)
        if operation is None:
            return getattr(self._real, name)

        def call(**params: Any) -> dict[str, Any]:
            return self._call(str(operation), params)

        return call

    def _call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        model = self.meta.service_model.operation_model(operation)
        context: dict[str, Any] = {}
        events, event = self.meta.events, f"{self._service_id}.{operation}"
        responses = events.emit(
            f"provide-client-params.{event}", params=params, model=model, context=context
        )
        params = first_non_none_response(responses, default=params)
        events.emit(f"before-parameter-build.{event}", params=params, model=model, context=context)
        report = self._validator.validate(params, model.input_shape)
        if report.has_errors():
            raise ParamValidationError(report=report.generate_report())
        http, parsed = self._respond(self._service_id, operation, params)
        if http.status_code >= 300:
            error_class = self.exceptions.from_code(parsed["Error"]["Code"])
            raise error_class(parsed, operation)
        return parsed


def _http(status: int) -> AWSResponse:
    return AWSResponse("https://memory.invalid/", status, HTTPHeaders(), None)


def _metadata(status: int) -> dict[str, Any]:
    return {"RequestId": str(uuid.uuid4()), "HTTPStatusCode": status, "HTTPHeaders": {}}
