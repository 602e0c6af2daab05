"""A method declared to take long (an import of 100k drawers takes minutes) is not cut off by the daemon's
general request timeout: the dispatcher allows the longer of the two."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from mempal.methods import METHODS
from mempald.rpc.dispatch import Args, Dispatcher

pytestmark = pytest.mark.anyio


async def _slow(_args: Args) -> Any:
    await anyio.sleep(0.5)
    return {"done": True}


async def _never(_args: Args) -> Any:
    raise AssertionError("not called")


async def test_a_long_method_outlives_the_request_timeout() -> None:
    assert METHODS["import_drawers"].timeout > 0.5
    dispatcher = Dispatcher({name: _never for name in METHODS} | {"import_drawers": _slow}, request_timeout=0.1)
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "import_drawers", "params": {"path": "/x.jsonl"}})
    reply = await dispatcher(line.encode())
    assert reply is not None
    assert json.loads(reply) == {"jsonrpc": "2.0", "id": 1, "result": {"done": True}}
