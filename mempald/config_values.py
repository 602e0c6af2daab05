"""Setting values as the config file or the environment gives them, made into their declared types (pure)."""

from __future__ import annotations

import os
from typing import Any


def coerce(key: str, value: Any, typ: Any) -> Any:
    """``value`` as a ``typ`` (bool, int, float, str, or a tuple of strings; from the environment, a string:
    "true"/"off", a number, a list separated by ``os.pathsep``); ValueError naming ``key`` when it is not one."""
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            return value.lower() in ("1", "true", "yes", "on")
        raise ValueError(f"{key}: expected true or false, got {value!r}")
    if typ is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                pass
        raise ValueError(f"{key}: expected an integer, got {value!r}")
    if typ is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise ValueError(f"{key}: expected a number, got {value!r}")
    if typ is str:
        if isinstance(value, str):
            return value
        raise ValueError(f"{key}: expected a string, got {value!r}")
    if typ == tuple[str, ...]:  # a list of strings (from the environment: separated by os.pathsep)
        items = value.split(os.pathsep) if isinstance(value, str) else value
        if isinstance(items, list | tuple) and all(isinstance(v, str) for v in items):
            return tuple(v for v in items if v.strip())
        raise ValueError(f"{key}: expected a list of strings, got {value!r}")
    raise ValueError(f"{key}: unsupported setting type")
