"""Typed access to JSON-RPC request params (shared by every method module)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client.protocol import FORBIDDEN, INVALID_PARAMS, NOT_FOUND, RpcError
from mempald.search import parse_time
from mempald.store.base import Filters

if TYPE_CHECKING:
    from mempald.palace import Palace


class Params:
    """Typed access to request params; every problem is an INVALID_PARAMS error naming the field."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw

    def _get(self, name: str, typ: type | tuple[type, ...], required: bool, default: Any) -> Any:
        if name not in self.raw or self.raw[name] is None:
            if required:
                raise RpcError(INVALID_PARAMS, f"missing parameter {name!r}")
            return default
        value = self.raw[name]
        if isinstance(value, bool) and typ in (int, float, (int, float)):
            raise RpcError(INVALID_PARAMS, f"parameter {name!r} must be a number")
        if not isinstance(value, typ):
            tname = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
            raise RpcError(INVALID_PARAMS, f"parameter {name!r} must be {tname}, got {type(value).__name__}")
        return value

    def text(self, name: str, default: str | None = None, *, required: bool = False) -> Any:
        return self._get(name, str, required, default)

    def integer(self, name: str, default: int, *, lo: int = 0, hi: int = 10_000) -> int:
        value: int = self._get(name, int, False, default)
        if not lo <= value <= hi:
            raise RpcError(INVALID_PARAMS, f"parameter {name!r} must be between {lo} and {hi}")
        return value

    def number(self, name: str, default: float) -> float:
        return float(self._get(name, (int, float), False, default))

    def flag(self, name: str, default: bool = False) -> bool:
        value = self._get(name, (bool, str), False, default)
        if isinstance(value, str):
            if value.lower() not in ("true", "false", "yes", "no", "1", "0"):
                raise RpcError(INVALID_PARAMS, f"parameter {name!r} must be true or false")
            return value.lower() in ("true", "yes", "1")
        return bool(value)

    def texts(self, name: str) -> tuple[str, ...]:
        value = self._get(name, (str, list), False, None)
        if value is None:
            return ()
        if isinstance(value, str):
            return (value,) if value else ()
        if not all(isinstance(v, str) for v in value):
            raise RpcError(INVALID_PARAMS, f"parameter {name!r} must be a string or a list of strings")
        return tuple(value)

    def filters(self) -> Filters:
        return Filters(
            wing=self.texts("wing"), room=self.texts("room"), memory_type=self.texts("memory_type"),
            source_kind=self.texts("source_kind"), agent=self.texts("agent"), session_id=self.texts("session_id"),
            machine=self.texts("machine"),
            since=parse_time(self.raw.get("since"), "since"), until=parse_time(self.raw.get("until"), "until"),
        )


def checked_path(raw: str) -> Path:
    """An absolute, existing path, resolved (symlinks followed once, here, never later during a walk)."""
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise RpcError(INVALID_PARAMS, f"path must be absolute: {raw!r}")
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        raise RpcError(NOT_FOUND, f"no such file or directory: {raw}") from None
    except (OSError, RuntimeError) as exc:
        raise RpcError(INVALID_PARAMS, f"cannot resolve {raw}: {exc}") from None
    if not os.access(resolved, os.R_OK):
        raise RpcError(FORBIDDEN, f"{resolved} is not readable by the daemon's user")
    return resolved


# A socket method: the palace and its typed params in, a JSON-serialisable result out.
Handler = Callable[["Palace", Params], Awaitable[Any]]
