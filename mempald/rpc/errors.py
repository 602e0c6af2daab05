"""The one place where failures become JSON-RPC error codes (``mempal.protocol`` documents the codes)."""

from __future__ import annotations

from typing import Any

from mempal.methods.validate import ParamError
from mempal.protocol import (
    BUSY,
    FORBIDDEN,
    INVALID_PARAMS,
    LIMIT_EXCEEDED,
    MODEL_MISMATCH,
    NOT_FOUND,
    STORE_UNAVAILABLE,
    RpcError,
)
from mempald.errors import (
    Busy,
    Forbidden,
    InvalidInput,
    LimitExceeded,
    MempalError,
    ModelMismatch,
    NotFound,
    Unavailable,
)
from mempald.features.kg import KGError
from mempald.features.pack.result import PackError
from mempald.store.base import StoreError, StoreLacks

_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (InvalidInput, INVALID_PARAMS),
    (NotFound, NOT_FOUND),
    (Forbidden, FORBIDDEN),
    (Busy, BUSY),
    (LimitExceeded, LIMIT_EXCEEDED),
    (Unavailable, STORE_UNAVAILABLE),
    (StoreLacks, STORE_UNAVAILABLE),  # the backend cannot do it at all (its name and the operation in data)
    (ModelMismatch, MODEL_MISMATCH),
    (ParamError, INVALID_PARAMS),
    (KGError, INVALID_PARAMS),
    (PackError, INVALID_PARAMS),
    (StoreError, STORE_UNAVAILABLE),
)
EXPECTED: tuple[type[BaseException], ...] = (MempalError, RpcError, *(cls for cls, _ in _CODES))


def wire_code(exc: BaseException) -> int | None:
    """The error code for an expected failure, None for anything else (a bug: internal error)."""
    if isinstance(exc, RpcError):
        return exc.code
    for cls, code in _CODES:
        if isinstance(exc, cls):
            return code
    return None


def to_wire(exc: BaseException) -> tuple[int, str, Any] | None:
    """(code, message, data) of an expected failure, or None."""
    code = wire_code(exc)
    if code is None:
        return None
    if isinstance(exc, (MempalError, RpcError)):
        return code, exc.message, exc.data
    return code, str(exc), None
