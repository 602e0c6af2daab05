"""Sans-io JSON-RPC 2.0 over newline-delimited JSON, shared by the daemon and every client.

One JSON object per line. ``decode_request`` turns a line into a typed request or a typed error reply;
``encode_*`` turn replies into lines. The connection handlers only move bytes.

Error codes (stable; documented in the README):

====== ===================== ===============================================================
code   name                  meaning
====== ===================== ===============================================================
-32700 PARSE_ERROR           the line is not valid JSON (or not UTF-8)
-32600 INVALID_REQUEST       not a JSON-RPC 2.0 request object, or the line is over the limit
-32601 METHOD_NOT_FOUND      unknown method
-32602 INVALID_PARAMS        missing or wrongly typed parameters
-32603 INTERNAL_ERROR        the handler crashed (the daemon logged the traceback)
-32000 BUSY                  a per-source lock was not free within its timeout
-32001 NOT_FOUND             the thing named does not exist (path, drawer, triple)
-32002 STORE_UNAVAILABLE     the store cannot be reached or written right now
-32003 MODEL_MISMATCH        the store was filled by another embedding model: run reindex
-32004 LIMIT_EXCEEDED        a size or count cap was hit (inbox full, message too long)
-32005 FORBIDDEN             path outside what the request may touch, or peer not allowed
-32006 SHUTTING_DOWN         the daemon is stopping and takes no new work
====== ===================== ===============================================================
"""

from __future__ import annotations

from mempal import wirejson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
BUSY = -32000
NOT_FOUND = -32001
STORE_UNAVAILABLE = -32002
MODEL_MISMATCH = -32003
LIMIT_EXCEEDED = -32004
FORBIDDEN = -32005
SHUTTING_DOWN = -32006

DEFAULT_MAX_LINE = 1024 * 1024

JsonId = int | str | None


class Record:
    """A tiny immutable record (no ``dataclasses`` or ``typing.NamedTuple``: importing them costs hooks ms at
    every start). Subclasses name their fields in ``__slots__`` and set them in ``__init__``."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, k) for k in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Request(Record):
    __slots__ = ("id", "method", "params")

    def __init__(self, id: JsonId, method: str, params: dict[str, Any]) -> None:
        self.id = id
        self.method = method
        self.params = params

    @property
    def is_notification(self) -> bool:
        return self.id is None


class ErrorReply(Record):
    __slots__ = ("code", "data", "id", "message")

    def __init__(self, id: JsonId, code: int, message: str, data: Any = None) -> None:
        self.id = id
        self.code = code
        self.message = message
        self.data = data

    def encode(self) -> bytes:
        return encode_error(self.id, self.code, self.message, self.data)


class Response(Record):
    __slots__ = ("error", "id", "result")

    def __init__(self, id: JsonId, result: Any = None, error: ErrorReply | None = None) -> None:
        self.id = id
        self.result = result
        self.error = error


class RpcError(Exception):
    """Raised by a handler (or by the client for an error reply) with a stable code."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def _dumps(obj: Any) -> bytes:
    text = wirejson.dumps(obj, ensure_ascii=False)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # A lone surrogate (an id or a text cut inside an emoji) has no UTF-8 form: JSON's \u escapes carry it.
        return wirejson.dumps(obj, ensure_ascii=True).encode("ascii") + b"\n"


def encode_request(req_id: JsonId, method: str, params: dict[str, Any] | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if req_id is not None:
        msg["id"] = req_id
    return _dumps(msg)


def encode_result(req_id: JsonId, result: Any) -> bytes:
    return _dumps({"jsonrpc": "2.0", "id": req_id, "result": result})


def encode_error(req_id: JsonId, code: int, message: str, data: Any = None) -> bytes:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return _dumps({"jsonrpc": "2.0", "id": req_id, "error": err})


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, (int, str)) and not isinstance(value, bool))


def decode_request(line: bytes) -> Request | ErrorReply:
    """Decode one line (without or with its trailing newline) into a request or an error reply."""
    try:
        obj = wirejson.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return ErrorReply(None, PARSE_ERROR, "parse error: the line is not valid UTF-8 JSON")
    if not isinstance(obj, dict):
        return ErrorReply(None, INVALID_REQUEST, "invalid request: expected a JSON object")
    req_id = obj.get("id")
    if not _valid_id(req_id):
        return ErrorReply(None, INVALID_REQUEST, "invalid request: id must be a string, integer or null")
    if obj.get("jsonrpc") != "2.0":
        return ErrorReply(req_id, INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"')
    method = obj.get("method")
    if not isinstance(method, str) or not method:
        return ErrorReply(req_id, INVALID_REQUEST, 'invalid request: "method" must be a non-empty string')
    params = obj.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return ErrorReply(req_id, INVALID_PARAMS, "invalid params: params must be an object")
    return Request(req_id, method, params)


def decode_response(line: bytes) -> Response:
    """Decode a reply line; raises ValueError (only) when it is not a JSON-RPC response."""
    try:
        return _decode_response(line)
    except (RecursionError, TypeError, OverflowError) as exc:  # deep nesting, "code": null, "code": 1e999
        raise ValueError(f"not a JSON-RPC 2.0 response: {type(exc).__name__}") from None


def _decode_response(line: bytes) -> Response:
    obj = wirejson.loads(line.decode("utf-8"))
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
        raise ValueError("not a JSON-RPC 2.0 response")
    req_id = obj.get("id")
    err = obj.get("error")
    if isinstance(err, dict):
        return Response(
            req_id,
            error=ErrorReply(req_id, int(err.get("code", INTERNAL_ERROR)), str(err.get("message", "")),
                             err.get("data")),
        )
    if "result" not in obj:
        raise ValueError("response has neither result nor error")
    return Response(req_id, result=obj["result"])
