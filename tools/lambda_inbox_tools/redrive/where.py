"""`--where ATTR=VALUE`: the redrive's filter on a message attribute's string value.

Filters compare message attributes only (string and number types; binary attributes never
match), all of them must match; system attributes are not looked at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef


@dataclass(frozen=True)
class Where:
    """`ATTR=VALUE`: the message attribute ATTR has the string value VALUE."""

    attribute: str
    value: str

    @classmethod
    def parse(cls, text: str) -> Where:
        attribute, sep, value = text.partition("=")
        if not sep or not attribute.strip():
            raise ValueError(
                f"--where {text!r}: expected ATTR=VALUE, e.g. --where inbox-error-code=invalid_payload"
            )
        return cls(attribute.strip(), value)

    def matches(self, message: MessageTypeDef) -> bool:
        found = message.get("MessageAttributes", {}).get(self.attribute)
        return found is not None and found.get("StringValue") == self.value
