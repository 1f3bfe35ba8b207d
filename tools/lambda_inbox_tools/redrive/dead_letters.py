"""What the redrive reads of a dead letter: the attributes the consumers put on it and the start
of its body, as a dry run shows it (`Preview`)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef

# Attributes the consumers put on dead letters (docs/operations.md); the wire names, not imports,
# so the command line reads dead letters of any library version.
ERROR_CODE_ATTRIBUTE = "inbox-error-code"
MESSAGE_KEY_ATTRIBUTE = "inbox-message-key"
BODY_ENCODING_ATTRIBUTE = "inbox-body-encoding"
PREVIEW_CHARS = 80


def string_attribute(message: MessageTypeDef, name: str) -> str | None:
    value = message.get("MessageAttributes", {}).get(name)
    return value.get("StringValue") if value is not None else None


@dataclass(frozen=True)
class Preview:
    """What a dry run shows of a message it would move."""

    message_id: str
    error_code: str | None
    message_key: str | None
    body_preview: str

    @classmethod
    def of(cls, message: MessageTypeDef) -> Preview:
        return cls(
            message_id=message["MessageId"],
            error_code=string_attribute(message, ERROR_CODE_ATTRIBUTE),
            message_key=string_attribute(message, MESSAGE_KEY_ATTRIBUTE),
            body_preview=body_preview(message),
        )

    def document(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "inbox-error-code": self.error_code,
            "inbox-message-key": self.message_key,
            "body_preview": self.body_preview,
        }


def body_preview(message: MessageTypeDef, chars: int = PREVIEW_CHARS) -> str:
    """The start of the body on one line; a base64 body (`inbox-body-encoding`) is decoded."""
    body = message.get("Body", "")
    if string_attribute(message, BODY_ENCODING_ATTRIBUTE) == "base64":
        try:
            raw = base64.b64decode(body, validate=True)
        except ValueError:
            pass
        else:
            text = raw.decode("utf-8", errors="replace")
            body = "(base64) " + text
    flat = " ".join(body.split())
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"
