"""Expected failures of the daemon's own code, named for what went wrong, not for the wire.

Domain code raises these; ``mempald.rpc.errors`` is the one place that turns them (and the store's
``StoreError``) into JSON-RPC error codes. Anything else a handler raises is a bug: an internal error reply
and a logged traceback.
"""

from __future__ import annotations

from typing import Any


class MempalError(Exception):
    """Base of every expected failure; ``data`` is extra detail for the client (JSON-serialisable)."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class InvalidInput(MempalError):
    """The request names something impossible: a bad value, an empty text, a wrong combination."""


class NotFound(MempalError):
    """The path, drawer, source or triple named does not exist."""


class Forbidden(MempalError):
    """The request may not touch what it names (outside every watched source, not readable...)."""


class Busy(MempalError):
    """A lock was not free within its timeout; the message says how long it waited."""


class LimitExceeded(MempalError):
    """A size or count cap was hit (inbox full, message too long, too many clients)."""


class Unavailable(MempalError):
    """The store (or the disk under it) cannot do this right now; retrying later may work."""


class ModelMismatch(MempalError):
    """The store was filled by another embedding model: reindex, or set the model back."""
