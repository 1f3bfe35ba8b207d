"""A stand-in for the Lambda context object handlers receive, with a deadline on a clock the
caller can replace."""

from __future__ import annotations

import time
from collections.abc import Callable

from lambda_inbox_tools.services.offline import ACCOUNT, REGION


class FakeLambdaContext:
    """The attributes and the method handlers and Powertools read from a Lambda context.

    `get_remaining_time_in_millis()` counts down from `remaining_millis` (the time left when
    the context is created) on `clock` (seconds; `time.monotonic` unless given), never below 0.
    Pass a fake clock to make time pass without waiting.
    """

    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    aws_request_id = "00000000-0000-0000-0000-000000000000"

    def __init__(
        self,
        remaining_millis: int = 300_000,
        *,
        function_name: str = "lambda-inbox-local",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.function_name = function_name
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function_name}"
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "2024/11/21/[$LATEST]00000000000000000000000000000000"
        self._clock = clock
        self._deadline = clock() + remaining_millis / 1000

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the invocation's deadline, as Lambda reports them."""
        return max(0, int((self._deadline - self._clock()) * 1000))
