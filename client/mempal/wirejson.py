"""JSON for the socket and the hooks without importing ``json`` (stdlib only).

``import json`` brings in ``re`` and, through it, ``enum`` and ``functools``: about 20 ms of a hook process's
start on the two-core machines this runs on, a quarter of the prompt hook's 80 ms budget. The work in ``json``
is done by its C accelerator ``_json`` anyway; ``loads`` and ``dumps`` here call that directly and give what
``json.loads(text)`` and ``json.dumps(obj, ensure_ascii=..., separators=(",", ":"))`` give (a unit test compares
them on many values), including their errors (``json.JSONDecodeError``, a ValueError; ``TypeError`` for what
JSON cannot hold; ``RecursionError`` for deep nesting). Where ``_json`` is missing or its interface differs (a
Python other than CPython), ``json`` itself is used.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_WS = " \t\n\r"

try:
    from _json import encode_basestring as _quote
    from _json import encode_basestring_ascii as _quote_ascii
    from _json import make_encoder as _make_encoder
    from _json import make_scanner as _make_scanner
except ImportError:  # pragma: no cover - CPython always has it
    _make_scanner = None  # type: ignore[assignment,misc]


class _Decoding:
    """What ``_json.make_scanner`` reads from a ``json.JSONDecoder``: its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # "NaN", "Infinity", "-Infinity": float() gives what json.loads gives


def _not_serializable(obj: Any) -> Any:
    raise TypeError(f"Object of type {obj.__class__.__name__} is not JSON serializable")


def _c_encoder(ensure_ascii: bool) -> Any:
    return _make_encoder({}, _not_serializable, _quote_ascii if ensure_ascii else _quote, None, ":", ",",
                         False, False, True)


try:
    _scan: Any = _make_scanner(_Decoding()) if _make_scanner is not None else None  # type: ignore[arg-type]
    if _scan is not None:
        _c_encoder(True)({"a": [1, 2.5, None, True, "é"]}, 0)
except Exception:  # pragma: no cover - another _json interface: use json
    _scan = None


def _error(message: str, text: str, pos: int) -> Exception:
    from json import JSONDecodeError  # only on an error (the C scanner imports it then too)

    return JSONDecodeError(message, text, pos)


def loads(text: str) -> Any:
    """``json.loads(text)`` for a str."""
    if _scan is None:  # pragma: no cover
        import json

        return json.loads(text)
    if not isinstance(text, str):
        raise TypeError(f"the JSON object must be str, not {text.__class__.__name__}")
    if text.startswith("\ufeff"):
        raise _error("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    start = len(text) - len(text.lstrip(_WS))
    try:
        obj, end = _scan(text, start)
    except StopIteration as err:
        raise _error("Expecting value", text, err.value) from None
    if end != len(text) and text[end:].strip(_WS):
        raise _error("Extra data", text, len(text) - len(text[end:].lstrip(_WS)))
    return obj


def dumps(obj: Any, *, ensure_ascii: bool = True) -> str:
    """``json.dumps(obj, ensure_ascii=ensure_ascii, separators=(",", ":"))``."""
    if _scan is None:  # pragma: no cover
        import json

        return json.dumps(obj, ensure_ascii=ensure_ascii, separators=(",", ":"))
    if isinstance(obj, str):
        return _quote_ascii(obj) if ensure_ascii else _quote(obj)
    return "".join(_c_encoder(ensure_ascii)(obj, 0))
