"""The callables a consumer is given, checked when it is built: a model that is not a type or a
callable, or a handler that cannot take the arguments it will be called with, is a
`ConfigurationError` naming what was given, not a dead letter or a retry on every message."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from lambda_inbox.errors import ConfigurationError

M = TypeVar("M")


def parser(model: type[M] | Callable[[Any], M], *, per_image: bool = False) -> Callable[[Any], M]:
    """How a payload is read into `model`: a pydantic model's `model_validate` (looked up on
    the model, so a model rebuilt later validates with its new rules), any callable itself.
    `per_image` (Powertools' `DynamoDBStreamEnvelope`): the model reads each image of a stream
    document, as that envelope does, and the payload is `{"NewImage": ..., "OldImage": ...}`."""
    validate = getattr(model, "model_validate", None)
    if callable(validate):
        read: Callable[[Any], M] = validate
    elif callable(model):
        read = model
        require_arity(model, 1, "model", "(document)")
    else:
        raise ConfigurationError(
            "model must be a pydantic model class or a callable taking the JSON document, "
            f"not {model!r} ({type(model).__name__})"
        )
    if not per_image:
        return read

    def each_image(document: Mapping[str, Any]) -> Any:
        return {
            side: None if document.get(side) is None else read(document[side])
            for side in ("NewImage", "OldImage")
        }

    return each_image


def require_arity(function: object, count: int, what: str, shape: str) -> None:
    """Raise `ConfigurationError` when `function` cannot be called with `count` positional
    arguments; callables whose signature Python cannot read (some builtins) pass."""
    import inspect

    try:
        signature = inspect.signature(function)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*[None] * count)
    except TypeError:
        name = getattr(function, "__qualname__", None) or repr(function)
        raise ConfigurationError(
            f"{what} must take {shape}; {name}{signature} cannot take {count} "
            f"positional argument{'s' if count > 1 else ''}"
        ) from None
