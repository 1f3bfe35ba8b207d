from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class PaymentCaptured(_message.Message):
    __slots__ = ("event_id", "payment_id", "order_id", "customer_id", "amount_cents")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    PAYMENT_ID_FIELD_NUMBER: _ClassVar[int]
    ORDER_ID_FIELD_NUMBER: _ClassVar[int]
    CUSTOMER_ID_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_CENTS_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    payment_id: str
    order_id: str
    customer_id: str
    amount_cents: int
    def __init__(self, event_id: _Optional[str] = ..., payment_id: _Optional[str] = ..., order_id: _Optional[str] = ..., customer_id: _Optional[str] = ..., amount_cents: _Optional[int] = ...) -> None: ...
