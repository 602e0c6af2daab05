"""From a request line to a reply line: decode, find the method, validate its parameters against the method
table (``mempal.methods``), run its handler, map failures to error codes (``mempald.rpc.errors``).

Handlers receive ``Args`` (the validated parameters of their own method) and return JSON-serialisable
results. The dispatcher refuses to exist unless it has a handler for exactly the declared methods.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

from mempal.methods import METHODS
from mempal.methods.spec import Method
from mempal.methods.validate import ParamError, validate
from mempal.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    SHUTTING_DOWN,
    ErrorReply,
    decode_request,
    encode_error,
    encode_result,
)
from mempald import logs
from mempald.normalize.wings import normal_wing
from mempald.rpc.errors import to_wire
from mempald.store.base import Filters

log = logs.get("rpc")


class Args:
    """The validated parameters of one request (every declared name is present; absent ones hold their
    default). Asking for an undeclared name is a bug and raises KeyError."""

    __slots__ = ("_values", "method")

    def __init__(self, method: Method, values: Mapping[str, Any]) -> None:
        self.method = method
        self._values = values

    def __getitem__(self, name: str) -> Any:
        if name not in self._values:
            raise KeyError(f"{self.method.name} declares no parameter {name!r}")
        return self._values[name]

    def get(self, name: str, fallback: Any) -> Any:
        """The value, or ``fallback`` when it was left out (for defaults that come from the settings)."""
        value = self[name]
        return fallback if value is None else value

    def filters(self) -> Filters:
        v = self._values
        return Filters(wing=v["wing"], room=v["room"], memory_type=v["memory_type"], source_kind=v["source_kind"],
                       agent=v["agent"], session_id=v["session_id"], machine=v["machine"], since=v["since"],
                       until=v["until"])


Handler = Callable[[Args], Awaitable[Any]]


def normal_wings(values: dict[str, Any]) -> dict[str, Any]:
    """Every wing a request names in its one form (``mempald.normalize.wings.normal_wing``): saved, watched and
    filtered on alike. A wing of only invisible characters is refused (it would otherwise narrow nothing)."""
    wing = values.get("wing")
    if not wing:
        return values
    names = (wing,) if isinstance(wing, str) else tuple(wing)
    normal = tuple(normal_wing(w) for w in names)
    if not all(normal):
        raise ParamError("parameter 'wing' holds no visible characters")
    values["wing"] = normal[0] if isinstance(wing, str) else normal
    return values


class Dispatcher:
    def __init__(self, handlers: Mapping[str, Handler], request_timeout: float) -> None:
        missing = sorted(set(METHODS) - set(handlers))
        extra = sorted(set(handlers) - set(METHODS))
        if missing or extra:
            raise AssertionError(f"handlers do not match the method table: missing {missing}, undeclared {extra}")
        self.handlers = dict(handlers)
        self.request_timeout = request_timeout
        self.accepting = True
        self.in_flight = 0
        self.requests = 0
        self._idle = anyio.Event()

    async def drain(self, limit_s: float) -> None:
        """Stop taking new work and wait (bounded) for in-flight requests to finish."""
        self.accepting = False
        with anyio.move_on_after(limit_s):
            while self.in_flight:
                self._idle = anyio.Event()
                await self._idle.wait()

    async def __call__(self, line: bytes) -> bytes | None:
        req = decode_request(line)
        if isinstance(req, ErrorReply):
            return req.encode()
        started = time.perf_counter()
        method = METHODS.get(req.method)
        outcome, reply = await self._reply(method, req.method, req.params, req.id)
        log.info("request", method=req.method[:100], outcome=outcome,
                 ms=round((time.perf_counter() - started) * 1000, 2))
        return None if req.is_notification else reply

    async def _reply(self, method: Method | None, name: str, params: dict[str, Any],
                     req_id: Any) -> tuple[str, bytes]:
        if method is None:
            return "unknown_method", encode_error(req_id, METHOD_NOT_FOUND, f"unknown method {name!r}",
                                                  {"methods": sorted(METHODS)})
        if not self.accepting:
            return "shutting_down", encode_error(req_id, SHUTTING_DOWN, "mempald is shutting down")
        try:
            args = Args(method, normal_wings(validate(method, params)))
        except ParamError as exc:
            return f"error:{INVALID_PARAMS}", encode_error(req_id, INVALID_PARAMS, str(exc))
        except (ArithmeticError, TypeError, ValueError, RecursionError) as exc:  # a value the checks did not foresee
            log.warning("params_unchecked", method=name, error=f"{type(exc).__name__}: {exc}"[:300])
            return f"error:{INVALID_PARAMS}", encode_error(req_id, INVALID_PARAMS,
                                                           f"invalid params for {name}: {type(exc).__name__}")
        self.in_flight += 1
        self.requests += 1
        limit = max(self.request_timeout, method.timeout)  # a method declared to take long (import, mine) may
        try:
            with anyio.fail_after(limit):
                result = await self.handlers[name](args)
            return "ok", encode_result(req_id, result)
        except TimeoutError:
            return "timeout", encode_error(req_id, INTERNAL_ERROR, f"{name} took longer than {limit:g}s")
        except Exception as exc:
            wire = to_wire(exc)
            if wire is not None:
                return f"error:{wire[0]}", encode_error(req_id, wire[0], wire[1], wire[2])
            log.exception("handler_crashed", method=name)
            return "crash", encode_error(req_id, INTERNAL_ERROR,
                                         f"internal error in {name}: {type(exc).__name__}: {exc}")
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self._idle.set()

