"""Checking a request's parameters against its method's declaration (the daemon runs this on every request).

``validate`` returns every declared parameter by name, converted (times to epoch seconds, ``strs`` to tuples,
flags to booleans) and with its default where it was left out; anything wrong is a ``ParamError`` whose message
names the parameter. Strings must be valid Unicode (a lone surrogate cannot be stored or sent back), names and
paths may not hold NUL, numbers must be finite (an integer at most 2**53 in size: JSON integers have no
limit, and one past a float's range once ended the request without its id). Unknown parameters are
refused, listing the known ones.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from mempal.methods.spec import Method, Param

MAX_NAME = 1024  # a name (wing, room, agent...) or a path, in characters
MAX_LIST = 10_000  # items in a list parameter
MAX_NUMBER = 2**53  # the largest integer a number parameter takes (a float holds every integer up to it)
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


_EMPTY: dict[str, Any] = {"strs": (), "paths": (), "ids": (), "bool": False}  # left out, no default given


class ParamError(ValueError):
    """A parameter is missing, of the wrong type or out of range; the message names it."""


def parse_time(value: Any, name: str, now: float | None = None) -> float | None:
    """ISO date/datetime, epoch seconds, or an age like ``7d``, ``12h``, ``30m`` -> epoch seconds."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not _finite(value):
            raise ParamError(f"{name}: must be a finite number of epoch seconds")
        return float(value)
    if not isinstance(value, str):
        raise ParamError(f"{name}: expected a date string or epoch seconds")
    v = value.strip()
    if len(v) > 1 and v[-1] in _UNITS and v[:-1].isdigit() and len(v) < 12:
        return (time.time() if now is None else now) - int(v[:-1]) * _UNITS[v[-1]]
    try:
        dt = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise ParamError(f"{name}: {value!r} is not an ISO date, epoch seconds or an age like 7d") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def _text(name: str, value: Any, *, nul_ok: bool, limit: int | None) -> str:
    if not isinstance(value, str):
        raise ParamError(f"parameter {name!r} must be a string, got {_tname(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ParamError(f"parameter {name!r} is not valid Unicode (a lone surrogate)") from None
    if not nul_ok and "\x00" in value:
        raise ParamError(f"parameter {name!r} must not contain NUL")
    if limit is not None and len(value) > limit:
        raise ParamError(f"parameter {name!r} is longer than {limit:,} characters")
    return value


def _finite(value: int | float) -> bool:
    """A float that is not NaN or infinite, or an int a float can hold (JSON integers have no size limit:
    ``math.isfinite(10**400)`` raises OverflowError)."""
    if isinstance(value, int):
        return -MAX_NUMBER <= value <= MAX_NUMBER
    return math.isfinite(value)


def _tname(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "object",
            type(None): "null"}.get(type(value), type(value).__name__)


def _number(p: Param, value: Any, integer: bool) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParamError(f"parameter {p.name!r} must be {'an integer' if integer else 'a number'}, "
                         f"got {_tname(value)}")
    if integer and not isinstance(value, int):
        raise ParamError(f"parameter {p.name!r} must be an integer, got {value!r}")
    if not _finite(value):
        raise ParamError(f"parameter {p.name!r} must be a finite number (at most {MAX_NUMBER:.3g} in size)")
    if (p.lo is not None and value < p.lo) or (p.hi is not None and value > p.hi):
        raise ParamError(f"parameter {p.name!r} must be between {_fmt(p.lo)} and {_fmt(p.hi)}")
    return value if integer else float(value)


def _fmt(x: float | None) -> str:
    if x is None:
        return "any"
    return str(int(x)) if float(x).is_integer() else str(x)


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
        return value.lower() in ("true", "yes", "1")
    raise ParamError(f"parameter {name!r} must be true or false")


def _strings(p: Param, value: Any, check: Any) -> tuple[Any, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ParamError(f"parameter {p.name!r} must be a string or a list of strings")
    if len(items) > MAX_LIST:
        raise ParamError(f"parameter {p.name!r} has more than {MAX_LIST:,} items")
    return tuple(check(p, v) for v in items if not (isinstance(v, str) and v == ""))


ID_PREFIX_MIN = 4  # characters of a drawer id's start that get, timeline, delete... take for the whole id
_ID_SHAPE = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"


def is_id_prefix(text: str) -> bool:
    """``text`` is the start of a drawer id (a UUID) of at least ``ID_PREFIX_MIN`` characters: the short ids
    ``wake-up`` and ``recall`` print; the daemon finds the one id it starts (or says which it could be)."""
    if not ID_PREFIX_MIN <= len(text) <= len(_ID_SHAPE):
        return False
    shape = _ID_SHAPE[: len(text)]
    return all(c == "-" if want == "-" else c in "0123456789abcdefABCDEF" for c, want in zip(text, shape, strict=True))


def _id(p: Param, value: Any) -> str:
    text = _text(p.name, value, nul_ok=False, limit=64)
    if _UUID.match(text) or (p.id_start and is_id_prefix(text)):
        return text.lower()
    if p.id_start:
        raise ParamError(f"parameter {p.name!r}: {text!r} is not a drawer id (a UUID, or its first "
                         f"{ID_PREFIX_MIN} or more characters)")
    hint = " (the start of an id finds its drawer with get; this takes whole ids)" if is_id_prefix(text) else ""
    raise ParamError(f"parameter {p.name!r}: {text!r} is not a drawer id (a UUID){hint}")


def _path(p: Param, value: Any) -> str:
    text = _text(p.name, value, nul_ok=False, limit=4096)
    if not text.strip():
        raise ParamError(f"parameter {p.name!r} is empty")
    return text


def _name(p: Param, value: Any) -> str:
    return _text(p.name, value, nul_ok=False, limit=p.max_len or MAX_NAME)


def convert(p: Param, value: Any, now: float | None = None) -> Any:
    """One parameter's value, checked and converted (never called with None)."""
    kind = p.kind
    if kind == "text":
        return _text(p.name, value, nul_ok=True, limit=p.max_len)
    if kind == "str":
        return _name(p, value)
    if kind == "enum":
        text = _name(p, value)
        if text not in p.choices:
            raise ParamError(f"parameter {p.name!r} must be one of {', '.join(p.choices)}, got {text!r}")
        return text
    if kind == "int":
        return _number(p, value, integer=True)
    if kind == "float":
        return _number(p, value, integer=False)
    if kind == "bool":
        return _flag(p.name, value)
    if kind == "strs":
        items = _strings(p, value, _name)
        bad = [v for v in items if p.choices and v not in p.choices]
        if bad:
            raise ParamError(f"parameter {p.name!r} must be one of {', '.join(p.choices)}, got {bad[0]!r}")
        return items
    if kind == "path":
        return _path(p, value)
    if kind == "paths":
        return _strings(p, value, _path)
    if kind == "time":
        return parse_time(value, p.name, now)
    if kind == "id":
        return _id(p, value)
    if kind == "ids":
        return _strings(p, value, _id)
    raise AssertionError(kind)


def validate(method: Method, raw: Mapping[str, Any], now: float | None = None) -> dict[str, Any]:
    """Every declared parameter of ``method``, checked, converted and defaulted (module docstring)."""
    by_name: dict[str, Param] = {}
    for p in method.params:
        by_name[p.name] = p
        for alias in p.aliases:
            by_name[alias] = p
    unknown = sorted(k for k in raw if k not in by_name)
    if unknown:
        known = ", ".join(p.name for p in method.params) or "none"
        raise ParamError(f"unknown parameter {unknown[0]!r} for {method.name} (known: {known})")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        p = by_name[key]
        if value is None or (p.name in out and key != p.name):
            continue  # an alias never overrides the parameter's own name
        out[p.name] = convert(p, value, now)
    for p in method.params:
        if out.get(p.name) in (None, ()) and p.required:
            raise ParamError(f"missing parameter {p.name!r}")
        if p.name not in out:
            out[p.name] = _EMPTY.get(p.kind) if p.default is None else p.default
    return out
